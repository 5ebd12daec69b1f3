// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import io.strata.format.Reachability;
import java.util.List;
import java.util.Set;

/**
 * What one garbage-collection round of a store decided, before it deletes anything: the
 * listing it decided from, the retention plan and the verdict ({@link Reachability}). Made by
 * {@link StoreInspector#decideGc} (and inside {@link SyncedStore}'s rounds); the verdict's
 * garbage is exactly what {@link StoreInspector#applyGc} deletes.
 *
 * @param round the round's sequence number (for the stats)
 * @param knownNewestVersion the newest version the caller named, or -1 (then the greatest
 *     version listed)
 * @param listing every object under the store's root, keys relative to it
 * @param plan the retention plan, or null when the round was skipped ({@link #skippedForEpoch})
 * @param verdict what is garbage and why the rest is kept, or null when skipped
 * @param named every key a root's manifest or a listed published snapshot names (empty when no
 *     manifest had to be read because nothing could be garbage)
 * @param usablePublishedSnapshots the published snapshots a retained version can use
 * @param manifestReads manifests read from the object store (tail GETs)
 * @param listRequests LIST requests (pages) of the listing
 * @param skippedForEpoch the epoch of a later query run that claimed the store when the caller
 *     belongs to an earlier run (nothing is decided then), else -1
 * @param startNanos {@link System#nanoTime()} when the round started
 * @param nowMillis the wall-clock time the ages were judged at, epoch ms
 * @param unreadablePublishedSnapshots the listed published snapshots that cannot be decoded
 *     (damaged, another store's, or of a newer format), in key order: usable by no load,
 *     whatever their key says, and garbage once older than the grace period; while one is
 *     listed, the round keeps every base-snapshot file
 */
public record GcDecision(long round, long knownNewestVersion, List<Reachability.Listed> listing,
    Reachability.Plan plan, Reachability.Verdict verdict, Set<String> named,
    Set<String> usablePublishedSnapshots, int manifestReads, long listRequests,
    long skippedForEpoch, long startNanos, long nowMillis,
    List<String> unreadablePublishedSnapshots) {

  /** Copies the collections. */
  public GcDecision {
    listing = List.copyOf(listing);
    named = Set.copyOf(named);
    usablePublishedSnapshots = Set.copyOf(usablePublishedSnapshots);
    unreadablePublishedSnapshots = List.copyOf(unreadablePublishedSnapshots);
  }
}
