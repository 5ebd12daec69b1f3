// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import static io.strata.sync.GcWorkload.b;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.engine.SharedMemory;
import io.strata.format.ColumnFamily;
import io.strata.format.Delta;
import io.strata.format.Manifest;
import io.strata.format.RunClaim;
import io.strata.format.StoreLayout;
import io.strata.metrics.GcStats;
import io.strata.objectstore.ObjectInfo;
import io.strata.objectstore.ObjectStore;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link SyncedStore#loadEmpty}: a store rewritten in place (Spark 4.2's offline state
 * repartitioning writes each new partition with {@code getStore(v, loadEmpty = true)}). The
 * empty store reads no version; its commit of {@code v + 1} is self-contained (no base, no delta
 * of a version {@code <= v}); ordinary cold loads of it and of versions built on it, in new
 * instances on fresh local directories, see exactly what was written; garbage collection keeps
 * what they need and collects the old layout; a re-run of the rewrite wins as any re-run does.
 * Subclasses supply the object store: the local filesystem and S3Proxy.
 */
abstract class LoadEmptyContract {
  private static final Duration GRACE = Duration.ofHours(1);

  @TempDir Path tmp;
  private int executors;

  /** A new object store client rooted at {@code root}. */
  abstract ObjectStore objects(String root);

  /** A store root unique to the running test. */
  abstract String root(String test);

  /**
   * A store on a fresh local directory: checkpoint format 2 if {@code attemptKeys}, else format
   * 1 of query run {@code run}; snapshot interval 2, retention {@code retain}.
   */
  private SyncedStore open(String root, String run, boolean attemptKeys, int retain,
      OffsetClock clock) {
    return open(root, run, attemptKeys, retain, clock, 0);
  }

  /** As above; a batch spills above {@code spillBytes} of pending writes (0: never). */
  private SyncedStore open(String root, String run, boolean attemptKeys, int retain,
      OffsetClock clock, long spillBytes) {
    StoreSettings s = new StoreSettings(2, 2, spillBytes, attemptKeys,
        SharedMemory.Limits.DEFAULT, new GcSettings(true, retain, 1, GRACE.toMillis()));
    return new SyncedStore(new StoreIdentity(0, 1, "default", root), objects(root),
        tmp.resolve("exec-" + (executors++)), run == null ? s : s.withRun(run), "{}", "{}",
        clock);
  }

  private SyncedStore open(String root, String run) {
    return open(root, run, false, 100, new OffsetClock());
  }

  private static String run() {
    return UUID.randomUUID().toString();
  }

  /** Versions 1..5 of the old layout (one query run), with base snapshots; their states. */
  private Map<Long, TreeMap<String, String>> oldLayout(String root, boolean attemptKeys,
      Map<Long, String> attempts) throws IOException {
    Map<Long, TreeMap<String, String>> states = new HashMap<>();
    states.put(0L, new TreeMap<>());
    try (SyncedStore a = open(root, attemptKeys ? null : run(), attemptKeys, 100,
        new OffsetClock())) {
      a.load(0, Optional.empty());
      for (long v = 1; v <= 5; v++) {
        states.put(v, GcWorkload.write(a, states.get(v - 1), v, "old"));
        attempts.put(v, a.commit().manifest().attempt());
        a.awaitLocalIngestion();
        a.maintenance();
        assertTrue(a.awaitSnapshotUpload(30_000), "snapshot upload");
      }
      assertTrue(a.loadedManifest().orElseThrow().base().isPresent(),
          "the old layout has a base snapshot");
    }
    return states;
  }

  /** Writes {@code rows} into {@code s} and adds them to {@code state}. */
  private static void write(SyncedStore s, Map<String, String> state, Map<String, String> rows)
      throws IOException {
    for (Map.Entry<String, String> e : rows.entrySet()) {
      s.put(b(e.getKey()), b(e.getValue()));
      state.put(e.getKey(), e.getValue());
    }
  }

