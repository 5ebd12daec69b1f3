// SPDX-License-Identifier: Apache-2.0
package io.strata.objectstore;

import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;
import software.amazon.awssdk.auth.credentials.AnonymousCredentialsProvider;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
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
import software.amazon.awssdk.awscore.retry.AwsRetryStrategy;
import software.amazon.awssdk.core.checksums.RequestChecksumCalculation;
import software.amazon.awssdk.core.client.config.ClientOverrideConfiguration;
import software.amazon.awssdk.http.apache5.Apache5HttpClient;
import software.amazon.awssdk.profiles.ProfileFile;
import software.amazon.awssdk.profiles.ProfileFileSupplier;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.retries.api.RetryStrategy;
import software.amazon.awssdk.services.s3.LegacyMd5Plugin;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.S3ClientBuilder;
import software.amazon.awssdk.services.sts.StsClient;
import software.amazon.awssdk.services.sts.StsClientBuilder;
import software.amazon.awssdk.services.sts.auth.StsAssumeRoleCredentialsProvider;
import software.amazon.awssdk.utils.SdkAutoCloseable;

/**
 * Builds the AWS SDK v2 {@link S3Client} for {@link S3Settings} as a short chain of small steps
 * (after Iceberg's {@code DefaultS3FileIOAwsClientFactory}): endpoint, region, path style,
 * credentials, retry strategy, timeouts, HTTP client, request listener. Each step is a small
 * method, testable on its own.
 *
 * <p>Request checksums follow {@link S3WriteSettings#payloadChecksums()}: by default only those
 * S3 requires ({@code WHEN_REQUIRED}; a PUT's body then goes as is, signed over http), since
 * every object Strata reads is verified against its manifest's XXHash64; on request a CRC32
 * trailer with aws-chunked encoding ({@code WHEN_SUPPORTED}, the SDK's default). Response
 * checksums keep the SDK's default.
 *
 * <p>Clients are expensive (a connection pool each): use {@link SharedS3Clients} rather than
 * calling {@link #create} per store.
 */
public final class S3ClientFactory {

  private S3ClientFactory() { }

  /**
   * Builds a new client. Does no network I/O. The caller owns and closes it.
   *
   * <p>Every HTTP attempt is reported to the {@link RequestListener} that a request carries
   * (package-private execution attribute, set by the object store); requests without one are
   * not reported.
   *
   * @return the client with the credentials providers that close with it
   * @throws IllegalArgumentException if {@code settings} has a non-positive max connection
   *     count, a negative timeout, or a credentials provider without what it needs
   */
  public static OwnedClient create(S3Settings settings) {
    List<SdkAutoCloseable> toClose = new ArrayList<>();
    try {
      S3ClientBuilder builder = S3Client.builder();
      applyEndpoint(builder, settings);
      builder.region(region(settings));
      builder.crossRegionAccessEnabled(crossRegionAccess(settings));
      builder.forcePathStyle(settings.pathStyleAccess());
      builder.requestChecksumCalculation(requestChecksums(settings));
      legacyMd5(builder, settings);
      builder.credentialsProvider(credentialsProvider(settings, toClose));
      builder.overrideConfiguration(overrideConfiguration(settings));
      builder.httpClientBuilder(FailFastHttpClient.around(httpClient(settings)));
      return new OwnedClient(builder.build(), List.copyOf(toClose));
    } catch (RuntimeException e) {
      // Nothing built so far outlives a failed build (an STS client has its own pool).
      toClose.forEach(SdkAutoCloseable::close);
      throw e;
    }
  }

  /**
   * A human-readable endpoint for messages, never with credentials: the override URI, or
   * {@code s3.<region>.amazonaws.com} for AWS.
   */
  public static String describeEndpoint(S3Settings settings) {
    return settings.endpoint().map(URI::toString)
        .orElse("s3." + settings.region() + ".amazonaws.com");
  }

  /** Step: the endpoint override, if any (S3-compatible servers, VPC endpoints). */
  static void applyEndpoint(S3ClientBuilder builder, S3Settings settings) {
    settings.endpoint().ifPresent(builder::endpointOverride);
  }

  /**
   * True if {@code region} is an AWS region this build's SDK knows ({@code Region.regions()}),
   * for example {@code eu-west-1}. Only meaningful for AWS itself: S3-compatible servers behind
   * an endpoint override accept any signing region.
   */
  public static boolean isKnownAwsRegion(String region) {
    return Region.regions().stream().anyMatch(r -> r.id().equals(region));
  }

  /** Step: when the SDK adds a checksum of a request body ({@link S3WriteSettings}). */
  static RequestChecksumCalculation requestChecksums(S3Settings settings) {
    return settings.writes().payloadChecksums() ? RequestChecksumCalculation.WHEN_SUPPORTED
        : RequestChecksumCalculation.WHEN_REQUIRED;
  }

  /**
   * Step: {@code Content-MD5} on the requests that require a checksum (DeleteObjects), as SDKs
   * before 2.30 sent it, if {@link S3WriteSettings#legacyMd5()}: some S3-compatible stores
   * reject a DeleteObjects without it, and garbage collection would then never delete.
   */
  static void legacyMd5(S3ClientBuilder builder, S3Settings settings) {
    if (settings.writes().legacyMd5()) {
      builder.addPlugin(LegacyMd5Plugin.create());
    }
  }

