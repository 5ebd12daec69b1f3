// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.engine.SharedMemory;
import io.strata.objectstore.ObjectStores;
import io.strata.objectstore.RequestListener;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.UUID;
import org.junit.jupiter.api.Disabled;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A second adversarial review of issue 43's collection (branch i43-adv2): interleavings of
 * instances of one store that trade ownership while both collect. Local object store; objects
 * become "settled" by waiting past {@code SETTLE_MARGIN_MILLIS}; the grace period (1 h) is never
 * reached.
 */
class GcAdversarialTwoTest {
  private static final Duration GRACE = Duration.ofHours(1);

  @TempDir Path tmp;
  private int executors;

  private SyncedStore open(String root, boolean format2, String run, int retain,
      OffsetClock clock) {
    StoreSettings s = new StoreSettings(1, 2, 0, format2, SharedMemory.Limits.DEFAULT,
        new GcSettings(true, retain, 1, GRACE.toMillis()));
    return new SyncedStore(new StoreIdentity(0, 2, "default", root),
        ObjectStores.open(root, SyncedStoreTest.UNUSED_S3, RequestListener.NONE),
        tmp.resolve("exec-" + (executors++)), run == null ? s : s.withRun(run), "{}", "{}",
        clock);
  }

  /**
   * Held: two instances of one query run trade the partition every two versions (a partition
   * that moves back and forth between executors, each move a cold load on the instance that
   * gets it, often restored from a published snapshot the other uploaded), a base snapshot at
   * every version, both instances collecting after every commit, and everything older settled
   * every other step. After every step, every retained version (R = 2) loads with its exact
   * state, in both checkpoint formats.
   */
  @Test
  void twoInstancesTradingThePartitionKeepEveryRetainedVersionFormatOne() throws Exception {
    pingPong(false);
  }

  /** As above, checkpoint format 2 (the driver names the attempt of each version). */
  @Test
  void twoInstancesTradingThePartitionKeepEveryRetainedVersionFormatTwo() throws Exception {
    pingPong(true);
  }

  private void pingPong(boolean format2) throws Exception {
    String root = tmp.resolve("remote-pp-" + format2).toUri().toString();
    OffsetClock clock = new OffsetClock();
    String run = format2 ? null : UUID.randomUUID().toString();
    int retain = 2;
    Map<Long, TreeMap<String, String>> states = new HashMap<>();
    states.put(0L, new TreeMap<>());
    Map<Long, String> used = new HashMap<>();
    try (SyncedStore x = open(root, format2, run, retain, clock);
        SyncedStore y = open(root, format2, run, retain, clock)) {
      SyncedStore[] both = {x, y};
      for (long v = 1; v <= 8; v++) {
        SyncedStore owner = both[(int) ((v / 2) % 2)];
        SyncedStore other = owner == x ? y : x;
        owner.load(v - 1, Optional.ofNullable(used.get(v - 1)));
        states.put(v, GcWorkload.write(owner, states.get(v - 1), v, "v"));
        String attempt = owner.commit().manifest().attempt();
        if (format2) {
          used.put(v, attempt);
        }
        owner.awaitLocalIngestion();
        owner.maintenance();
        assertTrue(owner.awaitSnapshotUpload(30_000), "snapshot upload");
        owner.collectGarbage();
        other.collectGarbage();
        if (v % 2 == 0) {
          Thread.sleep(1_100); // everything so far settles before the next roots
        }
        for (long r = Math.max(0, v - retain); r <= v; r++) {
          try (SyncedStore reader = open(root, format2, null, 100, new OffsetClock())) {
            reader.load(r, Optional.ofNullable(used.get(r)), true);
            GcWorkload.assertState(reader, states.get(r), "after version " + v + ": version "
                + r);
          }
        }
      }
    }
  }

  /**
   * A run claim without a marker whose body cannot be decoded (damaged bytes, a newer format)
   * must not stop every later load: a new run's first load lists {@code runs/} and reads each
   * claim without a marker, and before this fix one it could not decode failed that load with
   * an IOException, for every run and every read-only load (the state data source) too, for as
   * long as the claim stayed; and garbage collection leaves an unreadable claim alone, so it
   * stayed for ever. (A damaged retired-runs list was made harmless in issue 43's review; this
   * is the same for the claim.)
   */
  @Test
  void aDamagedRunClaimWithoutMarkerDoesNotStopLaterRuns() throws Exception {
    String root = tmp.resolve("remote-claim").toUri().toString();
    OffsetClock clock = new OffsetClock();
    Map<Long, TreeMap<String, String>> states = new HashMap<>();
    states.put(0L, new TreeMap<>());
    try (SyncedStore a = open(root, false, UUID.randomUUID().toString(), 4, clock)) {
      a.load(0, Optional.empty());
      for (long v = 1; v <= 2; v++) {
        states.put(v, GcWorkload.write(a, states.get(v - 1), v, "a"));
        a.commit();
        a.awaitLocalIngestion();
      }
    }
    try (io.strata.objectstore.ObjectStore o = ObjectStores.open(root,
        SyncedStoreTest.UNUSED_S3, RequestListener.NONE)) {
      o.putIfAbsent(io.strata.format.StoreLayout.runClaim(2),
          io.strata.objectstore.ObjectBody.of(new byte[] {'{', 'x'}));
    }
    try (SyncedStore reader = open(root, false, UUID.randomUUID().toString(), 4, clock)) {
      reader.load(2, Optional.empty(), true);
      GcWorkload.assertState(reader, states.get(2L), "a read-only run");
    }
    try (SyncedStore b = open(root, false, UUID.randomUUID().toString(), 4, clock)) {
      b.load(2, Optional.empty());
      states.put(3L, GcWorkload.write(b, states.get(2L), 3, "b"));
      b.commit();
      b.awaitLocalIngestion();
      b.collectGarbage();
    }
    try (SyncedStore reader = open(root, false, null, 100, new OffsetClock())) {
      reader.load(3, Optional.empty(), true);
      GcWorkload.assertState(reader, states.get(3L), "the next run's version");
    }
  }