  /** A key of family {@code f}, as the Spark layer writes it (the family's id first). */
  private static byte[] familyKey(ColumnFamily f, String key) {
    byte[] p = f.keyPrefix();
    byte[] k = b(key);
    byte[] out = new byte[p.length + k.length];
    System.arraycopy(p, 0, out, 0, p.length);
    System.arraycopy(k, 0, out, p.length, k.length);
    return out;
  }

  private static String text(byte[] bytes) {
    return new String(bytes, StandardCharsets.UTF_8);
  }

  /** The published snapshots ({@code b/}) in the store. */
  private long published(String root) throws IOException {
    try (ObjectStore o = objects(root)) {
      return o.list(StoreLayout.PUBLISHED_SNAPSHOTS).size();
    }
  }

  /** Asserts that {@code m} names nothing of a version at or below {@code openedAt}. */
  private static void assertSelfContained(Manifest m, long openedAt) {
    assertEquals(openedAt, m.parentVersion(), "parent version");
    assertEquals(Optional.empty(), m.parentAttempt(), "no parent attempt: the empty state");
    assertEquals(Optional.empty(), m.base(), "no base snapshot");
    for (Delta d : m.deltas()) {
      assertTrue(d.version() > openedAt, "delta of version " + d.version() + " in " + m);
    }
  }

  /**
   * The brief's scenario (checkpoint format 1, query runs as Spark's writer makes them): a store
   * with versions 1..5 (base snapshots, published snapshots) is opened empty at 5 by a new run;
   * rows and a column family are written and committed as 6; a cold load of 6 in a new instance
   * on a fresh local directory holds exactly those rows; 7 is committed on top, by the run that
   * resumes; a garbage-collection round (retention 1, every old object past the grace period)
   * deletes the old layout and keeps what 6 and 7 need, which still load cold.
   */
  @Test
  void rewritesAStoreWithFiveVersionsAsASelfContainedSixthThatLaterVersionsBuildOn()
      throws Exception {
    String root = root("rewrite");
    Map<Long, TreeMap<String, String>> old = oldLayout(root, false, new HashMap<>());
    TreeMap<String, String> six = new TreeMap<>();
    Manifest m6;
    ColumnFamily family;
    try (SyncedStore w = open(root, run())) {
      w.loadEmpty(5);
      assertEquals(5, w.loadedVersion());
      assertEquals(Optional.empty(), w.loadedManifest(), "nothing was read");
      assertEquals(0, w.numKeys());
      family = w.createColumnFamily("$ttl_cf", true);
      write(w, six, Map.of("k-1", "one", "k-2", "two", "hot-3", "rewritten"));
      w.put(familyKey(family, "in-family"), b("f"));
      six.put(text(familyKey(family, "in-family")), "f");
      CommitResult c = w.commit();
      m6 = c.manifest();
      assertEquals(6, m6.version());
      assertEquals(StoreLayout.generationVersionObject(6, 1), c.key(), "a first generation");
      assertTrue(m6.epoch() > 0, "committed under the writer run's epoch");
      assertSelfContained(m6, 5);
      assertEquals(List.of(6L), m6.deltas().stream().map(Delta::version).toList());
      assertEquals(Optional.of(family), m6.columnFamilies().byName("$ttl_cf"));
      assertEquals(4, m6.numKeys());
    }
    String resumed = run();
    TreeMap<String, String> seven = new TreeMap<>(six);
    try (SyncedStore r = open(root, resumed)) {
      r.load(6, Optional.empty());
      assertTrue(r.lastRestore().bytesDownloaded() > 0, "a cold load");
      GcWorkload.assertState(r, six, "version 6 in a new instance: only the rewritten rows");
      assertEquals(Optional.of(family), r.columnFamilies().byName("$ttl_cf"));
      write(r, seven, Map.of("k-3", "three", "k-1", "one again"));
      r.delete(b("k-2"));
      seven.remove("k-2");
      Manifest m7 = r.commit().manifest();
      assertEquals(Optional.of(m6.attempt()), m7.parentAttempt());
      assertEquals(List.of(6L, 7L), m7.deltas().stream().map(Delta::version).toList());
      assertEquals(Optional.empty(), m7.base());
    }
    for (long v : new long[] {6, 7}) {
      try (SyncedStore reader = open(root, null)) {
        reader.load(v, Optional.empty(), true);
        GcWorkload.assertState(reader, v == 6 ? six : seven, "cold load of version " + v);
      }
    }
    // Garbage collection by the resumed run (retention 1: versions 6 and 7), with every object
    // older than the grace period: the old layout goes, what 6 and 7 name stays.
    OffsetClock late = new OffsetClock();
    late.advance(GRACE.multipliedBy(2));
    try (SyncedStore r = open(root, resumed, false, 1, late);
        ObjectStore objects = objects(root)) {
      r.load(7, Optional.empty());
      // A snapshot the cold load scheduled is published before the round: one still uploading
      // keeps its files, unnamed yet, which the check below would count as left over.
      assertTrue(r.awaitSnapshotUpload(60_000), "the load's snapshot upload finished");
      r.collectGarbage();
      Set<String> runs = new HashSet<>();
      for (ObjectInfo o : objects.list(StoreLayout.RUNS)) {
        runs.add(o.key());
      }
      GcWorkload.assertOnlyRetainedAndNamedRemain(r, objects, 7, 1, runs);
      for (ObjectInfo o : objects.list("")) {
        long v = StoreLayout.versionOf(o.key());
        assertTrue(v < 0 || v >= 6, "old version object left: " + o.key());
      }
      assertFalse(old.isEmpty());
    }
    for (long v : new long[] {6, 7}) {
      try (SyncedStore reader = open(root, null)) {
        reader.load(v, Optional.empty(), true);
        GcWorkload.assertState(reader, v == 6 ? six : seven, "after GC: version " + v);
      }
    }
  }