  /**
   * Step: the SDK's cross-region bucket access, for AWS itself (no endpoint override): a bucket
   * in another region than the signing region answers with a redirect, which the client follows
   * once and remembers, as S3A does when no region is set. Off for S3-compatible servers, which
   * have one region.
   */
  static boolean crossRegionAccess(S3Settings settings) {
    return settings.endpoint().isEmpty();
  }

  /** Step: the signing region. */
  static Region region(S3Settings settings) {
    return Region.of(settings.region());
  }

  /**
   * Step: the credentials provider for {@link S3Settings#credentials()}: one SDK provider per
   * listed {@link S3Credentials.Provider}, in a chain when there are several (the first that
   * yields credentials wins, and is reused). {@link S3Credentials#AUTO}: the static keys if set,
   * else the SDK's default chain.
   *
   * <p>The SDK client does not close a provider it is given, so every provider built here that
   * holds resources (refresh threads, the STS client) is added to {@code toClose}.
   *
   * @param toClose receives what must be closed with the client
   * @throws IllegalArgumentException if a static provider is listed without keys, or {@code
   *     temporary} without a session token
   */
  static AwsCredentialsProvider credentialsProvider(S3Settings settings,
      List<SdkAutoCloseable> toClose) {
    S3Credentials c = settings.credentials();
    List<S3Credentials.Provider> names = c.providers();
    if (names.isEmpty()) {
      names = List.of(settings.accessKeyId().isPresent() ? S3Credentials.Provider.STATIC
          : S3Credentials.Provider.DEFAULT);
    }
    List<AwsCredentialsProvider> providers = new ArrayList<>();
    for (S3Credentials.Provider p : names) {
      AwsCredentialsProvider provider = provider(p, settings);
      if (provider instanceof SdkAutoCloseable closeable) {
        toClose.add(closeable); // before the next provider can fail: the caller closes these
      }
      providers.add(provider);
    }
    if (providers.size() == 1) {
      return providers.get(0);
    }
    AwsCredentialsProviderChain chain = AwsCredentialsProviderChain.builder()
        .credentialsProviders(providers).reuseLastProviderEnabled(true).build();
    return chain;
  }

  /** One SDK provider; see {@link S3Credentials.Provider} for what each reads. */
  private static AwsCredentialsProvider provider(S3Credentials.Provider p, S3Settings settings) {
    S3Credentials c = settings.credentials();
    return switch (p) {
      case STATIC -> StaticCredentialsProvider.create(staticKeys(settings, false));
      case TEMPORARY -> StaticCredentialsProvider.create(staticKeys(settings, true));
      case ENVIRONMENT -> EnvironmentVariableCredentialsProvider.create();
      case SYSTEM_PROPERTIES -> SystemPropertyCredentialsProvider.create();
      case PROFILE -> {
        ProfileCredentialsProvider.Builder b = ProfileCredentialsProvider.builder()
            .profileFile(profileFiles(c));
        c.profileName().ifPresent(b::profileName);
        yield b.build();
      }
      case CONTAINER -> ContainerCredentialsProvider.builder().build();
      case INSTANCE_PROFILE -> InstanceProfileCredentialsProvider.builder()
          .profileFile(profileFiles(c)).build();
      case WEB_IDENTITY -> WebIdentityTokenFileCredentialsProvider.create();
      case ASSUMED_ROLE -> assumedRole(settings, c.assumedRole().orElseThrow());
      case DEFAULT -> {
        DefaultCredentialsProvider.Builder b = DefaultCredentialsProvider.builder()
            .profileFile(profileFiles(c));
        c.profileName().ifPresent(b::profileName);
        yield b.build();
      }
      case ANONYMOUS -> AnonymousCredentialsProvider.create();
    };
  }

  /**
   * The SDK's reloading profile-file supplier: {@code c.profileFile()} as a credentials file,
   * else the SDK's default credentials and config files; each is re-read when its modification
   * time changes.
   */
  static Supplier<ProfileFile> profileFiles(S3Credentials c) {
    return c.profileFile()
        .<Supplier<ProfileFile>>map(f -> ProfileFileSupplier.reloadWhenModified(f,
            ProfileFile.Type.CREDENTIALS))
        .orElseGet(ProfileFileSupplier::defaultSupplier);
  }

  private static AwsCredentials staticKeys(S3Settings settings, boolean sessionRequired) {
    if (settings.accessKeyId().isEmpty()) {
      throw new IllegalArgumentException("the static credentials provider needs an access key id "
          + "and a secret key");
    }
    String id = settings.accessKeyId().get();
    String secret = settings.secretAccessKey().orElseThrow();
    if (sessionRequired && settings.sessionToken().isEmpty()) {
      throw new IllegalArgumentException("the temporary credentials provider needs a session "
          + "token as well as an access key id and a secret key");
    }
    return settings.sessionToken()
        .<AwsCredentials>map(token -> AwsSessionCredentials.create(id, secret, token))
        .orElseGet(() -> AwsBasicCredentials.create(id, secret));
  }

