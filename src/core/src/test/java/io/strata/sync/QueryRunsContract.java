// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.engine.SharedMemory;
import io.strata.format.Manifest;
import io.strata.format.Reachability;
import io.strata.format.StoreLayout;
import io.strata.metrics.GcStats;
import io.strata.objectstore.ObjectInfo;
import io.strata.objectstore.ObjectStore;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Checkpoint format 1 across query runs (docs/format.md, "Query runs, epochs and generations"):
 * a later run's re-commit of a version (a rewind: Spark re-runs batches after their offsets and
 * commits entries were deleted) is what every later load of that version reads, as a re-written
 * version file is for Spark's providers; an attempt of an earlier run (a zombie) can never
 * replace it, and its commit is reported lost; attempts of one run still race first-writer-wins.
 * Each "run" is a {@link SyncedStore} with its own query run id and local directory (Spark makes
 * a new provider instance per run); every check ends with loads on wiped local directories.
 * Subclasses supply the object store: the local filesystem and S3Proxy.
 */
abstract class QueryRunsContract {
  private static final Duration GRACE = Duration.ofHours(1);

  @TempDir Path tmp;
  private int executors;

  /** A new object store client rooted at {@code root}. */
  abstract ObjectStore objects(String root);

  /** A store root unique to the running test. */
  abstract String root(String test);

  /** A store of query run {@code run} (null: no run, the layout-1 key) on a fresh local dir. */
  private SyncedStore open(String root, String run, OffsetClock clock, int snapshotInterval) {
    StoreSettings s = new StoreSettings(snapshotInterval, 2, 0, false,
        SharedMemory.Limits.DEFAULT, new GcSettings(true, 100, 1, GRACE.toMillis()));
    return new SyncedStore(new StoreIdentity(0, 3, "default", root), objects(root),
        tmp.resolve("exec-" + (executors++)), run == null ? s : s.withRun(run), "{}", "{}",
        clock);
  }

  private SyncedStore open(String root, String run) {
    return open(root, run, new OffsetClock(), 1000);
  }

  private static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  /** The states of the visible lineage, by version. */
  private static final class Expected {
    final TreeMap<Long, Map<String, String>> states = new TreeMap<>();

    Expected() {
      states.put(0L, Map.of());
    }

    /** Version v as {@code writer} computes it: key-v = writer, counter = writer + v. */
    Map<String, String> next(long v, String writer) {
      Map<String, String> m = new HashMap<>(states.get(v - 1));
      m.put("key-" + v, writer);
      m.put("counter", writer + v);
      return m;
    }
  }

  private static CommitResult commit(SyncedStore s, long v, String writer) throws IOException {
    s.put(b("key-" + v), b(writer));
    s.put(b("counter"), b(writer + v));
    return s.commit();
  }

  /** Commits v as the visible version, recording its expected state. */
  private static CommitResult commitVisible(SyncedStore s, Expected e, long v, String writer)
      throws IOException {
    Map<String, String> state = e.next(v, writer);
    CommitResult c = commit(s, v, writer);
    assertFalse(c.lostRace(), "version " + v + " by " + writer + " wins");
    e.states.put(v, state);
    e.states.tailMap(v, false).clear(); // later versions of an older lineage are not visible
    return c;
  }

  private static void assertState(SyncedStore s, Map<String, String> state, long v)
      throws IOException {
    for (Map.Entry<String, String> kv : state.entrySet()) {
      assertArrayEquals(b(kv.getValue()), s.get(b(kv.getKey())), kv.getKey() + " at version " + v);
    }
    assertEquals(state.size(), s.numKeys(), "keys at version " + v);
  }

  /** Every version of {@code e} loads on wiped local directories, newest first, by two readers. */
  private void assertEveryVersionLoads(String root, Expected e) throws IOException {
    for (String reader : new String[] {"reader-" + UUID.randomUUID(), null}) {
      try (SyncedStore fresh = open(root, reader)) {
        for (long v : e.states.descendingKeySet()) {
          fresh.load(v, Optional.empty());
          assertState(fresh, e.states.get(v), v);
        }
      }
    }
  }

