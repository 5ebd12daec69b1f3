// SPDX-License-Identifier: Apache-2.0
package io.strata.objectstore;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.nio.file.Path;
import java.time.Instant;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.auth.credentials.AnonymousCredentialsProvider;
import software.amazon.awssdk.auth.credentials.AwsCredentials;
import software.amazon.awssdk.auth.credentials.AwsCredentialsProvider;
import software.amazon.awssdk.auth.credentials.AwsCredentialsProviderChain;
import software.amazon.awssdk.auth.credentials.AwsSessionCredentials;
import software.amazon.awssdk.auth.credentials.ContainerCredentialsProvider;
import software.amazon.awssdk.auth.credentials.DefaultCredentialsProvider;
import software.amazon.awssdk.auth.credentials.EnvironmentVariableCredentialsProvider;
import software.amazon.awssdk.auth.credentials.InstanceProfileCredentialsProvider;
import software.amazon.awssdk.auth.credentials.ProfileCredentialsProvider;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.auth.credentials.SystemPropertyCredentialsProvider;
import software.amazon.awssdk.auth.credentials.WebIdentityTokenFileCredentialsProvider;
import software.amazon.awssdk.core.client.config.ClientOverrideConfiguration;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.utils.SdkAutoCloseable;

class S3ClientFactoryTest {

  static S3Settings settings(Optional<String> id, Optional<String> secret, Optional<String> token,
      Duration call, Duration attempt, int maxConnections) {
    return new S3Settings(Optional.of(URI.create("http://127.0.0.1:9000")), "eu-west-1", true,
        id, secret, token, 4, call, attempt, maxConnections);
  }

  static S3Settings plain() {
    return settings(Optional.of("AKID"), Optional.of("s3cr3t"), Optional.empty(),
        Duration.ofSeconds(30), Duration.ofSeconds(5), 16);
  }

  private static AwsCredentialsProvider provider(S3Settings s) {
    return S3ClientFactory.credentialsProvider(s, new ArrayList<>());
  }

  @Test
  void staticCredentialsComeFromTheSettings() {
    AwsCredentials c = provider(plain()).resolveCredentials();
    assertEquals("AKID", c.accessKeyId());
    assertEquals("s3cr3t", c.secretAccessKey());

    S3Settings withToken = settings(Optional.of("AKID"), Optional.of("s3cr3t"),
        Optional.of("tok"), Duration.ZERO, Duration.ZERO, 1);
    AwsSessionCredentials session = assertInstanceOf(AwsSessionCredentials.class,
        provider(withToken).resolveCredentials());
    assertEquals("tok", session.sessionToken());
  }

  @Test
  void noKeysTakesTheSdkDefaultChainWhichClosesWithTheClient() {
    S3Settings none = settings(Optional.empty(), Optional.empty(), Optional.empty(),
        Duration.ZERO, Duration.ZERO, 1);
    List<SdkAutoCloseable> toClose = new ArrayList<>();
    assertInstanceOf(DefaultCredentialsProvider.class,
        S3ClientFactory.credentialsProvider(none, toClose));
    assertEquals(1, toClose.size(), "the built default chain is closed with the client");
  }

  @Test
  void eachProviderMapsToTheSdkProviderOfTheSameSource() {
    S3Settings keys = plain();
    Map<S3Credentials.Provider, Class<?>> expected = Map.of(
        S3Credentials.Provider.STATIC, StaticCredentialsProvider.class,
        S3Credentials.Provider.ENVIRONMENT, EnvironmentVariableCredentialsProvider.class,
        S3Credentials.Provider.SYSTEM_PROPERTIES, SystemPropertyCredentialsProvider.class,
        S3Credentials.Provider.PROFILE, ProfileCredentialsProvider.class,
        S3Credentials.Provider.CONTAINER, ContainerCredentialsProvider.class,
        S3Credentials.Provider.INSTANCE_PROFILE, InstanceProfileCredentialsProvider.class,
        S3Credentials.Provider.WEB_IDENTITY, WebIdentityTokenFileCredentialsProvider.class,
        S3Credentials.Provider.DEFAULT, DefaultCredentialsProvider.class,
        S3Credentials.Provider.ANONYMOUS, AnonymousCredentialsProvider.class);
    expected.forEach((p, type) -> {
      S3Settings s = keys.withCredentials(new S3Credentials(List.of(p), Optional.empty(),
          Optional.empty(), Optional.empty()));
      assertInstanceOf(type, provider(s), p.id());
    });
    S3Settings chain = keys.withCredentials(new S3Credentials(
        List.of(S3Credentials.Provider.ENVIRONMENT, S3Credentials.Provider.STATIC),
        Optional.empty(), Optional.empty(), Optional.empty()));
    AwsCredentialsProvider p = provider(chain);
    assertInstanceOf(AwsCredentialsProviderChain.class, p);
    assertEquals("AKID", p.resolveCredentials().accessKeyId(),
        "no AWS_ACCESS_KEY_ID here, so the chain falls through to the static keys");
  }

