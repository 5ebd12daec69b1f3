// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.strata.engine.SharedMemory;
import io.strata.format.StoreLayout;
import io.strata.objectstore.ObjectInfo;
import io.strata.objectstore.ObjectStore;
import io.strata.objectstore.ObjectStores;
import io.strata.objectstore.RequestListener;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Query runs (checkpoint format 1) against retention and garbage collection: a rewind deeper
 * than {@code minBatchesToRetain} does not let an earlier run's stale versions lift the
 * retention window over what the current run needs; a version's generations are kept or deleted
 * together; a collector of a superseded run deletes nothing; a read-only load writes nothing.
 */
class QueryRunsRetentionTest {
  private static final Duration GRACE = Duration.ofHours(1);

  @TempDir Path tmp;
  private int executors;

  private ObjectStore objects(String root) {
    return ObjectStores.open(root, SyncedStoreTest.UNUSED_S3, RequestListener.NONE);
  }

  private SyncedStore open(String root, String run, OffsetClock clock, int retain) {
    StoreSettings s = new StoreSettings(1000, 2, 0, false, SharedMemory.Limits.DEFAULT,
        new GcSettings(true, retain, 1, GRACE.toMillis()));
    return new SyncedStore(new StoreIdentity(0, 3, "default", root), objects(root),
        tmp.resolve("exec-" + (executors++)), run == null ? s : s.withRun(run), "{}", "{}",
        clock);
  }

  private static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  /**
   * A rewind of more than minBatchesToRetain batches: the earlier run's stale versions above the
   * rewind point must not anchor the retention window (N is the collector's own version), or the
   * later run's own newest versions fall below the floor; a version of the later run without
   * writes (a partition that got no rows in that batch) has no delta that a manifest names, and
   * deleting it would let the next load of that version read the earlier run's superseded
   * generation, still named by the stale versions.
   */
  @Test
  void rewindPastRetentionThenAnEmptyVersionFallsBackToTheSupersededRun() throws Exception {
    String root = tmp.resolve("remote").toUri().toString();
    OffsetClock clock = new OffsetClock();
    try (SyncedStore a = open(root, UUID.randomUUID().toString(), clock, 3)) {
      a.load(0, Optional.empty());
      for (long v = 1; v <= 10; v++) {
        a.put(b("k"), b("a" + v));
        a.commit();
      }
    }
    // The user deletes offsets/ and commits/ of batches 4..9 and restarts: run B re-runs batch
    // 4 (version 5); this partition got no rows, so version 5 has no writes.
    try (SyncedStore runB = open(root, UUID.randomUUID().toString(), clock, 3)) {
      runB.load(4, Optional.empty());
      runB.commit();
    }
    assertEquals(StoreLayout.generationVersionObject(5, 2), keyOf(root, 5));
    // The query is down for two hours, then run C resumes from commits/4 (version 5), commits
    // version 6 and runs its first garbage-collection round (its batch then fails in the sink,
    // so commits/5 is never written).
    clock.advance(Duration.ofHours(2));
    try (SyncedStore runC = open(root, UUID.randomUUID().toString(), clock, 3)) {
      runC.load(5, Optional.empty());
      assertArrayEquals(b("a4"), runC.get(b("k")), "run B's version 5 = run A's version 4");
      runC.put(b("k"), b("c6"));
      runC.commit();
      runC.collectGarbage();
    }
    // Run D restarts from commits/4 again and loads version 5.
    try (SyncedStore runD = open(root, UUID.randomUUID().toString(), clock, 3)) {
      runD.load(5, Optional.empty());
      assertArrayEquals(b("a4"), runD.get(b("k")),
          "version 5 must still be run B's (= a4), not run A's superseded a5; it now reads "
              + new String(runD.get(b("k")), StandardCharsets.UTF_8) + " from " + keyOf(root, 5));
    }
  }