  /**
   * STS AssumeRole, with the static keys if set, else the SDK's default chain, as the caller's
   * credentials; the returned provider closes its STS client with itself.
   */
  private static AwsCredentialsProvider assumedRole(S3Settings settings,
      S3Credentials.AssumedRole role) {
    AwsCredentialsProvider base = settings.accessKeyId().isPresent()
        ? StaticCredentialsProvider.create(staticKeys(settings, false))
        : DefaultCredentialsProvider.builder().profileFile(profileFiles(settings.credentials()))
            .build();
    StsClientBuilder sts = StsClient.builder()
        .region(region(settings))
        .credentialsProvider(base)
        .httpClientBuilder(Apache5HttpClient.builder());
    role.stsEndpoint().ifPresent(sts::endpointOverride);
    SdkAutoCloseable closeBase = base instanceof SdkAutoCloseable b ? b : () -> { };
    StsClient client;
    try {
      client = sts.build();
    } catch (RuntimeException e) {
      closeBase.close();
      throw e;
    }
    try {
      StsAssumeRoleCredentialsProvider provider = StsAssumeRoleCredentialsProvider.builder()
          .stsClient(client)
          .refreshRequest(r -> r.roleArn(role.roleArn()).roleSessionName(role.sessionName())
              .durationSeconds((int) role.sessionDuration().toSeconds()))
          .build();
      return new ClosingProvider(provider, List.of(provider, client, closeBase));
    } catch (RuntimeException e) {
      client.close();
      closeBase.close();
      throw e;
    }
  }

  /** A provider that closes other resources with itself. */
  private record ClosingProvider(AwsCredentialsProvider delegate, List<SdkAutoCloseable> owned)
      implements AwsCredentialsProvider, SdkAutoCloseable {
    @Override
    public AwsCredentials resolveCredentials() {
      return delegate.resolveCredentials();
    }

    @Override
    public void close() {
      owned.forEach(SdkAutoCloseable::close);
    }
  }

  /** A client and what closes with it: the credentials providers the SDK does not close. */
  public record OwnedClient(S3Client client, List<SdkAutoCloseable> resources)
      implements AutoCloseable {
    /** Closes the client, then the resources. */
    @Override
    public void close() {
      try {
        client.close();
      } finally {
        resources.forEach(SdkAutoCloseable::close);
      }
    }
  }

  /**
   * Step: the SDK's standard retry strategy (exponential backoff with jitter; retries
   * throttling such as 503 SlowDown, 5xx, timeouts and I/O errors) limited to {@link
   * S3Settings#maxAttempts()} attempts including the first.
   */
  static RetryStrategy retryStrategy(S3Settings settings) {
    return AwsRetryStrategy.standardRetryStrategy().toBuilder()
        .maxAttempts(settings.maxAttempts())
        .build();
  }

  /**
   * Step: retry strategy, call and attempt timeouts (a zero or absent duration keeps the SDK's
   * default: no limit), and the request-listener interceptor.
   */
  static ClientOverrideConfiguration overrideConfiguration(S3Settings settings) {
    ClientOverrideConfiguration.Builder b = ClientOverrideConfiguration.builder()
        .retryStrategy(retryStrategy(settings))
        .addExecutionInterceptor(new ListenerInterceptor());
    if (positive(settings.apiCallTimeout(), "apiCallTimeout")) {
      b.apiCallTimeout(settings.apiCallTimeout());
    }
    if (positive(settings.apiCallAttemptTimeout(), "apiCallAttemptTimeout")) {
      b.apiCallAttemptTimeout(settings.apiCallAttemptTimeout());
    }
    return b.build();
  }

  /**
   * Step: the Apache HttpClient 5 based sync client with a pool of {@code maxConnections}, and
   * without HttpClient's own {@code Expect: 100-continue} on every PUT.
   *
   * <p>Left on, HttpClient adds {@code Expect: 100-continue} to every request with a body, so
   * each commit's PUT of a few kilobytes first sends its head, waits a round trip for the
   * server's {@code 100 Continue}, and only then sends the body. The SDK's S3 client adds the
   * header itself where it pays (PutObject and UploadPart bodies of at least {@code
   * S3Configuration.expectContinueThresholdInBytes}, 1 MiB by default), and HttpClient honours a
   * header it finds; so base-snapshot parts still wait for the server's go-ahead and small PUTs
   * go in one flight.
   */
  static Apache5HttpClient.Builder httpClient(S3Settings settings) {
    if (settings.maxConnections() <= 0) {
      throw new IllegalArgumentException(
          "maxConnections must be > 0, was " + settings.maxConnections());
    }
    return Apache5HttpClient.builder().maxConnections(settings.maxConnections())
        .expectContinueEnabled(false);
  }

  private static boolean positive(Duration d, String name) {
    if (d == null || d.isZero()) {
      return false;
    }
    if (d.isNegative()) {
      throw new IllegalArgumentException(name + " must not be negative, was " + d);
    }
    return true;
  }
}
