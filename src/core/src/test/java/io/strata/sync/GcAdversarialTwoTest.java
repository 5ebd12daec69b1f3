// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.engine.SharedMemory;
import io.strata.metrics.GcStats;
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
    return open(root, format2, run, retain, clock, 0);
  }

  private SyncedStore open(String root, boolean format2, String run, int retain,
      OffsetClock clock, long spillBytes) {
    StoreSettings s = new StoreSettings(1, 2, spillBytes, format2, SharedMemory.Limits.DEFAULT,
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
   * version it had when it first saw the later claim collects again, keeping what a later run
   * committed ({@link #aZombieOfTheEarlierRunCommittingAboveARewindKeepsTheLaterRunsVersions}).
   * Here: the live run commits versions 1 and 2, a zombie run opens
   * the store at version 2 and writes nothing, the live run commits 3 to 12 and collects after
   * each: at most the retained versions (R = 2, so 3) and one more are left, besides what the
   * zombie's claim says it loaded (version 2, whose manifest names 1's delta). A stale instance of an earlier
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
      java.util.List<Long> versions = objects.list("v/").stream()
          .map(o -> io.strata.format.StoreLayout.versionOf(o.key())).sorted().toList();
      // the zombie's claim says it loaded 2: version 2 and the delta of 1 its manifest names
      // stay while the claim is listed (a fixed set per claim); nothing of 3 to 8 does
      assertTrue(versions.size() <= 6 && versions.stream().noneMatch(v -> v >= 3 && v <= 8),
          "version objects left: " + versions);
    }
  }

  /**
   * Fault campaign run 6 (58 objects beyond the collection bound in one sample): a round that
   * skipped because a zombie's claim had just appeared waited a whole round interval more
   * before this instance collected again, although the skip lasts only until the instance
   * commits past the version it had at the skip. Here the round interval is 5: the live run
   * commits 1 to 5, a zombie claims and dies, the live run commits 6 to 10 (a round is due and
   * skips for the claim); its next commit makes a round due again, which collects.
   */
  @Test
  void aRoundSkippedForALateClaimIsDueAgainAtTheNextCommit() throws Exception {
    String root = tmp.resolve("remote-skip-due").toUri().toString();
    OffsetClock clock = new OffsetClock();
    TreeMap<String, String> state = new TreeMap<>();
    StoreSettings s = new StoreSettings(1, 2, 0, false, SharedMemory.Limits.DEFAULT,
        new GcSettings(true, 2, 5, GRACE.toMillis())).withRun(UUID.randomUUID().toString());
    try (SyncedStore live = new SyncedStore(new StoreIdentity(0, 2, "default", root),
        ObjectStores.open(root, SyncedStoreTest.UNUSED_S3, RequestListener.NONE),
        tmp.resolve("exec-" + (executors++)), s, "{}", "{}", clock)) {
      live.load(0, Optional.empty());
      for (long v = 1; v <= 5; v++) {
        state = GcWorkload.write(live, state, v, "v");
        live.commit();
        live.awaitLocalIngestion();
      }
      live.collectGarbage(); // after the first round (started by the first commit)
      try (SyncedStore zombie = open(root, false, UUID.randomUUID().toString(), 2, clock)) {
        zombie.load(5, Optional.empty());
        zombie.prepareWrite(); // its late task: claims the next epoch, then dies
      }
      for (long v = 6; v <= 10; v++) {
        state = GcWorkload.write(live, state, v, "v");
        live.commit();
        live.awaitLocalIngestion();
      }
      assertTrue(live.gcDue(), "a round interval after the last round");
      GcStats skipped = live.collectGarbage();
      assertEquals(0, skipped.objectsDeleted(), "skipped for the zombie's claim: " + skipped);
      assertEquals(-1, skipped.oldestRetainedVersion(), "skipped: " + skipped);
      assertFalse(live.gcDue(), "not due again before the next commit");
      state = GcWorkload.write(live, state, 11, "v");
      live.commit();
      live.awaitLocalIngestion();
      assertTrue(live.gcDue(), "due again at the first commit past the skip");
      GcStats collected = live.collectGarbage();
      assertEquals(9, collected.oldestRetainedVersion(), "collects again, retaining 9 to 11 "
          + "(with no base snapshot their chains name every older delta): " + collected);
      assertFalse(live.gcDue(), "then a round interval again, not a round per maintenance");
    }
  }

  /**
   * Review of afc8db8 (branch gcrev): a superseded instance that commits past the version it had
   * when it first saw a later claim does not prove that the later run committed nothing at or
   * below its versions: a later run's commit fences only the earlier run's attempts of the
   * versions it committed (and the instances that meet it), so an earlier run's instance goes on
   * committing versions above a rewind point. Here run A commits 1..10 (R = 2); run B rewinds to
   * version 8 and commits 9 (generation 2); A's instance, a zombie (a driver thawed after B
   * started), sees B's claim, then commits 11 to 13 and collects after each. Before the fix its
   * rounds collected again at version 13 and deleted B's version 9 and its rewind point 8 (B's
   * only committed state: its next cold load failed); now what a later run committed, and the
   * version it built that on, stay.
   */
  @Test
  void aZombieOfTheEarlierRunCommittingAboveARewindKeepsTheLaterRunsVersions() throws Exception {
    rewindThenZombieCommits(false, false);
  }

  /**
   * Held: as above, and then a third run claims the store and dies without committing (a claim
   * newer than B's, which B's commit precedes): what B committed after its own claim still stays.
   */
  @Test
  void aZombieCommittingAboveARewindKeepsItAfterAThirdRunsClaim() throws Exception {
    rewindThenZombieCommits(false, true);
  }

  /**
   * Held: as above, but the later run's next batch (version 10) spills before the zombie commits
   * 11 to 13 and collects at 13: a spill delta of a version below the zombie's newest, written
   * before all of its roots, would be settled garbage. The spills right after a later run's
   * commit stay, and the later run's version 10 (named spills included) loads.
   */
  @Test
  void aZombieCommittingAboveARewindKeepsTheLaterRunsSpilledBatch() throws Exception {
    String root = tmp.resolve("remote-rewind-spill").toUri().toString();
    OffsetClock clock = new OffsetClock();
    Map<Long, TreeMap<String, String>> a = new HashMap<>();
    Map<Long, TreeMap<String, String>> b = new HashMap<>();
    a.put(0L, new TreeMap<>());
    try (SyncedStore zombie = open(root, false, run(false), 2, clock)) {
      zombie.load(0, Optional.empty());
      commitCollecting(zombie, a, 1, 10, "a");
      Thread.sleep(1_100);
      try (SyncedStore later = open(root, false, run(false), 2, clock, 2048)) {
        later.load(8, Optional.empty());
        b.put(8L, a.get(8L));
        commitCollecting(later, b, 9, "b");
        later.load(9, Optional.empty());
        TreeMap<String, String> ten = GcWorkload.write(later, b.get(9L), 10, "b");
        for (int i = 0; i < 100; i++) { // spills several times (2 KiB threshold)
          String value = "j".repeat(100) + i;
          later.put(GcWorkload.b("junk-" + i), GcWorkload.b(value));
          ten.put("junk-" + i, value);
        }
        try (var objects = ObjectStores.open(root, SyncedStoreTest.UNUSED_S3,
            RequestListener.NONE)) {
          assertTrue(!objects.list("spill/").isEmpty(), "the batch spilled");
        }
        Thread.sleep(1_100); // the spills settle before the zombie's next roots
        zombie.collectGarbage(); // sees B's claim: skips
        commitCollecting(zombie, a, 11, 13, "a");
        later.commit();
        later.awaitLocalIngestion();
        b.put(10L, ten);
      }
    }
    try (SyncedStore reader = open(root, false, null, 100, new OffsetClock())) {
      reader.load(10, Optional.empty(), true);
      GcWorkload.assertState(reader, b.get(10L), "the later run's spilled version 10");
    }
  }

  /**
   * A HOLE, not afc8db8's (checkpoint format 2 has no query-run epochs: nothing tells a zombie
   * instance of an earlier run from the owner): the same rewind as above in format 2. The
   * zombie's rounds take its own version (13) as the newest and delete the later run's version
   * 9 (its attempt), which the driver names in its commit log. Fixing it needs the run's order
   * in format 2 too (see the report of branch gcrev).
   */
  @Disabled("HOLE (gcrev): format 2, a zombie of an earlier run committing above a rewind "
      + "collects the later run's versions")
  @Test
  void formatTwoAZombieOfTheEarlierRunCommittingAboveARewindKeepsTheLaterRunsVersions()
      throws Exception {
    rewindThenZombieCommits(true, false);
  }

  /**
   * Held (the fault campaign's third run, as its executor logs tell it): the zombie run that
   * claimed the later epoch also re-committed the batch it had been frozen in (version 175 as
   * generation 2 in every store) before Spark's commit log refused it. The live run must keep
   * collecting then too, and it cannot tell that run from a live one that rewound (see above):
   * it keeps that commit, the version it was built on and what they name, nothing more. Here
   * the live run commits 1 and 2, the zombie run loads 1 and re-commits 2, the live run commits
   * 3 to 12 and collects after each: the retained versions (R = 2, so 3) and one more, plus
   * version 2's two generations and version 1, are left, and every retained version loads.
   */
  @Test
  void aZombieRunsLateReCommitDoesNotStopTheLiveRunsCollection() throws Exception {
    String root = tmp.resolve("remote-zombie-recommit").toUri().toString();
    OffsetClock clock = new OffsetClock();
    Map<Long, TreeMap<String, String>> live = new HashMap<>();
    live.put(0L, new TreeMap<>());
    try (SyncedStore owner = open(root, false, run(false), 2, clock)) {
      owner.load(0, Optional.empty());
      commitCollecting(owner, live, 1, 2, "v");
      try (SyncedStore zombie = open(root, false, run(false), 2, clock)) {
        zombie.load(1, Optional.empty()); // its late task re-runs the batch of version 2
        GcWorkload.write(zombie, live.get(1L), 2, "z");
        zombie.commit();
        zombie.awaitLocalIngestion();
      }
      for (long v = 3; v <= 12; v++) {
        commitCollecting(owner, live, v, "v");
        Thread.sleep(1_100); // older objects settle
      }
      owner.collectGarbage();
    }
    try (var objects = ObjectStores.open(root, SyncedStoreTest.UNUSED_S3, RequestListener.NONE)) {
      long versionObjects = objects.list("v/").size();
      assertTrue(versionObjects <= 7, "version objects left: " + versionObjects);
    }
    assertLoadsCold(root, false, live, "the live run's version ", 10L, 11L, 12L);
  }

  /**
   * A later run that claimed and is loading its rewind point, but has not committed yet, looks
   * from the listing exactly like the zombie run of {@link
   * #aZombieRunsLateEpochClaimDoesNotStopTheLiveRunsCollection} that claimed and died; its
   * claim tells them apart ({@code loadsVersion}). Run A commits 1..10 (R = 2); run B rewinds:
   * it claims and loads 8; A's instance, a zombie that goes on committing, sees B's claim,
   * commits 11 to 13 and collects at 13 (floor 11): version 8, the published snapshot B
   * restored from and what they name stay, so B's first commit (9, on what it loaded) and 8
   * load. (Review of afc8db8 found the hole: without the claim's version, 8's files went.)
   */
  @Test
  void aLaterRunsFirstBatchSurvivesAZombieThatCommitsPastItsClaim() throws Exception {
    String root = tmp.resolve("remote-first-batch").toUri().toString();
    OffsetClock clock = new OffsetClock();
    Map<Long, TreeMap<String, String>> a = new HashMap<>();
    Map<Long, TreeMap<String, String>> b = new HashMap<>();
    a.put(0L, new TreeMap<>());
    try (SyncedStore zombie = open(root, false, run(false), 2, clock)) {
      zombie.load(0, Optional.empty());
      commitCollecting(zombie, a, 1, 10, "a");
      Thread.sleep(1_100); // A's objects settle before its next roots
      try (SyncedStore later = open(root, false, run(false), 2, clock)) {
        later.load(8, Optional.empty()); // claims, then restores the rewind point
        b.put(8L, a.get(8L));
        zombie.collectGarbage(); // sees B's claim: skips
        commitCollecting(zombie, a, 11, 13, "a");
        b.put(9L, GcWorkload.write(later, b.get(8L), 9, "b"));
        later.commit(); // on what it loaded; no snapshot of 9 yet
        later.awaitLocalIngestion();
      }
    }
    assertLoadsCold(root, false, b, "the later run's version ", 9L, 8L);
  }

  /**
   * Review gcrev2: a later run's commit into a generation slot the earlier run freed. Run A
   * commits 1..10 (R = 2); run B rewinds (claims, loads 8) and its first batch runs long; A's
   * instance, a zombie that goes on committing, commits 11 to 13 and collects by its own
   * retention (floor 11), deleting its own versions 9 and 10 (settled, named by no retained
   * manifest). Then B commits 9: the slot {@code v/9/g0000000001.svo} is free, so B's commit
   * takes generation 1, the version has one generation and rule (b) of {@link LaterRuns} (a
   * version with more than one generation) does not see it. A commits 14 to 16 and collects:
   * before the fix B's version 9 (its only committed state, 9 &lt; A's floor) was deleted once
   * settled, and B's next cold load of 9 failed. A later run's commit is told by its manifest's
   * epoch, not by its generation.
   */
  @Test
  void aLaterRunsCommitIntoASlotTheEarlierRunFreedSurvives() throws Exception {
    String root = tmp.resolve("remote-freed-slot").toUri().toString();
    OffsetClock clock = new OffsetClock();
    Map<Long, TreeMap<String, String>> a = new HashMap<>();
    Map<Long, TreeMap<String, String>> b = new HashMap<>();
    a.put(0L, new TreeMap<>());
    try (SyncedStore zombie = open(root, false, run(false), 2, clock)) {
      zombie.load(0, Optional.empty());
      commitCollecting(zombie, a, 1, 10, "a");
      Thread.sleep(1_100);
      try (SyncedStore later = open(root, false, run(false), 2, clock)) {
        later.load(8, Optional.empty()); // claims (loadsVersion 8), restores the rewind point
        b.put(8L, a.get(8L));
        zombie.collectGarbage(); // sees B's claim at version 10: skips
        for (long v = 11; v <= 13; v++) {
          commitCollecting(zombie, a, v, "a");
          Thread.sleep(1_100); // A's older versions settle: 9 and 10 go
        }
        try (var objects = ObjectStores.open(root, SyncedStoreTest.UNUSED_S3,
            RequestListener.NONE)) {
          assertTrue(objects.list("v/00000000000000000009/").isEmpty(),
              "A's version 9 was collected: " + objects.list("v/"));
        }
        b.put(9L, GcWorkload.write(later, b.get(8L), 9, "b"));
        String key = later.commit().key();
        later.awaitLocalIngestion();
        assertEquals(io.strata.format.StoreLayout.generationVersionObject(9, 1), key,
            "B's version 9 took the freed first generation");
        Thread.sleep(1_100);
        for (long v = 14; v <= 16; v++) {
          commitCollecting(zombie, a, v, "a");
          Thread.sleep(1_100); // B's 9 settles before A's roots
        }
      }
    }
    try (SyncedStore reader = open(root, false, null, 100, new OffsetClock())) {
      reader.load(9, Optional.empty(), true);
      GcWorkload.assertState(reader, b.get(9L), "the later run's version 9");
    }
  }

  /**
   * A HOLE (gcrev2, unbounded growth until the query restarts): the campaign's zombie claim, as
   * a build before 0.4 writes it (no {@code loadsVersion}: a job upgraded while a zombie task of
   * the old build's run was still to touch the store, or a downgrade). The live run's rounds
   * skip for as long as that claim is listed ("a claim without the field ... makes the round
   * skip, as before"), and only the next run's round retires it: every version the live run
   * commits stays (here 12 version objects instead of at most 6). Not fixed: it needs a policy
   * for an unknown {@code loadsVersion} (for example: keep the newest generation of every
   * version listed no later than the claim, a fixed set, and collect the rest).
   */
  @Disabled("HOLE (gcrev2): a later claim without loadsVersion (a build before 0.4) stops the "
      + "earlier live run's collection until the query restarts")
  @Test
  void aZombieRunsLateClaimWithoutLoadsVersionDoesNotStopTheLiveRunsCollection()
      throws Exception {
    String root = tmp.resolve("remote-old-claim").toUri().toString();
    OffsetClock clock = new OffsetClock();
    Map<Long, TreeMap<String, String>> live = new HashMap<>();
    live.put(0L, new TreeMap<>());
    try (SyncedStore owner = open(root, false, run(false), 2, clock)) {
      owner.load(0, Optional.empty());
      commitCollecting(owner, live, 1, 2, "v");
      String zombieRun = run(false);
      try (var objects = ObjectStores.open(root, SyncedStoreTest.UNUSED_S3,
          RequestListener.NONE)) {
        long e = owner.epoch() + 1; // the zombie's late claim, as 0.3 writes it
        objects.putIfAbsent(io.strata.format.StoreLayout.runClaim(e),
            io.strata.objectstore.ObjectBody.of(new io.strata.format.RunClaim("0/2/default", e,
                zombieRun, System.currentTimeMillis()).encode()));
        objects.putIfAbsent(io.strata.format.StoreLayout.runMarker(e, zombieRun),
            io.strata.objectstore.ObjectBody.of(new byte[0]));
      }
      for (long v = 3; v <= 12; v++) {
        commitCollecting(owner, live, v, "v");
        Thread.sleep(1_100);
      }
      owner.collectGarbage();
    }
    try (var objects = ObjectStores.open(root, SyncedStoreTest.UNUSED_S3, RequestListener.NONE)) {
      long versionObjects = objects.list("v/").size();
      assertTrue(versionObjects <= 6, "version objects left: " + versionObjects);
    }
  }

  /**
   * The campaign's zombie run, seen from the other side: its leftover instance re-committed
   * version 2 (generation 2) and so holds the newest claim; its rounds retire the earlier runs'
   * claims, the live run's included (phase one writes a list naming it, a later round of the
   * zombie's instance, say one an orphan triggers a grace period later, deletes its claim and
   * marker). The live run goes on committing 3 to 6; then its partition moves: its new instance
   * finds no marker of its run, finds the run in the retired list, and is fenced.
   */
  @Test
  void aZombieRunsLeftoverInstanceDoesNotRetireTheLiveRun() throws Exception {
    String root = tmp.resolve("remote-zombie-retires").toUri().toString();
    OffsetClock clock = new OffsetClock();
    Map<Long, TreeMap<String, String>> live = new HashMap<>();
    live.put(0L, new TreeMap<>());
    String liveRun = run(false);
    try (SyncedStore owner = open(root, false, liveRun, 2, clock)) {
      owner.load(0, Optional.empty());
      commitCollecting(owner, live, 1, 2, "v");
      try (SyncedStore zombie = open(root, false, run(false), 2, clock)) {
        zombie.load(1, Optional.empty()); // its late task re-runs the batch of version 2
        GcWorkload.write(zombie, live.get(1L), 2, "z");
        zombie.commit();
        zombie.awaitLocalIngestion(); // its first round: phase one
        commitCollecting(owner, live, 3, 6, "v");
        zombie.collectGarbage(); // a later round of the leftover instance: phase two
      }
    }
    try (SyncedStore moved = open(root, false, liveRun, 2, clock)) {
      moved.load(6, Optional.empty()); // the live run's partition moved to a new executor
      GcWorkload.assertState(moved, live.get(6L), "the live run's version 6");
      commitCollecting(moved, live, 7, "v");
    }
  }

  private void rewindThenZombieCommits(boolean format2, boolean thirdClaim) throws Exception {
    String root = tmp.resolve("remote-rewind-zombie-" + format2 + thirdClaim).toUri().toString();
    OffsetClock clock = new OffsetClock();
    Map<Long, TreeMap<String, String>> a = new HashMap<>();
    Map<Long, TreeMap<String, String>> b = new HashMap<>();
    a.put(0L, new TreeMap<>());
    try (SyncedStore zombie = open(root, format2, run(format2), 2, clock)) {
      zombie.load(0, Optional.empty());
      commitCollecting(zombie, a, 1, 10, "a");
      Thread.sleep(1_100); // A's objects settle before B's
      try (SyncedStore later = open(root, format2, run(format2), 2, clock)) {
        later.load(8, Optional.empty()); // the rewind point
        b.put(8L, a.get(8L));
        commitCollecting(later, b, 9, "b");
      }
      if (thirdClaim) {
        Thread.sleep(1_100); // B's commit is older than C's claim by more than the margin
        try (SyncedStore third = open(root, format2, run(format2), 2, clock)) {
          third.load(9, Optional.empty()); // claims the next epoch, then dies
        }
      }
      zombie.collectGarbage(); // sees the newest claim: skips
      Thread.sleep(1_100); // B's version 9 settles before A's next roots
      commitCollecting(zombie, a, 11, 13, "a");
    }
    // B's committed version, then its rewind point
    assertLoadsCold(root, format2, b, "the later run's version ", 9L, 8L);
  }

  private static String run(boolean format2) {
    return format2 ? null : UUID.randomUUID().toString();
  }

  private static void commitCollecting(SyncedStore s, Map<Long, TreeMap<String, String>> states,
      long v, String tag) throws Exception {
    states.put(v, GcWorkload.write(s, states.get(v - 1), v, tag));
    s.commit();
    s.awaitLocalIngestion();
    s.maintenance();
    assertTrue(s.awaitSnapshotUpload(30_000), "snapshot upload");
    s.collectGarbage();
  }
  /** {@link #commitCollecting(SyncedStore, Map, long, String)} of versions {@code from..to}. */
  private static void commitCollecting(SyncedStore s, Map<Long, TreeMap<String, String>> states,
      long from, long to, String tag) throws Exception {
    for (long v = from; v <= to; v++) {
      commitCollecting(s, states, v, tag);
    }
  }

  /**
   * Each of {@code versions}, in that order, loads cold on a fresh local directory (a reader of
   * no run) with exactly the state {@code states} holds for it.
   */
  private void assertLoadsCold(String root, boolean format2,
      Map<Long, TreeMap<String, String>> states, String what, long... versions)
      throws Exception {
    for (long v : versions) {
      try (SyncedStore reader = open(root, format2, null, 100, new OffsetClock())) {
        reader.load(v, Optional.empty(), true); // format 2: the newest attempt
        GcWorkload.assertState(reader, states.get(v), what + v);
      }
    }
  }
}