  /**
   * A location with no objects at all (a partition a repartition adds): the empty open reads
   * nothing, the commit writes the one version, a commit without writes too.
   */
  @Test
  void opensEmptyWhereNothingWasEverWritten() throws Exception {
    String root = root("nothing");
    try (ObjectStore objects = objects(root)) {
      assertEquals(List.of(), objects.list(""));
    }
    try (SyncedStore w = open(root, null)) {
      w.loadEmpty(7);
      Manifest m = w.commit().manifest();
      assertEquals(8, m.version());
      assertSelfContained(m, 7);
      assertEquals(List.of(), m.deltas(), "no writes, no delta");
    }
    try (SyncedStore r = open(root, null)) {
      r.load(8, Optional.empty());
      GcWorkload.assertState(r, Map.of(), "an empty version 8");
      r.put(b("a"), b("1"));
      assertEquals(9, r.commit().manifest().version());
    }
    try (SyncedStore r = open(root, null)) {
      r.load(9, Optional.empty(), true);
      GcWorkload.assertState(r, Map.of("a", "1"), "version 9 built on the empty 8");
      assertThrows(StateLoadException.class, () -> r.load(7, Optional.empty(), true),
          "version 7 was never committed here");
    }
  }

  /**
   * The lineage of a rewritten store starts at the version it was opened at: with snapshots
   * started by commits (interval 2), the commit of 6 (one delta holding the whole state) starts
   * none, the commit of 7 (two versions later) does, as after a base snapshot of 5.
   */
  @Test
  void theLineageStartsWhereTheStoreWasOpenedForSnapshotsAtCommit() throws Exception {
    String root = root("snapshots");
    oldLayout(root, false, new HashMap<>());
    StoreSettings s = new StoreSettings(2, 2, 0, false, SharedMemory.Limits.DEFAULT,
        new GcSettings(true, 100, 1, GRACE.toMillis())).withRun(run()).withSnapshotOnCommit(true);
    long before = published(root);
    try (SyncedStore w = new SyncedStore(new StoreIdentity(0, 1, "default", root),
        objects(root), tmp.resolve("exec-" + (executors++)), s, "{}", "{}", new OffsetClock())) {
      w.loadEmpty(5);
      w.put(b("x"), b("6"));
      assertEquals(6, w.commit().manifest().version());
      w.awaitLocalIngestion();
      assertTrue(w.awaitSnapshotUpload(30_000));
      assertEquals(before, published(root), "no snapshot of a one-delta lineage");
      w.put(b("x"), b("7"));
      assertEquals(7, w.commit().manifest().version());
      w.awaitLocalIngestion();
      assertTrue(w.awaitSnapshotUpload(30_000));
      assertEquals(before + 1, published(root), "interval reached: a snapshot of 7");
      w.put(b("x"), b("8"));
      Manifest m8 = w.commit().manifest();
      assertEquals(7L, m8.base().orElseThrow().version(), "8 is built on the snapshot of 7");
    }
  }

