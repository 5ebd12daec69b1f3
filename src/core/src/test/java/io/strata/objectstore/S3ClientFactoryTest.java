// SPDX-License-Identifier: Apache-2.0
package io.strata.objectstore;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.time.Duration;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.auth.credentials.AwsCredentials;
import software.amazon.awssdk.auth.credentials.AwsSessionCredentials;
import software.amazon.awssdk.core.client.config.ClientOverrideConfiguration;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3Client;

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

  @Test
  void staticCredentialsComeFromTheSettings() {
    AwsCredentials c = S3ClientFactory.credentialsProvider(plain()).orElseThrow()
        .resolveCredentials();
    assertEquals("AKID", c.accessKeyId());
    assertEquals("s3cr3t", c.secretAccessKey());

    S3Settings withToken = settings(Optional.of("AKID"), Optional.of("s3cr3t"),
        Optional.of("tok"), Duration.ZERO, Duration.ZERO, 1);
    AwsSessionCredentials session = assertInstanceOf(AwsSessionCredentials.class,
        S3ClientFactory.credentialsProvider(withToken).orElseThrow().resolveCredentials());
    assertEquals("tok", session.sessionToken());
  }

  @Test
  void noKeysLeavesTheSdkDefaultChain() {
    S3Settings none = settings(Optional.empty(), Optional.empty(), Optional.empty(),
        Duration.ZERO, Duration.ZERO, 1);
    assertTrue(S3ClientFactory.credentialsProvider(none).isEmpty());
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
    try (S3Client client = S3ClientFactory.create(plain())) {
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
    try (S3Client client = S3ClientFactory.create(aws)) {
      // the SDK wraps a cross-region client around the plain one
      assertTrue(client.getClass().getSimpleName().contains("CrossRegion"),
          client.getClass().getName());
    }
    assertTrue(!S3ClientFactory.crossRegionAccess(plain()));
    try (S3Client client = S3ClientFactory.create(plain())) {
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