  @Test
  void assumedRoleBuildsAnStsClientThatClosesWithTheClient() {
    S3Settings role = plain().withCredentials(new S3Credentials(
        List.of(S3Credentials.Provider.ASSUMED_ROLE), Optional.empty(), Optional.empty(),
        Optional.of(new S3Credentials.AssumedRole("arn:aws:iam::123456789012:role/r", "strata",
            Duration.ofHours(1), Optional.of(URI.create("http://127.0.0.1:1"))))));
    List<SdkAutoCloseable> toClose = new ArrayList<>();
    AwsCredentialsProvider p = S3ClientFactory.credentialsProvider(role, toClose);
    assertEquals(1, toClose.size());
    toClose.forEach(SdkAutoCloseable::close);
    assertTrue(!p.toString().contains("s3cr3t"), p.toString());
  }

  @Test
  void theProfileProviderRereadsARewrittenCredentialsFile(@TempDir Path tmp) throws Exception {
    Path file = tmp.resolve("credentials");
    io.strata.testkit.CredentialsFiles.write(file, "p", "KEY-1", "SECRET-1",
        Instant.now().minusSeconds(60));
    S3Settings s = plain().withCredentials(new S3Credentials(
        List.of(S3Credentials.Provider.PROFILE), Optional.of(file), Optional.of("p"),
        Optional.empty()));
    AwsCredentialsProvider p = provider(s);
    assertEquals("KEY-1", p.resolveCredentials().accessKeyId());
    io.strata.testkit.CredentialsFiles.write(file, "p", "KEY-2", "SECRET-2", Instant.now());
    // The SDK's supplier checks the file's modification time at most about once a second.
    long deadline = System.nanoTime() + 5_000_000_000L;
    while (!p.resolveCredentials().accessKeyId().equals("KEY-2")
        && System.nanoTime() < deadline) {
      Thread.sleep(50);
    }
    assertEquals("KEY-2", p.resolveCredentials().accessKeyId(), "re-read within 5 s");
    assertEquals("SECRET-2", p.resolveCredentials().secretAccessKey());
  }

