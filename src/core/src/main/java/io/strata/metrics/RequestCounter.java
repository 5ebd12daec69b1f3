// SPDX-License-Identifier: Apache-2.0
package io.strata.metrics;

import io.strata.objectstore.RequestListener;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Counts the S3 requests of one store by kind, and the bytes they sent. Thread-safe; counters
 * only grow, so callers take differences between {@link #snapshot()}s.
 */
public final class RequestCounter implements RequestListener {
  private final AtomicLong puts = new AtomicLong();
  private final AtomicLong gets = new AtomicLong();
  private final AtomicLong heads = new AtomicLong();
  private final AtomicLong lists = new AtomicLong();
  private final AtomicLong deletes = new AtomicLong();
  private final AtomicLong others = new AtomicLong();
  private final AtomicLong failed = new AtomicLong();
  private final AtomicLong bytesSent = new AtomicLong();

  @Override
  public void onRequest(Request r) {
    switch (r.kind()) {
      case "PUT" -> puts.incrementAndGet();
      case "GET" -> gets.incrementAndGet();
      case "HEAD" -> heads.incrementAndGet();
      case "LIST" -> lists.incrementAndGet();
      case "DELETE" -> deletes.incrementAndGet();
      default -> others.incrementAndGet();
    }
    if (r.statusCode() < 0 || r.statusCode() >= 500) {
      failed.incrementAndGet();
    }
    if (r.bytesSent() > 0) {
      bytesSent.addAndGet(r.bytesSent());
    }
  }

  /** The counters now. */
  public Counts snapshot() {
    return new Counts(puts.get(), gets.get(), heads.get(), lists.get(), deletes.get(),
        others.get(), failed.get(), bytesSent.get());
  }

  /**
   * Request counts (each an HTTP attempt, retries included) and bytes sent.
   *
   * @param puts PUT requests (objects and parts)
   * @param gets GET requests
   * @param heads HEAD requests
   * @param lists LIST requests
   * @param deletes DELETE / DeleteObjects requests
   * @param others any other request
   * @param failed attempts answered with 5xx or no response (then retried or failed)
   * @param bytesSent request body bytes sent
   */
  public record Counts(long puts, long gets, long heads, long lists, long deletes, long others,
      long failed, long bytesSent) {
    /** All requests. */
    public long total() {
      return puts + gets + heads + lists + deletes + others;
    }

    /** This minus {@code earlier}, field by field. */
    public Counts minus(Counts earlier) {
      return new Counts(puts - earlier.puts, gets - earlier.gets, heads - earlier.heads,
          lists - earlier.lists, deletes - earlier.deletes, others - earlier.others,
          failed - earlier.failed, bytesSent - earlier.bytesSent);
    }
  }
}
