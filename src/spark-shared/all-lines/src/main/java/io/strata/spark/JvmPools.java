// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import io.strata.sync.SharedPools;

/**
 * The one owner, per JVM (per class loader that loads Strata), of the thread pools that Strata's
 * stores share ({@link SharedPools}): every provider passes it to its store, so the stores of an
 * executor share one pool for the local ingestion of commits and run at most {@link
 * SharedPools#COMMIT_SNAPSHOTS_AT_ONCE} commit-started snapshots at once, as a JVM-wide pool
 * did before strata-core stopped holding static pools. It is reference-counted by its leases
 * (one per open store): its threads start with the first open store and stop when the last one
 * closes, so a JVM that loads and unloads providers many times keeps no idle thread. It is
 * never closed itself: it holds nothing while no store is open.
 */
final class JvmPools {
  /** The owner every provider of this JVM leases from. */
  static final SharedPools SHARED = new SharedPools();

  private JvmPools() { }
}