  /**
   * The generations of a version go together: generation 2 kept because a retained manifest
   * names its delta keeps generation 1 (named by nothing) too, so that slot never becomes free
   * for a later run's re-commit below generation 2; when nothing keeps any, all go.
   */
  @Test
  void aVersionsGenerationsAreKeptOrDeletedTogether() {
    java.util.List<io.strata.format.Reachability.Listed> listing = java.util.List.of(
        new io.strata.format.Reachability.Listed(StoreLayout.generationVersionObject(5, 1), 10, 1),
        new io.strata.format.Reachability.Listed(StoreLayout.generationVersionObject(5, 2), 10, 1),
        new io.strata.format.Reachability.Listed(StoreLayout.generationVersionObject(6, 1), 10, 1),
        new io.strata.format.Reachability.Listed(StoreLayout.generationVersionObject(6, 2), 10, 1),
        new io.strata.format.Reachability.Listed(StoreLayout.generationVersionObject(20, 1), 10, 1));
    io.strata.format.Reachability.Plan plan = io.strata.format.Reachability.plan(listing, -1, 3);
    io.strata.format.Reachability.Verdict verdict = io.strata.format.Reachability.garbage(
        listing, plan, java.util.Set.of(StoreLayout.generationVersionObject(5, 2)),
        java.util.Set.of(), System.currentTimeMillis(), GRACE.toMillis());
    assertEquals(java.util.List.of(StoreLayout.generationVersionObject(6, 1),
        StoreLayout.generationVersionObject(6, 2)),
        verdict.garbage().stream().map(io.strata.format.Reachability.Listed::key).toList(),
        "version 5 is kept whole (generation 2 is named); version 6, named by nothing, goes whole");
  }

  /**
   * A provider of an earlier run still loaded on an executor (a zombie) runs maintenance after a
   * later run rewound and claimed its epoch: the zombie's newest version is a stale one above the
   * rewind point, so its round would put the later run's versions below its floor. It deletes
   * nothing; the later run's versions stay loadable.
   */
  @Test
  void aCollectorOfASupersededRunDeletesNothing() throws Exception {
    String root = tmp.resolve("remote4").toUri().toString();
    OffsetClock clock = new OffsetClock();
    try (SyncedStore zombie = open(root, UUID.randomUUID().toString(), clock, 3)) {
      zombie.load(0, Optional.empty());
      for (long v = 1; v <= 10; v++) {
        zombie.put(b("k"), b("a" + v));
        zombie.commit();
      }
      try (SyncedStore runB = open(root, UUID.randomUUID().toString(), clock, 3)) {
        runB.load(4, Optional.empty());
        runB.commit(); // version 5, no writes: no manifest names it
      }
      clock.advance(Duration.ofHours(2));
      io.strata.metrics.GcStats stats = zombie.collectGarbage();
      assertEquals(0, stats.objectsDeleted(), stats.toString());
    }
    try (SyncedStore runC = open(root, UUID.randomUUID().toString(), clock, 3)) {
      runC.load(5, Optional.empty());
      assertArrayEquals(b("a4"), runC.get(b("k")), "run B's version 5 is still loadable");
    }
  }

  private String keyOf(String root, long v) throws IOException {
    String best = null;
    try (ObjectStore o = objects(root)) {
      for (ObjectInfo i : o.list(StoreLayout.versionPrefix(v))) {
        if (best == null || i.key().compareTo(best) > 0) {
          best = i.key();
        }
      }
    }
    return best;
  }

  /**
   * A read-only load writes nothing: Spark's state data source gives every scan a fresh random
   * query run id (StateScanBuilder: UUID.randomUUID()); were each to claim an epoch, every read
   * would add two objects per store forever and need write access to the checkpoint. A run that
   * loaded read-only and then writes claims its epoch then.
   */
  @Test
  void readOnlyLoadsClaimNoEpochAndAWriteAfterOneClaims() throws Exception {
    String root = tmp.resolve("remote2").toUri().toString();
    try (SyncedStore a = open(root, UUID.randomUUID().toString(), new OffsetClock(), 3)) {
      a.load(0, Optional.empty());
      a.put(b("k"), b("v"));
      a.commit();
    }
    for (int scan = 0; scan < 5; scan++) {
      try (SyncedStore reader = open(root, UUID.randomUUID().toString(), new OffsetClock(), 3)) {
        reader.load(1, Optional.empty(), true);
        assertArrayEquals(b("v"), reader.get(b("k")));
      }
    }
    long runs;
    try (ObjectStore o = objects(root)) {
      runs = o.list(StoreLayout.RUNS).size();
    }
    assertEquals(2, runs, "five read-only scans should not write to the checkpoint; runs/ holds "
        + runs + " objects");
    try (SyncedStore upgraded = open(root, UUID.randomUUID().toString(), new OffsetClock(), 3)) {
      upgraded.load(1, Optional.empty(), true);
      assertEquals(-1, upgraded.epoch(), "no epoch claimed by the read");
      upgraded.prepareWrite();
      assertEquals(2, upgraded.epoch(), "the write claims the next epoch");
      upgraded.put(b("k"), b("w"));
      assertEquals(StoreLayout.generationVersionObject(2, 1), upgraded.commit().key());
    }
  }

}