  /**
   * A HOLE (leak of bytes and of request bytes, not of objects): the retired-runs list is the
   * union of every run ever retired and never forgets one, so {@code runs/<e>.retired} grows by
   * one run id (about 40 bytes) per run, for ever; every new run reads the whole list in every
   * store before it claims its epoch (one GET), and the round that retires it writes the whole
   * list again (one PUT). A job started every minute (a scheduler's {@code AvailableNow} run)
   * reaches about 20 MB per store in a year, read and written again in every store by every run.
   * The object count stays within the bound; the bytes under {@code runs/} and each run's cost
   * grow without one. Not fixed: forgetting a run needs a rule for when none of its executors
   * can still open the store (see the report of branch i43-adv2).
   */
  @Disabled("HOLE (i43-adv2): runs/<e>.retired grows by one run id per run for ever")
  @Test
  void theRetiredRunsListStaysBoundedOverManyRuns() throws Exception {
    String root = tmp.resolve("remote-many-runs").toUri().toString();
    OffsetClock clock = new OffsetClock();
    Map<Long, TreeMap<String, String>> states = new HashMap<>();
    states.put(0L, new TreeMap<>());
    long sizeAfter10 = -1;
    for (long run = 1; run <= 30; run++) {
      try (SyncedStore s = open(root, false, UUID.randomUUID().toString(), 4, clock)) {
        s.load(run - 1, Optional.empty());
        states.put(run, GcWorkload.write(s, states.get(run - 1), run, "r"));
        s.commit();
        s.awaitLocalIngestion(); // the first round (writes the list)
        s.collectGarbage(); // a later round (deletes what a listed list names)
      }
      if (run == 10) {
        sizeAfter10 = retiredListBytes(root);
      }
    }
    long sizeAfter30 = retiredListBytes(root);
    assertTrue(sizeAfter30 <= sizeAfter10 + 200, "runs/*.retired: " + sizeAfter10
        + " bytes after 10 runs, " + sizeAfter30 + " bytes after 30");
  }

  private static long retiredListBytes(String root) throws IOException {
    try (io.strata.objectstore.ObjectStore o = ObjectStores.open(root,
        SyncedStoreTest.UNUSED_S3, RequestListener.NONE)) {
      long bytes = 0;
      for (io.strata.objectstore.ObjectInfo i : o.list(io.strata.format.StoreLayout.RUNS)) {
        if (io.strata.format.StoreLayout.retiredRunsEpochOf(i.key()) > 0) {
          bytes += i.size();
        }
      }
      return bytes;
    }
  }

