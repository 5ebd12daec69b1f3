// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import io.strata.metrics.GcStats;
import io.strata.sync.SyncedStore;
import java.util.function.LongConsumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What one provider reports about its store, each fact once, and how far it has reported: the
 * garbage-collection round finished and the rounds failed since the previous commit (in the next
 * commit's metrics), and the newest base snapshot uploaded (to Spark's state store coordinator,
 * through the line's {@code reportSnapshotUploaded}; Spark 4.1+ needs it for snapshot-lag
 * detection). Thread-safe: the counters change under this object's monitor; the coordinator is
 * called outside it.
 */
final class StoreReports {
  private static final Logger LOG = LoggerFactory.getLogger(StoreReports.class);

  /** The provider, named in logs. */
  private final Object store;
  /** The line's report of an uploaded snapshot version; may throw. */
  private final LongConsumer snapshotUploaded;
  /** The last garbage-collection round reported in metrics. */
  private long reportedGcRound;
  private long reportedGcFailures;
  /** The newest snapshot version reported to Spark, -1 for none. */
  private long reportedSnapshotVersion = -1;

  /**
   * Nothing reported yet.
   *
   * @param store the provider (its {@code toString()} names it in logs)
   * @param snapshotUploaded reports an uploaded snapshot version to Spark (the provider's {@code
   *     reportSnapshotUploaded}); a RuntimeException from it is logged, not thrown
   */
  StoreReports(Object store, LongConsumer snapshotUploaded) {
    this.store = store;
    this.snapshotUploaded = snapshotUploaded;
  }

  /**
   * The garbage-collection round maintenance finished since the last call, once.
   *
   * @param core the provider's store, or null if it has none (not loaded yet, or closed)
   * @return its stats, or {@link GcStats#NONE} if none finished since (or {@code core} is null)
   */
  synchronized GcStats takeUnreportedGc(SyncedStore core) {
    if (core == null) {
      return GcStats.NONE;
    }
    GcStats last = core.lastGc();
    if (last.round() == reportedGcRound) {
      return GcStats.NONE;
    }
    reportedGcRound = last.round();
    return last;
  }

  /**
   * Garbage-collection rounds that failed since the last call, once (Strata also WARNs after
   * repeated failures).
   *
   * @param core the provider's store, or null if it has none
   * @return how many, at least 0 (0 if {@code core} is null)
   */
  synchronized long takeUnreportedGcFailures(SyncedStore core) {
    if (core == null) {
      return 0;
    }
    long failed = core.gcFailedRounds();
    long unreported = Math.max(0, failed - reportedGcFailures);
    reportedGcFailures = failed;
    return unreported;
  }

  /**
   * Reports {@code version} to Spark if it is newer than the last snapshot version reported;
   * -1 (none yet) is never reported. Never throws: a failed report is logged.
   *
   * @param version the newest base snapshot version uploaded, or -1
   */
  void snapshotIfNew(long version) {
    synchronized (this) {
      if (version <= reportedSnapshotVersion) {
        return;
      }
      reportedSnapshotVersion = version;
    }
    try {
      snapshotUploaded.accept(version);
    } catch (RuntimeException e) {
      LOG.warn("{}: reporting the snapshot of version {} to Spark failed", store, version, e);
    }
  }
}
