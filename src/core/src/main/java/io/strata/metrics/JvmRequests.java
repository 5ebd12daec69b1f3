// SPDX-License-Identifier: Apache-2.0
package io.strata.metrics;

import io.strata.objectstore.RequestListener;

/**
 * The S3 requests of this JVM in two halves: every Strata state store together, and Spark's
 * checkpoint files through Strata's checkpoint file manager (each store and query also counts
 * its own). What Strata's source in Spark's metrics system reports. Counts are HTTP attempts,
 * SDK retries included. Thread-safe; JVM-wide because Spark's metrics system has one registry
 * per JVM, and Spark creates checkpoint file managers itself and never hands them back (Hadoop's
 * FileSystem statistics work the same way).
 */
public final class JvmRequests {
  private static final RequestCounter STATE_STORES = new RequestCounter();
  private static final RequestCounter CHECKPOINT_FILES = new RequestCounter();

  private JvmRequests() { }

  /** The state stores' requests since the JVM started; take differences between snapshots. */
  public static RequestCounter.Counts stateStores() {
    return STATE_STORES.snapshot();
  }

  /** The checkpoint files' requests since the JVM started. */
  public static RequestCounter.Counts checkpointFiles() {
    return CHECKPOINT_FILES.snapshot();
  }

  /** A listener that reports each request to {@code own} and to the state stores' total. */
  public static RequestListener alsoStateStores(RequestListener own) {
    return r -> {
      own.onRequest(r);
      STATE_STORES.onRequest(r);
    };
  }

  /** Counts one request of Spark's checkpoint files. */
  public static void checkpointFile(RequestListener.Request r) {
    CHECKPOINT_FILES.onRequest(r);
  }
}
