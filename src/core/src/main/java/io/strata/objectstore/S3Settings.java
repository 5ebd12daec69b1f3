// SPDX-License-Identifier: Apache-2.0
package io.strata.objectstore;

import java.net.URI;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;

/**
 * How to reach S3 or an S3-compatible server. Resolved and validated once by the config layer;
 * the object store only consumes it.
 *
 * @param endpoint endpoint override (for example {@code http://127.0.0.1:9000} for MinIO or
 *     S3Proxy); empty for AWS S3's regional endpoint
 * @param region signing region, for example {@code us-east-1}
 * @param pathStyleAccess true to address buckets as {@code endpoint/bucket/key} (needed by most
 *     S3-compatible servers); false for virtual-hosted style
 * @param accessKeyId static access key id; empty to use the SDK's default credential chain
 * @param secretAccessKey static secret key; present exactly when {@code accessKeyId} is
 * @param sessionToken optional session token for temporary static credentials
 * @param maxAttempts SDK attempts per request including the first (&gt;= 1); retries back off
 *     exponentially with jitter on throttling, 5xx, timeouts and resets
 * @param apiCallTimeout upper bound for one API call including all its retries; zero or null
 *     for none (the SDK default); for a GET it covers receiving the response headers, not
 *     reading the returned stream
 * @param apiCallAttemptTimeout upper bound for one HTTP attempt; zero or null for none
 * @param maxConnections HTTP connection pool size per client (&gt; 0; checked when the client
 *     is built)
 * @param writes server-side encryption and storage class sent on every PUT
 * @param credentials where credentials come from ({@link S3Credentials#AUTO}: the static keys
 *     if set, else the SDK's default chain)
 * @param credentialsOrigin the settings that chose the credentials, for messages (a 403 names
 *     it): e.g. {@code static keys of fs.s3a.bucket.b.access.key}; never a key or secret. Empty
 *     for a description derived from the other components ({@link #credentialsOrigin()})
 */
