// SPDX-License-Identifier: Apache-2.0
package io.strata.tools;

import io.strata.format.StoreLayout;
import io.strata.objectstore.ObjectInfo;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Whether a checkpoint's query looks alive: the one rule {@code gc --apply} and {@code rewind}
 * refuse by. A query looks alive if the newest of its latest {@code offsets/<b>}, its latest
 * {@code commits/<b>} and its stores' objects (version objects, and what a batch writes before
 * its version: spills, base snapshot packs, a new run's epoch claim; not garbage collection's
 * list of retired runs and savepoints' holds) was written less than the idle time ago (by the
 * objects' {@code Last-Modified}, the server's clock). A stopped query writes none of them; a running one writes
 * an offset and a commit every batch and a version object every commit, so a job with a trigger
 * longer than the idle time, whose batches spill nothing, can look stopped: the commands take
 * {@code --idle-minutes} for it.
 */
final class QueryLiveness {
  private QueryLiveness() { }

  /**
   * {@code --idle-minutes} in milliseconds.
   *
   * @throws ToolException (exit 2) if {@code minutes} is negative or above 1,000,000 (a
   *     negative idle time would make every query look stopped)
   */
  static long idleMillis(long minutes) throws ToolException {
    if (minutes < 0 || minutes > 1_000_000) {
      throw new ToolException(StrataTool.EXIT_USAGE, "Invalid --idle-minutes " + minutes
          + ": expected 0 to 1000000 minutes", null);
    }
    return minutes * 60_000L;
  }

  /**
   * @param scan the checkpoint's listing
   * @param nowMillis now, epoch milliseconds
   * @param idleMillis how long ago the newest write must be for the query to look stopped
   * @return what makes it look alive ("offsets/41 was written 12 s ago"), or empty
   */
  static Optional<String> of(CheckpointScan scan, long nowMillis, long idleMillis) {
    String what = null;
    long newest = 0;
    List<ObjectInfo> candidates = new ArrayList<>();
    scan.spark.latestOffsetObject().ifPresent(candidates::add);
    scan.spark.latestCommitObject().ifPresent(candidates::add);
    for (ObjectInfo o : candidates) {
      if (o.lastModifiedMillis() > newest) {
        newest = o.lastModifiedMillis();
        what = o.key();
      }
    }
    for (CheckpointScan.Store s : scan.strataStores()) {
      for (ObjectInfo o : s.objects()) {
        // Anything a query writes into its store counts; GC's retired-runs list does not (gc
        // --apply writes it too), nor a savepoint's hold (the tool writes it).
        if (!o.key().matches("runs/[0-9]+\\.retired")
            && io.strata.format.StoreLayout.heldVersionObjectOf(o.key()) == null
            && o.lastModifiedMillis() > newest) {
          newest = o.lastModifiedMillis();
          what = s.relativeLocation() + "/" + o.key();
        }
      }
    }
    if (what != null && nowMillis - newest < idleMillis) {
      return Optional.of(what + " was written " + Table.age(Math.max(0, nowMillis - newest))
          + " ago");
    }
    return Optional.empty();
  }
}
