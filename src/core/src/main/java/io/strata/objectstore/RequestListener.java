// SPDX-License-Identifier: Apache-2.0
package io.strata.objectstore;

/**
 * Observes every HTTP request an S3 object store sends, including SDK retries. Used for metrics
 * (requests by kind) and by tests that assert the exact requests of a commit.
 *
 * <p>Called on the SDK's thread after each attempt; implementations must be thread-safe and fast.
 */
@FunctionalInterface
public interface RequestListener {
  /** A listener that ignores everything. */
  RequestListener NONE = r -> { };

  /** Called once per HTTP attempt with what was sent and the status received. */
  void onRequest(Request request);

  /**
   * One HTTP attempt.
   *
   * @param kind operation kind: PUT, GET, HEAD, LIST, DELETE, COPY, or OTHER
   * @param method HTTP method
   * @param bucket bucket name
   * @param key object key in the bucket (the full key, with the store's prefix); for a LIST
   *     the listed prefix; empty for other bucket-level requests
   * @param conditional true if the request carried {@code If-None-Match} or {@code If-Match}
   * @param statusCode HTTP status, or -1 if no response arrived (timeout, reset)
   * @param bytesSent request body bytes
   */
  record Request(
      String kind,
      String method,
      String bucket,
      String key,
      boolean conditional,
      int statusCode,
      long bytesSent) { }
}