  @Test
  void aLaterRunsReCommitIsWhatEveryLoadReads() throws Exception {
    String root = root("rewind");
    Expected e = new Expected();
    String runA = UUID.randomUUID().toString();
    String runB = UUID.randomUUID().toString();
    try (SyncedStore a = open(root, runA)) {
      a.load(0, Optional.empty());
      assertEquals(1, a.epoch(), "the first run claims epoch 1");
      for (long v = 1; v <= 10; v++) {
        CommitResult c = commitVisible(a, e, v, "a");
        assertEquals(StoreLayout.generationVersionObject(v, 1), c.key());
        assertEquals(1, c.manifest().epoch());
      }
    }
    // The user deletes offsets/ and commits/ of the last two batches and restarts: a new run
    // re-runs from version 8, on a new executor (wiped local directory) and with other input.
    try (SyncedStore b = open(root, runB)) {
      b.load(8, Optional.empty());
      assertEquals(2, b.epoch(), "the second run claims epoch 2");
      assertState(b, e.states.get(8L), 8);
      for (long v = 9; v <= 11; v++) {
        CommitResult c = commitVisible(b, e, v, "b");
        assertEquals(StoreLayout.generationVersionObject(v, v <= 10 ? 2 : 1), c.key(),
            "a re-committed version takes the next generation");
        assertEquals(2, c.manifest().epoch());
        b.load(v, Optional.empty()); // warm
        assertState(b, e.states.get(v), v);
      }
      // and the same run rewinds once more (a task retry of batch 9 on this executor): warm
      // reuse never serves another run's version, and the re-committed 9 is this run's own
      b.load(9, Optional.empty());
      assertState(b, e.states.get(9L), 9);
    }
    assertEveryVersionLoads(root, e);
    // A third run re-runs version 10 again (the readers above claimed epochs too: harmless).
    try (SyncedStore c = open(root, UUID.randomUUID().toString())) {
      c.load(9, Optional.empty());
      assertTrue(c.epoch() > 2, "a later run, a greater epoch");
      assertEquals(StoreLayout.generationVersionObject(10, 3), commitVisible(c, e, 10, "c").key());
    }
    assertEveryVersionLoads(root, e);
  }

  @Test
  void aZombieOfTheEarlierRunCommittingAfterTheLaterRunIsFencedAndLost() throws Exception {
    String root = root("zombies");
    Expected e = new Expected();
    String runA = UUID.randomUUID().toString();
    String runB = UUID.randomUUID().toString();
    try (SyncedStore a = open(root, runA); SyncedStore early = open(root, runA);
        SyncedStore late = open(root, runA); SyncedStore five = open(root, runA);
        SyncedStore b = open(root, runB)) {
      a.load(0, Optional.empty());
      for (long v = 1; v <= 3; v++) {
        commitVisible(a, e, v, "a");
      }
      // Executors of run A that have not learnt of the restart: one starts version 4 from 3 and
      // stalls; another commits 4 before any later run does (nothing newer exists: visible for
      // now); a third loads that 4 and starts 5.
      late.load(3, Optional.empty());
      late.put(b("zombie"), b("yes"));
      early.load(3, Optional.empty());
      assertEquals(1, early.epoch(), "another executor of run A finds A's epoch");
      commitVisible(early, e, 4, "early");
      five.load(4, Optional.empty());
      five.put(b("zombie"), b("yes"));
      // The restarted query (run B) re-runs from version 3 and commits 4, 5 and 6.
      b.load(3, Optional.empty());
      assertEquals(2, b.epoch());
      for (long v = 4; v <= 6; v++) {
        CommitResult c = commitVisible(b, e, v, "b");
        assertEquals(StoreLayout.generationVersionObject(v, v == 4 ? 2 : 1), c.key(),
            "version 4 supersedes the early zombie's");
      }
      // Now the zombies commit. Version 5: B's object is in place, of a later run: fenced.
      IOException fenced = assertThrows(IOException.class, () -> commit(five, 5, "five"));
      assertTrue(fenced.getMessage().contains("superseded by a later run"), fenced.getMessage());
      assertEquals(-1, five.loadedVersion(), "the zombie's local database is dropped");
      assertEquals(StateLoadException.Reason.FENCED, assertThrows(StateLoadException.class,
          () -> five.load(4, Optional.empty())).reason(), "and it loads nothing any more");
      // Version 4: the early zombie's object of its own run is in place: lost to it, as
      // attempts of one run are (first writer wins), and reported so.
      CommitResult lost = commit(late, 4, "late");
      assertTrue(lost.lostRace(), "the late zombie's commit of 4 is lost");
      assertEquals(-1, late.loadedVersion());
      // The early zombie goes on with version 5 from its warm version 4: fenced too.
      early.load(4, Optional.empty());
      assertThrows(IOException.class, () -> commit(early, 5, "early"));
      // Loads by run A's executors now see run B's commits and refuse.
      assertEquals(StateLoadException.Reason.FENCED, assertThrows(StateLoadException.class,
          () -> late.load(4, Optional.empty())).reason());
      // An executor of run A that only now loads a version run B committed is fenced.
      try (SyncedStore another = open(root, runA)) {
        assertEquals(StateLoadException.Reason.FENCED, assertThrows(StateLoadException.class,
            () -> another.load(5, Optional.empty())).reason());
      }
    }
    assertEveryVersionLoads(root, e);
  }