  /**
   * A whole partition's state arrives in one version: a large rewrite spills while it is
   * written, and the commit's manifest names its spill deltas (all of version 6) before its own
   * delta, nothing older; a cold load holds every row.
   */
  @Test
  void aLargeRewriteSpillsAndStaysSelfContained() throws Exception {
    String root = root("spill");
    oldLayout(root, false, new HashMap<>());
    StoreSettings s = new StoreSettings(2, 2, 2048, false, SharedMemory.Limits.DEFAULT,
        new GcSettings(true, 100, 1, GRACE.toMillis())).withRun(run());
    TreeMap<String, String> six = new TreeMap<>();
    try (SyncedStore w = new SyncedStore(new StoreIdentity(0, 1, "default", root),
        objects(root), tmp.resolve("exec-" + (executors++)), s, "{}", "{}", new OffsetClock())) {
      w.loadEmpty(5);
      for (int i = 0; i < 200; i++) {
        w.put(b("row-" + i), b("value-" + i + "-" + "x".repeat(40)));
        six.put("row-" + i, "value-" + i + "-" + "x".repeat(40));
      }
      Manifest m = w.commit().manifest();
      assertSelfContained(m, 5);
      assertTrue(m.deltas().size() > 2, "spilled at least twice: " + m.deltas());
      for (Delta d : m.deltas()) {
        assertEquals(6, d.version());
        assertEquals(m.attempt(), d.attempt());
      }
    }
    try (SyncedStore r = open(root, null)) {
      r.load(6, Optional.empty(), true);
      GcWorkload.assertState(r, six, "every row of the spilled rewrite");
    }
  }

  /**
   * Checkpoint format 2: the commit's attempt id is new (Spark's new checkpoint id), the
   * manifest names no parent attempt (Spark's base checkpoint id: none); a load by that id, and
   * a version built on it, load cold; a retried rewrite writes its own attempt, and each id
   * loads its own state (the driver's commit log names the winner).
   */
  @Test
  void checkpointFormat2IssuesAFreshAttemptWithNoBase() throws Exception {
    String root = root("format2");
    Map<Long, String> oldAttempts = new HashMap<>();
    oldLayout(root, true, oldAttempts);
    String first;
    try (SyncedStore w = open(root, null, true, 100, new OffsetClock())) {
      w.loadEmpty(5);
      w.put(b("x"), b("first"));
      Manifest m = w.commit().manifest();
      first = m.attempt();
      assertSelfContained(m, 5);
      assertFalse(oldAttempts.containsValue(first));
      assertEquals(0, m.epoch());
    }
    String retry;
    try (SyncedStore w = open(root, null, true, 100, new OffsetClock())) {
      w.loadEmpty(5);
      w.put(b("x"), b("retry"));
      retry = w.commit().manifest().attempt();
      assertNotEquals(first, retry);
    }
    try (SyncedStore r = open(root, null, true, 100, new OffsetClock())) {
      r.load(6, Optional.of(first));
      GcWorkload.assertState(r, Map.of("x", "first"), "the first attempt");
      r.load(6, Optional.of(retry));
      GcWorkload.assertState(r, Map.of("x", "retry"), "the retry");
      r.put(b("y"), b("7"));
      Manifest m7 = r.commit().manifest();
      assertEquals(Optional.of(retry), m7.parentAttempt());
    }
    try (SyncedStore r = open(root, null, true, 100, new OffsetClock())) {
      r.load(7, Optional.empty(), true);
      GcWorkload.assertState(r, Map.of("x", "retry", "y", "7"), "version 7, cold");
    }
  }

