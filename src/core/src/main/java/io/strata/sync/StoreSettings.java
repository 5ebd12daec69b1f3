package io.strata.sync;

import io.strata.engine.SharedMemory;
import java.util.Objects;

/**
 * Tuning of one {@link SyncedStore}.
 *
 * @param snapshotInterval versions between base snapshots (&gt;= 1)
 * @param transferThreads parallel transfers for restore and snapshot upload (&gt;= 1)
 * @param spillThresholdBytes pending writes (approximate heap bytes) above which a batch
 *     spills them to a spill delta uploaded before commit; 0 disables spilling
 * @param attemptKeys true under Spark's checkpoint format 2: every attempt writes its own
 *     {@code v/<version>/<attempt>.svo} and the driver names the one to load; false under
 *     format 1: all attempts of a version race for {@code v/<version>.svo}, first writer wins
 * @param memory native memory limits of the local database (see {@link SharedMemory})
 * @param gc retention and garbage collection
 */
public record StoreSettings(int snapshotInterval, int transferThreads, long spillThresholdBytes,
    boolean attemptKeys, SharedMemory.Limits memory, GcSettings gc) {
  /** @throws NullPointerException if {@code memory} or {@code gc} is null */
  public StoreSettings {
    Objects.requireNonNull(memory, "memory");
    Objects.requireNonNull(gc, "gc");
  }
}
