// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import io.strata.format.Manifest;
import io.strata.metrics.CommitStats;

/**
 * Result of {@link SyncedStore#commit()}.
 *
 * @param manifest the committed version's manifest
 * @param key the version object's key
 * @param stats what it cost
 * @param lostRace true if (checkpoint format 1) another attempt of the same version had already
 *     committed: the returned manifest is that attempt's, this attempt's writes were dropped
 *     and the local database holds (or will restore) the winner's state
 */
public record CommitResult(Manifest manifest, String key, CommitStats stats, boolean lostRace) {
  /** A commit that won (or, under format 2, did not race). */
  public CommitResult(Manifest manifest, String key, CommitStats stats) {
    this(manifest, key, stats, false);
  }
}