  /**
   * Re-runs (checkpoint format 1): Spark's writer gives every task attempt a new query run, so a
   * retried rewrite claims a later epoch and its version wins (the next generation over an
   * earlier run's); an attempt of an earlier run that commits after a later run did is fenced;
   * a second attempt of one run loses to the first (first writer wins, as for any version).
   * Loads read the winner.
   */
  @Test
  void aRetriedRewriteInALaterRunWinsAndALateAttemptOfAnEarlierRunIsFenced()
      throws Exception {
    String root = root("retry");
    oldLayout(root, false, new HashMap<>());
    try (SyncedStore zombie = open(root, run());
        SyncedStore w = open(root, run())) {
      zombie.loadEmpty(5); // the first attempt: its run claims its epoch first, commits last
      zombie.put(b("x"), b("zombie"));
      w.loadEmpty(5);
      w.put(b("x"), b("first"));
      assertEquals(StoreLayout.generationVersionObject(6, 1), w.commit().key());
      IOException e = assertThrows(IOException.class, zombie::commit);
      assertTrue(e.getMessage().contains("superseded"), e.getMessage());
    }
    try (SyncedStore r = open(root, null)) {
      r.load(6, Optional.empty(), true);
      GcWorkload.assertState(r, Map.of("x", "first"), "the later run's version");
    }
    String retry = run();
    try (SyncedStore a = open(root, retry);
        SyncedStore b = open(root, retry)) {
      a.loadEmpty(5);
      a.put(b("x"), b("retry-a"));
      b.loadEmpty(5);
      b.put(b("x"), b("retry-b"));
      CommitResult c = a.commit();
      assertFalse(c.lostRace());
      assertEquals(StoreLayout.generationVersionObject(6, 2), c.key(), "the next generation");
      assertTrue(b.commit().lostRace(), "a second attempt of one run adopts the first");
    }
    try (SyncedStore r = open(root, null)) {
      r.load(6, Optional.empty(), true);
      GcWorkload.assertState(r, Map.of("x", "retry-a"), "the retry's first attempt wins");
    }
  }

  /**
   * Garbage collection by an earlier query run's instance while a rewrite runs (checkpoint
   * format 1; docs/format.md, "What a stale or concurrent instance can delete"). The empty open
   * at 5 claims the writer run's epoch with {@code loadsVersion} 5, the version it stands at:
   * it reads nothing of 5, but its batch in flight is version 6, and an earlier run's instance
   * that collects past a later claim keeps, of the spill deltas, only those of the version after
   * the claim's {@code loadsVersion} (and after what later runs committed). Here the earlier
   * run's instance (retention 2) goes on committing 6 to 8 and collecting while the rewrite has
   * spilled and not committed; its rounds collect again (5 stays, and what it names) but keep
   * the rewrite's spills, so the rewrite's commit of 6 (the next generation over the earlier
   * run's) loads cold with exactly its rows. A claim recording 6 would let those spills go,
   * though the commit names them; one recording nothing stops the earlier run's collection.
   */
  @Test
  void anEarlierRunCollectingDuringARewriteKeepsTheRewritesSpills() throws Exception {
    String root = root("earlier-run-gc");
    OffsetClock clock = new OffsetClock();
    Map<Long, TreeMap<String, String>> a = new HashMap<>();
    a.put(0L, new TreeMap<>());
    String writer = run();
    TreeMap<String, String> six = new TreeMap<>();
    try (SyncedStore earlier = open(root, run(), false, 2, clock);
        ObjectStore objects = objects(root)) {
      earlier.load(0, Optional.empty());
      for (long v = 1; v <= 5; v++) {
        commitCollecting(earlier, a, v);
      }
      Thread.sleep(1_100); // the earlier run's objects settle before its next roots
      try (SyncedStore w = open(root, writer, false, 2, clock, 2048)) {
        w.loadEmpty(5);
        assertEquals(5, claimOf(objects, writer).loadsVersion(),
            "the empty open's claim records the version it stands at");
        for (int i = 0; i < 100; i++) { // spills several times (2 KiB threshold)
          String value = "r".repeat(100) + i;
          w.put(b("row-" + i), b(value));
          six.put("row-" + i, value);
        }
        assertFalse(objects.list(StoreLayout.SPILLS).isEmpty(), "the rewrite spilled");
        Thread.sleep(1_100); // the spills settle before the earlier run's next rounds
        assertEquals(-1, earlier.collectGarbage().oldestRetainedVersion(),
            "sees the writer's claim: skips");
        GcStats last = GcStats.NONE;
        for (long v = 6; v <= 8; v++) {
          last = commitCollecting(earlier, a, v);
        }
        assertEquals(6, last.oldestRetainedVersion(),
            "past the claim the earlier run collects again, by its own retention");
        assertTrue(versionObjects(objects).containsAll(List.of(5L, 6L, 7L, 8L)),
            "5 (the claim's loadsVersion) and the retained 6..8 stay");
        CommitResult c = w.commit();
        assertEquals(StoreLayout.generationVersionObject(6, 2), c.key(), "the next generation");
        assertSelfContained(c.manifest(), 5);
        assertTrue(c.manifest().deltas().size() > 1, "names its spills: " + c.manifest());
      }
    }
    try (SyncedStore r = open(root, null)) {
      r.load(6, Optional.empty(), true);
      GcWorkload.assertState(r, six, "the rewrite's spilled version 6, cold");
    }
  }

