// SPDX-License-Identifier: Apache-2.0
package io.strata.objectstore;

import java.net.URI;
import java.time.Duration;
import java.util.Optional;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.AwsCredentials;
import software.amazon.awssdk.auth.credentials.AwsCredentialsProvider;
import software.amazon.awssdk.auth.credentials.AwsSessionCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.awscore.retry.AwsRetryStrategy;
import software.amazon.awssdk.core.checksums.RequestChecksumCalculation;
import software.amazon.awssdk.core.client.config.ClientOverrideConfiguration;
import software.amazon.awssdk.http.apache5.Apache5HttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.retries.api.RetryStrategy;
import software.amazon.awssdk.services.s3.LegacyMd5Plugin;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.S3ClientBuilder;

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
   * @throws IllegalArgumentException if {@code settings} has a non-positive max connection count
   *     or a negative timeout
   */
  public static S3Client create(S3Settings settings) {
    S3ClientBuilder builder = S3Client.builder();
    applyEndpoint(builder, settings);
    builder.region(region(settings));
    builder.crossRegionAccessEnabled(crossRegionAccess(settings));
    builder.forcePathStyle(settings.pathStyleAccess());
    builder.requestChecksumCalculation(requestChecksums(settings));
    legacyMd5(builder, settings);
    credentialsProvider(settings).ifPresent(builder::credentialsProvider);
    builder.overrideConfiguration(overrideConfiguration(settings));
    builder.httpClientBuilder(httpClient(settings));
    return builder.build();
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
   * Step: static keys (with a session token if given) from the settings; empty to let the SDK
   * build its default chain (environment, system properties, profile, web identity, container
   * and instance roles), which the client then owns and closes with itself.
   */
  static Optional<AwsCredentialsProvider> credentialsProvider(S3Settings settings) {
    if (settings.accessKeyId().isEmpty()) {
      return Optional.empty();
    }
    String id = settings.accessKeyId().get();
    String secret = settings.secretAccessKey().orElseThrow();
    AwsCredentials credentials = settings.sessionToken()
        .<AwsCredentials>map(token -> AwsSessionCredentials.create(id, secret, token))
        .orElseGet(() -> AwsBasicCredentials.create(id, secret));
    return Optional.of(StaticCredentialsProvider.create(credentials));
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
