// SPDX-License-Identifier: Apache-2.0
package io.strata.testkit;

import java.io.IOException;
import java.net.URI;
import java.nio.file.Path;
import java.util.Map;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * A real S3-compatible server that a test run starts on loopback as a child JVM: {@link
 * S3ProxyServer} (S3Proxy over jclouds' filesystem store) or {@link S3MockServer} (Adobe's
 * S3Mock, a Spring Boot application), two independent implementations of the S3 API, so that
 * the behaviour Strata relies on is checked against both.
 */
public interface S3TestServer extends AutoCloseable {
  /** The servers the behaviour tests run against, by {@link #name()}. */
  enum Kind {
    /** S3Proxy 4.1.0. */
    S3PROXY,
    /** Adobe S3Mock 4.11.0. */
    S3MOCK;

    /**
     * Starts a server of this kind.
     *
     * @param dataDir directory for the server's objects; created if missing
     * @throws IOException if the jar is missing or the server does not come up
     */
    public S3TestServer start(Path dataDir) throws IOException {
      return switch (this) {
        case S3PROXY -> S3ProxyServer.start(dataDir, Map.of());
        case S3MOCK -> S3MockServer.start(dataDir);
      };
    }
  }

  /** The kind, for test names and messages. */
  Kind kind();

  /** The endpoint, {@code http://127.0.0.1:<port>}. */
  URI endpoint();

  /** An access key id the server accepts. */
  String accessKey();

  /** The secret key that goes with {@link #accessKey()}. Test-only credentials. */
  String secretKey();

  /** Whether the server checks request signatures (a wrong secret key gets 403). */
  boolean verifiesSignatures();

  /** Whether the server stores server-side encryption headers (SSE-S3) rather than refusing them. */
  boolean supportsServerSideEncryption();

  /**
   * Whether create-only writes ({@code If-None-Match: *}) of one key by concurrent writers have
   * exactly one winner, as on S3. A server that checks the condition only sequentially passes
   * Strata's conditional-write probe but not a race.
   */
  boolean atomicCreateOnly();

  /**
   * Creates {@code bucket} if it does not exist.
   *
   * @throws java.io.UncheckedIOException if the bucket cannot be created
   */
  void createBucket(String bucket);

  /** A plain SDK client for this server (path-style, us-east-1); the caller closes it. */
  S3Client client();

  /** Stops the server's process. Idempotent. */
  @Override
  void close();
}