  /** Commits version {@code v} on {@code v - 1}'s state, snapshots it; the round after. */
  private static GcStats commitCollecting(SyncedStore s, Map<Long, TreeMap<String, String>> states,
      long v) throws Exception {
    states.put(v, GcWorkload.write(s, states.get(v - 1), v, "a"));
    s.commit();
    s.awaitLocalIngestion();
    s.maintenance();
    assertTrue(s.awaitSnapshotUpload(30_000), "snapshot upload");
    return s.collectGarbage();
  }

  /** The claim of query run {@code run} under {@code runs/}. */
  private static RunClaim claimOf(ObjectStore objects, String run) throws Exception {
    for (ObjectInfo o : objects.list(StoreLayout.RUNS)) {
      if (StoreLayout.claimEpochOf(o.key()) > 0) {
        try (InputStream in = objects.get(o.key())) {
          RunClaim c = RunClaim.decode(in.readAllBytes());
          if (c.runId().equals(run)) {
            return c;
          }
        }
      }
    }
    throw new AssertionError("no claim of run " + run);
  }

  /** The versions that have a version object in the store. */
  private static Set<Long> versionObjects(ObjectStore objects) throws IOException {
    Set<Long> out = new TreeSet<>();
    for (ObjectInfo o : objects.list(StoreLayout.VERSIONS)) {
      if (StoreLayout.versionOf(o.key()) >= 0) {
        out.add(StoreLayout.versionOf(o.key()));
      }
    }
    return out;
  }

  /**
   * An empty open that is not committed is never taken for the version: a load of that version
   * afterwards on the same instance restores it (here after the instance held it warm).
   */
  @Test
  void anUncommittedEmptyOpenIsNeverTakenForTheVersion() throws Exception {
    String root = root("abort");
    Map<Long, TreeMap<String, String>> old = oldLayout(root, false, new HashMap<>());
    try (SyncedStore s = open(root, run())) {
      s.load(5, Optional.empty());
      GcWorkload.assertState(s, old.get(5L), "version 5");
      s.loadEmpty(5);
      s.put(b("x"), b("never"));
      GcWorkload.assertState(s, Map.of("x", "never"), "the empty store's own write");
      s.abort();
      s.load(5, Optional.empty());
      assertTrue(s.lastRestore().bytesDownloaded() > 0, "restored, not reused");
      GcWorkload.assertState(s, old.get(5L), "version 5 again");
      assertThrows(IllegalArgumentException.class, () -> s.loadEmpty(-1));
    }
  }
}