  @Test
  void attemptsOfOneRunStillRaceFirstWriterWins() throws Exception {
    String root = root("same-run");
    Expected e = new Expected();
    String runA = UUID.randomUUID().toString();
    String runB = UUID.randomUUID().toString();
    try (SyncedStore a = open(root, runA)) {
      a.load(0, Optional.empty());
      for (long v = 1; v <= 3; v++) {
        commitVisible(a, e, v, "a");
      }
    }
    try (SyncedStore first = open(root, runB); SyncedStore speculative = open(root, runB)) {
      first.load(2, Optional.empty());
      speculative.load(2, Optional.empty());
      assertEquals(first.epoch(), speculative.epoch(), "one run, one epoch");
      CommitResult won = commitVisible(first, e, 3, "b");
      CommitResult lost = commit(speculative, 3, "b-speculative");
      assertTrue(lost.lostRace(), "the second attempt of run B loses to the first");
      assertEquals(won.key(), lost.key());
      assertEquals(won.manifest().attempt(), lost.manifest().attempt());
      assertEquals(StoreLayout.generationVersionObject(3, 2), won.key());
    }
    assertEveryVersionLoads(root, e);
  }

  @Test
  void checkpointsWithoutEpochsKeepLoadingAndALaterRunSupersedesThem() throws Exception {
    String root = root("layout-1");
    Expected e = new Expected();
    try (SyncedStore old = open(root, null)) { // as builds before epochs wrote it
      old.load(0, Optional.empty());
      for (long v = 1; v <= 4; v++) {
        CommitResult c = commitVisible(old, e, v, "old");
        assertEquals(StoreLayout.versionObject(v), c.key());
        assertEquals(0, c.manifest().epoch());
        assertEquals(1, c.manifest().formatVersion(), "no epoch: manifest format 1 as before");
      }
    }
    assertEveryVersionLoads(root, e);
    try (SyncedStore run = open(root, UUID.randomUUID().toString())) {
      run.load(2, Optional.empty());
      assertTrue(run.epoch() >= 1);
      CommitResult c = commitVisible(run, e, 3, "new");
      assertEquals(StoreLayout.generationVersionObject(3, 1), c.key());
      assertEquals(3, c.manifest().formatVersion());
    }
    assertEveryVersionLoads(root, e);
  }