public record S3Settings(
    Optional<URI> endpoint,
    String region,
    boolean pathStyleAccess,
    Optional<String> accessKeyId,
    Optional<String> secretAccessKey,
    Optional<String> sessionToken,
    int maxAttempts,
    Duration apiCallTimeout,
    Duration apiCallAttemptTimeout,
    int maxConnections,
    S3WriteSettings writes,
    S3Credentials credentials,
    String credentialsOrigin) {

  /** Settings without a recorded credentials origin (derived, see {@link #credentialsOrigin}). */
  public S3Settings(Optional<URI> endpoint, String region, boolean pathStyleAccess,
      Optional<String> accessKeyId, Optional<String> secretAccessKey,
      Optional<String> sessionToken, int maxAttempts, Duration apiCallTimeout,
      Duration apiCallAttemptTimeout, int maxConnections, S3WriteSettings writes,
      S3Credentials credentials) {
    this(endpoint, region, pathStyleAccess, accessKeyId, secretAccessKey, sessionToken,
        maxAttempts, apiCallTimeout, apiCallAttemptTimeout, maxConnections, writes, credentials,
        "");
  }

  /** Settings with {@link S3WriteSettings#DEFAULT} (no encryption header, no storage class). */
  public S3Settings(Optional<URI> endpoint, String region, boolean pathStyleAccess,
      Optional<String> accessKeyId, Optional<String> secretAccessKey,
      Optional<String> sessionToken, int maxAttempts, Duration apiCallTimeout,
      Duration apiCallAttemptTimeout, int maxConnections) {
    this(endpoint, region, pathStyleAccess, accessKeyId, secretAccessKey, sessionToken,
        maxAttempts, apiCallTimeout, apiCallAttemptTimeout, maxConnections,
        S3WriteSettings.DEFAULT, S3Credentials.AUTO);
  }

  /** Settings with {@link S3Credentials#AUTO}. */
  public S3Settings(Optional<URI> endpoint, String region, boolean pathStyleAccess,
      Optional<String> accessKeyId, Optional<String> secretAccessKey,
      Optional<String> sessionToken, int maxAttempts, Duration apiCallTimeout,
      Duration apiCallAttemptTimeout, int maxConnections, S3WriteSettings writes) {
    this(endpoint, region, pathStyleAccess, accessKeyId, secretAccessKey, sessionToken,
        maxAttempts, apiCallTimeout, apiCallAttemptTimeout, maxConnections, writes,
        S3Credentials.AUTO);
  }

  /** A copy with other write settings. */
  public S3Settings withWrites(S3WriteSettings w) {
    return new S3Settings(endpoint, region, pathStyleAccess, accessKeyId, secretAccessKey,
        sessionToken, maxAttempts, apiCallTimeout, apiCallAttemptTimeout, maxConnections, w,
        credentials, credentialsOrigin);
  }

  /** A copy with another credentials source. */
  public S3Settings withCredentials(S3Credentials c) {
    return new S3Settings(endpoint, region, pathStyleAccess, accessKeyId, secretAccessKey,
        sessionToken, maxAttempts, apiCallTimeout, apiCallAttemptTimeout, maxConnections, writes,
        c, credentialsOrigin);
  }

  /** A copy recording which settings chose the credentials ({@link #credentialsOrigin()}). */
  public S3Settings withCredentialsOrigin(String origin) {
    return new S3Settings(endpoint, region, pathStyleAccess, accessKeyId, secretAccessKey,
        sessionToken, maxAttempts, apiCallTimeout, apiCallAttemptTimeout, maxConnections, writes,
        credentials, origin);
  }

  /**
   * Where the credentials come from, for messages (never a key or secret): the origin recorded
   * by {@link #withCredentialsOrigin}, else the static keys, the providers listed, or the AWS
   * SDK's default chain.
   */
  @Override
  public String credentialsOrigin() {
    if (!credentialsOrigin.isEmpty()) {
      return credentialsOrigin;
    }
    if (credentials.providers().isEmpty()) {
      return accessKeyId.isPresent() ? "static keys" : DEFAULT_CHAIN;
    }
    return "the credentials providers " + credentials.providers().stream()
        .map(S3Credentials.Provider::id).toList();
  }

  /** {@link #credentialsOrigin()} when no key and no provider is set. */
  public static final String DEFAULT_CHAIN = "the AWS SDK's default credentials chain (no "
      + "access key set: environment variables, Java system properties, the profile file, the "
      + "container or instance role, web identity)";

  /**
   * Checks the components that have no usable default.
   *
   * @throws NullPointerException if a reference component other than the durations is null
   * @throws IllegalArgumentException if only one of the access key id and the secret key is set,
   *     or {@code maxAttempts} is below 1
   */
  public S3Settings {
    Objects.requireNonNull(endpoint, "endpoint");
    Objects.requireNonNull(region, "region");
    Objects.requireNonNull(accessKeyId, "accessKeyId");
    Objects.requireNonNull(secretAccessKey, "secretAccessKey");
    Objects.requireNonNull(sessionToken, "sessionToken");
    Objects.requireNonNull(writes, "writes");
    Objects.requireNonNull(credentials, "credentials");
    Objects.requireNonNull(credentialsOrigin, "credentialsOrigin");
    if (accessKeyId.isPresent() != secretAccessKey.isPresent()) {
      throw new IllegalArgumentException("access key id and secret access key must be set together");
    }
    if (maxAttempts < 1) {
      throw new IllegalArgumentException("maxAttempts must be >= 1, was " + maxAttempts);
    }
  }

  /** Never prints the secret key or session token. */
  @Override
  public String toString() {
    return "S3Settings[endpoint=" + endpoint.map(URI::toString).orElse("<aws>")
        + ", region=" + region + ", pathStyleAccess=" + pathStyleAccess
        + ", credentials=" + (accessKeyId.isPresent() ? "static keys, " : "") + credentials
        + ", maxAttempts=" + maxAttempts + ", apiCallTimeout=" + apiCallTimeout
        + ", apiCallAttemptTimeout=" + apiCallAttemptTimeout
        + ", maxConnections=" + maxConnections + ", " + writes + "]";
  }
}