  /**
   * Held: the owner's base snapshot has uploaded its files but not yet published them (its
   * {@code b/} PUT is held back); meanwhile everything older settles, and both the owner and a
   * stale instance of the same run collect. Then the publication goes through, the next commit
   * adopts the snapshot, and every retained version, the adopting one included, loads exactly.
   */
  @Test
  void roundsBetweenASnapshotsUploadAndItsAdoptionKeepItsFiles() throws Exception {
    String root = tmp.resolve("remote-adopt").toUri().toString();
    OffsetClock clock = new OffsetClock();
    String run = UUID.randomUUID().toString();
    Map<Long, TreeMap<String, String>> states = new HashMap<>();
    states.put(0L, new TreeMap<>());
    StoreSettings settings = new StoreSettings(2, 2, 0, false, SharedMemory.Limits.DEFAULT,
        new GcSettings(true, 2, 1, GRACE.toMillis())).withRun(run);
    SyncedStoreLocalDiskTest.FaultyObjectStore faulty =
        new SyncedStoreLocalDiskTest.FaultyObjectStore(ObjectStores.open(root,
            SyncedStoreTest.UNUSED_S3, RequestListener.NONE));
    try (SyncedStore owner = new SyncedStore(new StoreIdentity(0, 2, "default", root), faulty,
            tmp.resolve("exec-owner"), settings, "{}", "{}", clock);
        SyncedStore stale = open(root, false, run, 2, clock)) {
      owner.load(0, Optional.empty());
      for (long v = 1; v <= 6; v++) {
        states.put(v, GcWorkload.write(owner, states.get(v - 1), v, "o"));
        owner.commit();
        owner.awaitLocalIngestion();
        owner.maintenance();
        assertTrue(owner.awaitSnapshotUpload(30_000));
        owner.collectGarbage();
        if (v == 5) {
          stale.load(5, Optional.empty()); // an instance that later lost the partition
        }
      }
      Thread.sleep(1_100);
      for (long v = 7; v <= 8; v++) {
        states.put(v, GcWorkload.write(owner, states.get(v - 1), v, "o"));
        owner.commit();
        owner.awaitLocalIngestion();
      }
      faulty.blockPut = k -> k.startsWith(io.strata.format.StoreLayout.PUBLISHED_SNAPSHOTS);
      java.util.concurrent.CompletableFuture<Boolean> upload =
          java.util.concurrent.CompletableFuture.supplyAsync(() -> {
            try {
              return owner.maintenance();
            } catch (IOException e) {
              throw new java.io.UncheckedIOException(e);
            }
          });
      assertTrue(faulty.blocked.await(30, java.util.concurrent.TimeUnit.SECONDS),
          "the snapshot's files are up, its publication held");
      Thread.sleep(1_100); // 1..8 settle before the next commit's roots
      faulty.blockPut = k -> false;
      stale.collectGarbage();
      owner.collectGarbage(); // its own round, the upload in flight and not yet offered
      faulty.release.countDown();
      assertTrue(upload.get(30, java.util.concurrent.TimeUnit.SECONDS), "uploaded");
      stale.collectGarbage();
      for (long v = 9; v <= 10; v++) {
        states.put(v, GcWorkload.write(owner, states.get(v - 1), v, "o"));
        owner.commit();
        owner.awaitLocalIngestion();
        owner.collectGarbage();
        stale.collectGarbage();
        Thread.sleep(1_100);
      }
    }
    try (SyncedStore reader = open(root, false, null, 100, new OffsetClock())) {
      assertEquals(8L, reader.readManifest(9, Optional.empty()).base().orElseThrow().version(),
          "version 9 adopted the snapshot of 8");
    }
    for (long r = 8; r <= 10; r++) {
      try (SyncedStore reader = open(root, false, null, 100, new OffsetClock())) {
        reader.load(r, Optional.empty(), true);
        GcWorkload.assertState(reader, states.get(r), "version " + r);
      }
    }
  }

  /**
   * Held (issue 43, fault campaign run 3): epochs follow the order in which runs first touch a
   * store, not the order in which the runs started. A zombie driver frozen before its first batch
   * and thawed after the next run claimed epoch {@code e} claims {@code e + 1} in the stores its
   * late tasks open; the live run (epoch {@code e}) then skips every collection round ("a later
   * run claimed epoch e + 1, which collects instead"), but the zombie is dead, so nothing
   * collected until the query restarted: the checkpoint grew 2,244 to 2,976 objects (160
   * beyond the bound) in five minutes. Now a superseded instance whose run commits past the
   * version it had when it first saw the later claim collects again (the later run cannot have
   * committed at or below it). Here: the live run commits versions 1 and 2, a zombie run opens
   * the store and writes nothing, the live run commits 3 to 12 and collects after each: at most
   * the retained versions (R = 2, so 3) and one more are left. A stale instance of an earlier
   * run that cannot commit still skips ({@code
   * GcAdversarialTest#aRewindWithSettledObjectsOfTheEarlierRunKeepsWhatTheLaterRunLoads}).
   */
  @Test
  void aZombieRunsLateEpochClaimDoesNotStopTheLiveRunsCollection() throws Exception {
    String root = tmp.resolve("remote-zombie-claim").toUri().toString();
    OffsetClock clock = new OffsetClock();
    TreeMap<String, String> state = new TreeMap<>();
    try (SyncedStore live = open(root, false, UUID.randomUUID().toString(), 2, clock)) {
      live.load(0, Optional.empty());
      for (long v = 1; v <= 2; v++) {
        state = GcWorkload.write(live, state, v, "v");
        live.commit();
        live.awaitLocalIngestion();
      }
      try (SyncedStore zombie = open(root, false, UUID.randomUUID().toString(), 2, clock)) {
        zombie.load(2, Optional.empty());
        zombie.prepareWrite(); // its late task: claims the next epoch, then dies
      }
      for (long v = 3; v <= 12; v++) {
        state = GcWorkload.write(live, state, v, "v");
        live.commit();
        live.awaitLocalIngestion();
        live.maintenance(); // a base snapshot: older deltas are no longer named
        assertTrue(live.awaitSnapshotUpload(30_000), "snapshot upload");
        Thread.sleep(1_100); // older objects settle
        live.collectGarbage();
      }
    }
    try (var objects = ObjectStores.open(root, SyncedStoreTest.UNUSED_S3, RequestListener.NONE)) {
      long versionObjects = objects.list("v/").size();
      assertTrue(versionObjects <= 4, "version objects left: " + versionObjects);
    }
  }
}
