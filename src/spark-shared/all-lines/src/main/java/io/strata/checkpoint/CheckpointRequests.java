// SPDX-License-Identifier: Apache-2.0
package io.strata.checkpoint;

import io.strata.metrics.JvmRequests;
import io.strata.metrics.RequestCounter;
import io.strata.objectstore.RequestListener;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * The S3 requests of Spark's checkpoint files in this JVM (all {@link
 * StrataCheckpointFileManager}s together; the state stores count theirs separately). Counts are
 * HTTP attempts, SDK retries included. Thread-safe.
 *
 * <p>JVM-wide because Spark creates checkpoint file managers itself (one per metadata log, per
 * schema file, ...) and never hands them back; Hadoop's FileSystem statistics work the same way.
 */
public final class CheckpointRequests {
  private static final List<RequestListener> LISTENERS = new CopyOnWriteArrayList<>();

  /** What every checkpoint object store reports to. */
  static final RequestListener LISTENER = r -> {
    JvmRequests.checkpointFile(r);
    for (RequestListener l : LISTENERS) {
      l.onRequest(r);
    }
  };

  private CheckpointRequests() { }

  /** Request counts by kind since the JVM started; take differences between snapshots. */
  public static RequestCounter.Counts snapshot() {
    return JvmRequests.checkpointFiles();
  }

  /**
   * Reports every later checkpoint request to {@code listener} (on the SDK's thread, so it must
   * be fast and thread-safe) until the returned handle is closed. For request logs in tests and
   * benchmarks.
   */
  public static AutoCloseable listen(RequestListener listener) {
    LISTENERS.add(listener);
    return () -> LISTENERS.remove(listener);
  }
}
