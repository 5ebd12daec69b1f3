// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import io.strata.engine.SharedMemory;
import java.util.Objects;
import java.util.Optional;

/**
 * Tuning of one {@link SyncedStore}.
 *
 * @param snapshotInterval versions between base snapshots (&gt;= 1)
 * @param transferThreads parallel transfers for restore and snapshot upload (&gt;= 1)
 * @param spillThresholdBytes pending writes (approximate heap bytes) above which a batch
 *     spills them to a spill delta uploaded before commit; 0 disables spilling
 * @param attemptKeys true under Spark's checkpoint format 2: every attempt writes its own
 *     {@code v/<version>/<attempt>.svo} and the driver names the one to load; false under
 *     format 1: the attempts of one query run race for one key, first writer wins (see {@code
 *     run})
 * @param memory native memory limits of the local database (see {@link SharedMemory})
 * @param gc retention and garbage collection
 * @param run Spark's query run id ({@code sql.streaming.runId}); under checkpoint format 1 the
 *     run claims an epoch in the store when it first writes, and commits {@code
 *     v/<version>/g<generation>.svo}, the next generation after an older run's object of that
 *     version, which it supersedes (docs/format.md, "Query runs, epochs and generations").
 *     Empty: the layout-1 key {@code v/<version>.svo}, first writer wins across everything
 *     (callers outside Spark; ignored under format 2)
 * @param snapshotOnCommit true: the commit that reaches {@code snapshotInterval} versions since
 *     the last base queues a base snapshot on the JVM's commit-snapshot threads (its checkpoint
 *     and upload both run there, never on the commit path), so the chain stays bounded however
 *     rarely {@link SyncedStore#maintenance()} runs; false: only maintenance (and a long cold
 *     load) start one
 * @param stageDeltasInMemory true: a commit writes its SST delta to a memory-backed directory
 *     ({@code /dev/shm}) when the JVM has one and the delta is small ({@link DeltaStaging});
 *     false: always to the store's local directory
 */
public record StoreSettings(int snapshotInterval, int transferThreads, long spillThresholdBytes,
    boolean attemptKeys, SharedMemory.Limits memory, GcSettings gc, Optional<String> run,
    boolean snapshotOnCommit, boolean stageDeltasInMemory) {
  /** @throws NullPointerException if {@code memory}, {@code gc} or {@code run} is null */
  public StoreSettings {
    Objects.requireNonNull(memory, "memory");
    Objects.requireNonNull(gc, "gc");
    Objects.requireNonNull(run, "run");
  }

  /**
   * Settings without {@code snapshotOnCommit} (only maintenance starts base snapshots) and with
   * deltas staged on the local disk.
   */
  public StoreSettings(int snapshotInterval, int transferThreads, long spillThresholdBytes,
      boolean attemptKeys, SharedMemory.Limits memory, GcSettings gc, Optional<String> run) {
    this(snapshotInterval, transferThreads, spillThresholdBytes, attemptKeys, memory, gc, run,
        false, false);
  }

  /** Settings without a query run (see {@code run}) or {@code snapshotOnCommit}. */
  public StoreSettings(int snapshotInterval, int transferThreads, long spillThresholdBytes,
      boolean attemptKeys, SharedMemory.Limits memory, GcSettings gc) {
    this(snapshotInterval, transferThreads, spillThresholdBytes, attemptKeys, memory, gc,
        Optional.empty());
  }

  /** These settings for the query run {@code runId}. */
  public StoreSettings withRun(String runId) {
    return new StoreSettings(snapshotInterval, transferThreads, spillThresholdBytes, attemptKeys,
        memory, gc, Optional.of(runId), snapshotOnCommit, stageDeltasInMemory);
  }

  /** These settings with {@code snapshotOnCommit} set to {@code on}. */
  public StoreSettings withSnapshotOnCommit(boolean on) {
    return new StoreSettings(snapshotInterval, transferThreads, spillThresholdBytes, attemptKeys,
        memory, gc, run, on, stageDeltasInMemory);
  }

  /** These settings with {@code stageDeltasInMemory} set to {@code on}. */
  public StoreSettings withDeltasStagedInMemory(boolean on) {
    return new StoreSettings(snapshotInterval, transferThreads, spillThresholdBytes, attemptKeys,
        memory, gc, run, snapshotOnCommit, on);
  }

  /** True if versions are committed under a query run's epoch (format 1 with a run). */
  boolean epochKeys() {
    return !attemptKeys && run.isPresent();
  }
}