  @Test
  void aFailedBuildClosesTheProvidersItBuilt() {
    // An assumed role (its own STS client) and then a provider that cannot be built.
    S3Settings s = plain().withCredentials(new S3Credentials(
        List.of(S3Credentials.Provider.ASSUMED_ROLE, S3Credentials.Provider.TEMPORARY),
        Optional.empty(), Optional.empty(),
        Optional.of(new S3Credentials.AssumedRole("arn:aws:iam::123456789012:role/r", "strata",
            Duration.ofHours(1), Optional.of(URI.create("http://127.0.0.1:1"))))));
    List<SdkAutoCloseable> toClose = new ArrayList<>();
    assertThrows(IllegalArgumentException.class,
        () -> S3ClientFactory.credentialsProvider(s, toClose));
    assertEquals(1, toClose.size(), "the assumed-role provider is handed back for closing");
    toClose.forEach(SdkAutoCloseable::close);
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> S3ClientFactory.create(s));
    assertTrue(e.getMessage().contains("session token"), e.getMessage());
  }

  @Test
  void temporaryWithoutASessionTokenIsRefused() {
    S3Settings s = plain().withCredentials(new S3Credentials(
        List.of(S3Credentials.Provider.TEMPORARY), Optional.empty(), Optional.empty(),
        Optional.empty()));
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> provider(s));
    assertTrue(e.getMessage().contains("session token"), e.getMessage());
  }

  @Test
  void retryStrategyHonoursMaxAttempts() {
    assertEquals(4, S3ClientFactory.retryStrategy(plain()).maxAttempts());
  }

  @Test
  void overrideConfigurationSetsTimeoutsAndTheListenerInterceptor() {
    ClientOverrideConfiguration c = S3ClientFactory.overrideConfiguration(plain());
    assertEquals(Optional.of(Duration.ofSeconds(30)), c.apiCallTimeout());
    assertEquals(Optional.of(Duration.ofSeconds(5)), c.apiCallAttemptTimeout());
    assertTrue(c.executionInterceptors().stream().anyMatch(ListenerInterceptor.class::isInstance));
    assertEquals(4, c.retryStrategy().orElseThrow().maxAttempts());

    ClientOverrideConfiguration unlimited = S3ClientFactory.overrideConfiguration(settings(
        Optional.empty(), Optional.empty(), Optional.empty(), Duration.ZERO, null, 1));
    assertTrue(unlimited.apiCallTimeout().isEmpty(), "zero keeps the SDK default");
    assertTrue(unlimited.apiCallAttemptTimeout().isEmpty(), "null keeps the SDK default");

    assertThrows(IllegalArgumentException.class, () -> S3ClientFactory.overrideConfiguration(
        settings(Optional.empty(), Optional.empty(), Optional.empty(), Duration.ofSeconds(-1),
            Duration.ZERO, 1)));
  }

  @Test
  void connectionPoolMustBePositive() {
    assertThrows(IllegalArgumentException.class, () -> S3ClientFactory.httpClient(
        settings(Optional.empty(), Optional.empty(), Optional.empty(), Duration.ZERO,
            Duration.ZERO, 0)));
  }

  @Test
  void regionEndpointAndPathStyleReachTheClient() {
    try (S3ClientFactory.OwnedClient owned = S3ClientFactory.create(plain())) {
      S3Client client = owned.client();
      assertEquals(Region.EU_WEST_1, client.serviceClientConfiguration().region());
      assertEquals(Optional.of(URI.create("http://127.0.0.1:9000")),
          client.serviceClientConfiguration().endpointOverride());
    }
  }

  @Test
  void describeEndpointNamesTheServerAndNeverTheKeys() {
    assertEquals("http://127.0.0.1:9000", S3ClientFactory.describeEndpoint(plain()));
    S3Settings aws = new S3Settings(Optional.empty(), "us-east-2", false, Optional.of("AKID"),
        Optional.of("s3cr3t"), Optional.empty(), 3, Duration.ZERO, Duration.ZERO, 8);
    assertEquals("s3.us-east-2.amazonaws.com", S3ClientFactory.describeEndpoint(aws));
    assertTrue(!plain().toString().contains("s3cr3t"), plain().toString());
  }

  @Test
  void awsClientsReachBucketsInAnyRegionAndS3CompatibleOnesDoNot() {
    S3Settings aws = new S3Settings(Optional.empty(), "us-east-1", false, Optional.of("AKID"),
        Optional.of("s3cr3t"), Optional.empty(), 3, Duration.ZERO, Duration.ZERO, 8);
    assertTrue(S3ClientFactory.crossRegionAccess(aws));
    try (S3ClientFactory.OwnedClient owned = S3ClientFactory.create(aws)) {
      S3Client client = owned.client();
      // the SDK wraps a cross-region client around the plain one
      assertTrue(client.getClass().getSimpleName().contains("CrossRegion"),
          client.getClass().getName());
    }
    assertTrue(!S3ClientFactory.crossRegionAccess(plain()));
    try (S3ClientFactory.OwnedClient owned = S3ClientFactory.create(plain())) {
      S3Client client = owned.client();
      assertTrue(!client.getClass().getSimpleName().contains("CrossRegion"),
          client.getClass().getName());
    }
  }

  @Test
  void operationKinds() {
    assertEquals("PUT", ListenerInterceptor.kind("PutObject"));
    assertEquals("PUT", ListenerInterceptor.kind("UploadPart"));
    assertEquals("GET", ListenerInterceptor.kind("GetObject"));
    assertEquals("HEAD", ListenerInterceptor.kind("HeadObject"));
    assertEquals("LIST", ListenerInterceptor.kind("ListObjectsV2"));
    assertEquals("DELETE", ListenerInterceptor.kind("DeleteObjects"));
    assertEquals("COPY", ListenerInterceptor.kind("CopyObject"));
    assertEquals("OTHER", ListenerInterceptor.kind("HeadBucket"));
    assertEquals("OTHER", ListenerInterceptor.kind(null));
  }
}