  @Test
  void concurrentClaimsGiveEachRunItsOwnEpoch() throws Exception {
    String root = root("claims");
    List<String> runs = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      runs.add(UUID.randomUUID().toString());
    }
    ExecutorService pool = Executors.newFixedThreadPool(8);
    List<SyncedStore> stores = new ArrayList<>();
    try {
      List<Future<Long>> epochs = new ArrayList<>();
      for (int i = 0; i < 8; i++) {
        SyncedStore s = open(root, runs.get(i % 4));
        stores.add(s);
        epochs.add(pool.submit((Callable<Long>) () -> {
          s.load(0, Optional.empty());
          return s.epoch();
        }));
      }
      Map<String, Long> byRun = new HashMap<>();
      Set<Long> distinct = new HashSet<>();
      for (int i = 0; i < 8; i++) {
        long epoch = epochs.get(i).get();
        Long before = byRun.putIfAbsent(runs.get(i % 4), epoch);
        if (before == null) {
          distinct.add(epoch);
        }
        assertEquals(byRun.get(runs.get(i % 4)), epoch, "one epoch per run");
      }
      assertEquals(Set.of(1L, 2L, 3L, 4L), distinct, "epochs 1..4, one per run");
    } finally {
      pool.shutdownNow();
      for (SyncedStore s : stores) {
        s.close();
      }
    }
  }

  @Test
  void garbageCollectionDropsWhatOnlySupersededVersionsNameAndKeepsTheirObjects()
      throws Exception {
    String root = root("gc");
    Expected e = new Expected();
    OffsetClock clock = new OffsetClock();
    try (SyncedStore a = open(root, UUID.randomUUID().toString(), clock, 2)) {
      a.load(0, Optional.empty());
      for (long v = 1; v <= 10; v++) {
        commitVisible(a, e, v, "a");
        a.maintenance(); // base snapshots every 2 versions, published by the next commit
      }
    }
    List<Manifest> supersededManifests = new ArrayList<>();
    Set<String> supersededPublished = new HashSet<>();
    try (SyncedStore reader = open(root, null)) {
      for (long v = 9; v <= 10; v++) {
        supersededManifests.add(reader.readManifest(v, Optional.empty()));
      }
    }
    // Run A's published snapshots of versions 9 and 10 (docs/format.md, "Published snapshots"):
    // only A's lineage passes through them.
    try (ObjectStore o = objects(root)) {
      for (ObjectInfo i : o.list(StoreLayout.PUBLISHED_SNAPSHOTS)) {
        if (StoreLayout.publishedSnapshotVersionOf(i.key()) >= 9) {
          supersededPublished.add(i.key());
          try (java.io.InputStream in = o.get(i.key())) {
            supersededPublished.addAll(Reachability.namedKeys(
                io.strata.format.PublishedSnapshotCodec.decode(in.readAllBytes(), i.key()), i.key()));
          }
        }
      }
    }
    try (SyncedStore b = open(root, UUID.randomUUID().toString(), clock, 1000)) {
      b.load(8, Optional.empty());
      for (long v = 9; v <= 11; v++) {
        commitVisible(b, e, v, "b");
      }
      Set<String> onlySuperseded = new HashSet<>();
      supersededManifests.forEach(m -> onlySuperseded.addAll(Reachability.namedKeys(m)));
      onlySuperseded.addAll(supersededPublished);
      Set<String> visibleNamed = new HashSet<>();
      try (SyncedStore reader = open(root, null)) {
        for (long v = 1; v <= 11; v++) {
          visibleNamed.addAll(Reachability.namedKeys(reader.readManifest(v, Optional.empty())));
        }
      }
      onlySuperseded.removeAll(visibleNamed);
      onlySuperseded.removeIf(k -> StoreLayout.versionOf(k) >= 0); // version objects stay
      // (Run B's load of 8 restored from run A's published snapshot of 8, the base of A's 9 and
      // 10, and B's 9 adopted it: what only A's lineage names is A's snapshot of 10.)
      assertFalse(onlySuperseded.isEmpty(), "run A's published snapshot of version 10 is on "
          + "its superseded lineage only");
      b.awaitLocalIngestion(); // and its first round, which followed its first commit
      clock.advance(GRACE.plusMinutes(1));
      GcStats first = b.collectGarbage(); // the published snapshots no visible version can use
      GcStats second = b.collectGarbage(); // and the files they named (the same round, or later)
      Set<String> left = new HashSet<>();
      try (ObjectStore o = objects(root)) {
        for (ObjectInfo i : o.list("")) {
          left.add(i.key());
        }
      }
      for (String k : onlySuperseded) {
        assertFalse(left.contains(k), k + " (named only by superseded versions) is collected; "
            + "rounds " + first + ", " + second + "; left " + new java.util.TreeSet<>(left));
      }
      for (String k : visibleNamed) {
        assertTrue(left.contains(k), k + " (named by a visible version) is kept");
      }
      for (long v = 9; v <= 10; v++) {
        assertTrue(left.contains(StoreLayout.generationVersionObject(v, 1)), "the superseded "
            + "object of retained version " + v + " stays, so its generation is never free");
      }
      assertNotEquals(0, left.stream().filter(k -> k.startsWith(StoreLayout.RUNS)).count(),
          "the newest run's claim stays");
    }
    assertEveryVersionLoads(root, e);
  }
}
