// SPDX-License-Identifier: Apache-2.0
package io.strata.bench;

import io.strata.testkit.S3Relay;
import java.io.IOException;
import java.net.URI;
import java.util.List;

/**
 * The end-to-end benchmark's view of the tests' {@link S3Relay} in front of the S3-compatible
 * server: it adds a per-kind latency before each request is forwarded and records every S3
 * request a client sends through it. It is the one source of request counts for every provider in
 * the benchmark: Strata's AWS SDK client and Spark's Hadoop S3A client both point their endpoint at
 * {@link #endpoint()}. Requests are forwarded unchanged (the {@code Host} header included, so
 * SigV4 signatures stay valid). Kinds:
 *
 * <ul>
 *   <li>{@link S3Kind#PUT}: PutObject, UploadPart, CreateMultipartUpload and
 *       CompleteMultipartUpload (POST), CreateBucket;
 *   <li>{@link S3Kind#COPY}: a PUT with {@code x-amz-copy-source} (CopyObject, UploadPartCopy;
 *       an S3A rename is a COPY plus a DELETE);
 *   <li>{@link S3Kind#GET}: GET of an object (ranged or not);
 *   <li>{@link S3Kind#LIST}: GET of a bucket (ListObjects v1/v2, ListMultipartUploads);
 *   <li>{@link S3Kind#HEAD}: HeadObject, HeadBucket;
 *   <li>{@link S3Kind#DELETE}: DeleteObject, and DeleteObjects (a POST {@code ?delete}) as one.
 * </ul>
 *
 * <p>Each request is recorded with the wall-clock time its head arrived (ms since the epoch),
 * whether its key (for a listing: its {@code prefix}) lies under a checkpoint's {@code state/}
 * directory ({@link S3Request#state()}), and the payload bytes it uploads ({@code
 * x-amz-decoded-content-length} for the SDK's aws-chunked uploads, else {@code Content-Length}).
 */
final class S3Gateway implements AutoCloseable {
  private final S3Relay relay;

  /**
   * Starts forwarding from a free loopback port to {@code upstream}.
   *
   * @param upstream the S3-compatible server, {@code http://host:port}
   * @param latency latency added before each request is forwarded, by kind
   * @throws IOException if no loopback port can be bound
   */
  S3Gateway(URI upstream, LatencyProfile latency) throws IOException {
    this.relay = new S3Relay(upstream, null);
    relay.reuseUpstream(true); // one server connection per client connection, as before
    relay.latency(r -> latency.millis(classify(r).kind()));
  }

  /** The endpoint clients use, {@code http://127.0.0.1:<port>}. */
  URI endpoint() {
    return relay.endpoint();
  }

  /** A copy of every request recorded so far, in arrival order. */
  List<S3Request> requests() {
    return relay.seen().stream().map(s -> classify(s.request())).toList();
  }

  /** Stops accepting and closes every open connection. Idempotent. */
  @Override
  public void close() throws IOException {
    relay.close();
  }

  /** The benchmark's record of one request. */
  static S3Request classify(S3Relay.Request r) {
    boolean hasKey = !r.key().isEmpty();
    S3Kind kind = switch (r.method()) {
      case "HEAD" -> S3Kind.HEAD;
      case "GET" -> hasKey ? S3Kind.GET : S3Kind.LIST;
      case "PUT" -> r.copy() ? S3Kind.COPY : S3Kind.PUT;
      case "DELETE" -> S3Kind.DELETE;
      case "POST" -> r.hasParam("delete") ? S3Kind.DELETE : S3Kind.PUT;
      default -> S3Kind.GET;
    };
    String scopeKey = kind == S3Kind.LIST ? r.param("prefix") : r.key();
    long bytes = kind == S3Kind.PUT ? r.payloadBytes() : 0;
    return new S3Request(r.epochMillis(), kind, isStateKey(scopeKey), bytes, scopeKey);
  }

  /** Whether an object key (or listing prefix) is under a checkpoint's {@code state/} dir. */
  static boolean isStateKey(String key) {
    return key.startsWith("state/") || key.contains("/state/") || key.endsWith("/state");
  }

  /** For tests of the classifier: the request a raw head would be recorded as. */
  static S3Request classifyForTest(String head) {
    return classify(S3Relay.Request.parse(head));
  }
}
