// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.engine.SharedMemory;
import io.strata.format.Manifest;
import io.strata.format.PublishedSnapshot;
import io.strata.format.PublishedSnapshotCodec;
import io.strata.format.Reachability;
import io.strata.format.StoreLayout;
import io.strata.metrics.GcStats;
import io.strata.metrics.RestoreStats;
import io.strata.objectstore.ObjectInfo;
import io.strata.objectstore.ObjectStore;
import io.strata.objectstore.ObjectStores;
import io.strata.objectstore.RequestListener;
import io.strata.objectstore.S3Settings;
import io.strata.testkit.S3ProxyServer;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Published snapshots (docs/format.md, "Published snapshots") on a real S3-compatible server
 * (S3Proxy): one-batch runs on fresh instances keep the chain a cold load replays short; a
 * snapshot is adopted by a commit that comes longer than the grace period after it; a snapshot of a version a
 * later query run re-committed is never used; garbage collection keeps a published snapshot while
 * a retained version can use it and deletes it (then its files, in a later round) after; a load
 * whose published snapshot lost or damaged a file falls back to its manifest's own chain.
 */
class PublishedSnapshotsIT {
  private static final String BUCKET = "published";
  private static final int INTERVAL = 5;

  private static Path work;
  private static S3ProxyServer server;
  private static S3Settings s3;

  @BeforeAll
  static void start() throws Exception {
    work = Files.createTempDirectory("strata-published-it");
    server = S3ProxyServer.start(work.resolve("s3"), Map.of());
    server.createBucket(BUCKET);
    s3 = new S3Settings(Optional.of(server.endpoint()), "us-east-1", true,
        Optional.of(S3ProxyServer.ACCESS_KEY), Optional.of(S3ProxyServer.SECRET_KEY),
        Optional.empty(), 3, Duration.ofSeconds(30), Duration.ofSeconds(10), 8);
  }

  @AfterAll
  static void stop() {
    if (server != null) {
      server.close();
    }
  }

  private static String location(String name) {
    return "s3://" + BUCKET + "/" + name + "/state/0/0";
  }

  private static SyncedStore open(String name, String local, GcSettings gc, OffsetClock clock,
      String run) {
    ObjectStore objects = ObjectStores.open(location(name), s3, RequestListener.NONE);
    StoreSettings settings =
        new StoreSettings(INTERVAL, 4, 0, false, SharedMemory.Limits.DEFAULT, gc);
    return new SyncedStore(new StoreIdentity(0, 0, "default", location(name)), objects,
        work.resolve(local + "-" + UUID.randomUUID()),
        run == null ? settings : settings.withRun(run), "{}", "{}", clock);
  }

  private static SyncedStore open(String name, String local) {
    return open(name, local, GcSettings.DEFAULT, new OffsetClock(), null);
  }

  private static ObjectStore objects(String name) {
    return ObjectStores.open(location(name), s3, RequestListener.NONE);
  }

  private static List<String> keys(String name, String prefix) throws Exception {
    try (ObjectStore o = objects(name)) {
      List<String> out = new ArrayList<>();
      for (ObjectInfo i : o.list(prefix)) {
        out.add(i.key());
      }
      return out;
    }
  }

  private static PublishedSnapshot read(String name, String key) throws Exception {
    try (ObjectStore o = objects(name); InputStream in = o.get(key)) {
      return PublishedSnapshotCodec.decode(in.readAllBytes(), key);
    }
  }

  /** Commits versions {@code from..to} on {@code s}, returning the expected state. */
  private static TreeMap<String, String> commit(SyncedStore s, Map<String, String> state,
      long from, long to, String tag) throws Exception {
    TreeMap<String, String> next = new TreeMap<>(state);
    for (long v = from; v <= to; v++) {
      next = GcWorkload.write(s, next, v, tag);
      s.commit();
    }
    return next;
  }

  /**
   * (a) 50 one-batch runs, each a fresh instance on a fresh local directory: a cold load, one
   * commit, close. No instance ever commits twice, so only published snapshots (and the
   * snapshot a long cold load schedules, published before close returns) shorten the chain.
   */
  @Test
  void oneBatchRunsOnFreshInstancesKeepTheReplayedChainShort() throws Exception {
    TreeMap<String, String> state = new TreeMap<>();
    List<Long> chains = new ArrayList<>();
    int fromPublished = 0;
    for (long v = 0; v < 50; v++) {
      try (SyncedStore s = open("one-batch", "run-" + v)) {
        s.load(v, Optional.empty());
        RestoreStats r = s.lastRestore();
        if (v > 0) {
          assertTrue(r.filesDownloaded() > 0, "a cold load of " + v);
          chains.add(r.deltasReplayed());
          assertTrue(r.deltasReplayed() <= INTERVAL + 2, "the chain replayed by the cold load of "
              + v + ": " + r);
          fromPublished += r.fromPublishedSnapshot() ? 1 : 0;
        }
        GcWorkload.assertState(s, state, "version " + v + " after a cold load");
        state = GcWorkload.write(s, state, v + 1, "a");
        CommitResult c = s.commit();
        assertTrue(c.manifest().deltaChainLength() <= INTERVAL + 2,
            "the chain of the manifest of " + (v + 1) + ": " + c.manifest().deltaChainLength());
      }
    }
    System.out.println("PublishedSnapshotsIT (a): chains replayed by cold loads of 1..49: "
        + chains + "; " + fromPublished + " restored from a published snapshot");
    // Every snapshot a long cold load scheduled serves the next cold load; the commit after it
    // adopts it as its manifest's base, which serves the loads after that.
    assertTrue(fromPublished >= 8, "cold loads restored from a published snapshot: " + chains);
    assertEquals(INTERVAL, chains.stream().mapToLong(Long::longValue).max().orElseThrow(),
        "the longest chain is the one that schedules a snapshot: " + chains);
    try (SyncedStore s = open("one-batch", "verify")) {
      s.load(50, Optional.empty());
      GcWorkload.assertState(s, state, "version 50");
    }
  }

  /**
   * (b) Commits further apart than the grace period (a long trigger): the next commit still
   * names the published snapshot as its manifest's base (so manifests stay short and maintenance
   * uploads no new snapshot), a garbage-collection round after the grace period keeps the
   * snapshot's files, and a cold load restores from it with one delta.
   */
  @Test
  void aSnapshotIsAdoptedByACommitLongerThanTheGracePeriodAfterIt() throws Exception {
    GcSettings gc = new GcSettings(true, 100, 1, 60_000);
    OffsetClock clock = new OffsetClock();
    TreeMap<String, String> state;
    try (SyncedStore a = open("gap", "a", gc, clock, null)) {
      a.load(0, Optional.empty());
      state = commit(a, new TreeMap<>(), 1, 6, "b");
      assertTrue(a.snapshotNow(), "a snapshot of version 6");
      assertEquals(1, keys("gap", StoreLayout.PUBLISHED_SNAPSHOTS).size());
      clock.advance(Duration.ofSeconds(120)); // beyond the grace period
      a.collectGarbage();
      state = commit(a, state, 7, 7, "b");
      Manifest m7 = a.loadedManifest().orElseThrow();
      assertEquals(6, m7.base().orElseThrow().version(),
          "the published snapshot is the base of the next commit, however late: " + m7.base());
      assertEquals(1, m7.deltaChainLength());
      clock.advance(Duration.ofSeconds(120)); // every object is now older than the grace period
      a.collectGarbage();
    }
    try (SyncedStore b = open("gap", "b", gc, new OffsetClock(), null)) {
      b.load(7, Optional.empty());
      RestoreStats r = b.lastRestore();
      assertEquals(6, r.baseVersion(), "restored from the base snapshot of version 6: " + r);
      assertEquals(1, r.deltasReplayed());
      GcWorkload.assertState(b, state, "version 7");
    }
  }

  /**
   * (c) Checkpoint format 1: run A commits 1..6 and publishes a snapshot of 6; run B rewinds to
   * 5 and re-commits 6 and 7 with other writes. A cold load of 6 or 7 on B's lineage never uses
   * A's snapshot of 6.
   */
  @Test
  void aSnapshotOfASupersededVersionIsNeverUsed() throws Exception {
    OffsetClock clock = new OffsetClock();
    TreeMap<String, String> at5;
    try (SyncedStore a = open("rerun", "a", GcSettings.DEFAULT, clock, "run-a")) {
      a.load(0, Optional.empty());
      at5 = commit(a, new TreeMap<>(), 1, 5, "a");
      commit(a, at5, 6, 6, "a");
      assertTrue(a.snapshotNow(), "a snapshot of version 6");
    }
    String snapshotOf6 = keys("rerun", StoreLayout.PUBLISHED_SNAPSHOTS).stream()
        .filter(k -> StoreLayout.publishedSnapshotVersionOf(k) == 6).findFirst().orElseThrow();
    TreeMap<String, String> state;
    try (SyncedStore b = open("rerun", "b", GcSettings.DEFAULT, clock, "run-b")) {
      b.load(5, Optional.empty());
      state = commit(b, at5, 6, 7, "B");
    }
    for (long v = 6; v <= 7; v++) {
      try (SyncedStore c = open("rerun", "c" + v, GcSettings.DEFAULT, clock, "run-b")) {
        c.load(v, Optional.empty());
        RestoreStats r = c.lastRestore();
        assertFalse(r.fromPublishedSnapshot() && r.baseVersion() == 6,
            "A's snapshot of 6 (" + snapshotOf6 + ") is not on B's lineage: " + r);
        assertFalse(read("rerun", snapshotOf6).usableBy(c.loadedManifest().orElseThrow()));
        if (v == 7) {
          GcWorkload.assertState(c, state, "run B's version 7");
        }
      }
    }
  }

  /**
   * (f) An upload that took half the grace period or more, from its checkpoint to its
   * publication, is published for the loads but no commit adopts it: a round that listed before
   * the publication may have found its first files old and unnamed.
   */
  @Test
  void aSnapshotThatTookHalfTheGracePeriodToUploadIsPublishedButNotAdopted() throws Exception {
    GcSettings gc = new GcSettings(true, 100, 1, 60_000);
    OffsetClock clock = new OffsetClock();
    TreeMap<String, String> state;
    try (SyncedStore a = open("slow", "a", gc, clock, null)) {
      a.load(0, Optional.empty());
      state = commit(a, new TreeMap<>(), 1, 6, "s");
      clock.advanceOnEveryRead(Duration.ofSeconds(31)); // each step of the upload "takes" 31 s
      try {
        assertTrue(a.snapshotNow(), "a snapshot of version 6");
      } finally {
        clock.advanceOnEveryRead(Duration.ZERO);
      }
      assertEquals(1, keys("slow", StoreLayout.PUBLISHED_SNAPSHOTS).size(), "published");
      state = commit(a, state, 7, 7, "s");
      assertTrue(a.loadedManifest().orElseThrow().base().isEmpty(),
          "no commit adopts a snapshot whose upload took half the grace period");
    }
    try (SyncedStore b = open("slow", "b", gc, new OffsetClock(), null)) {
      b.load(7, Optional.empty());
      RestoreStats r = b.lastRestore();
      assertTrue(r.fromPublishedSnapshot(), "a cold load still restores from it: " + r);
      assertEquals(1, r.deltasReplayed());
      GcWorkload.assertState(b, state, "version 7");
    }
  }

  /**
   * (d) Garbage collection: a published snapshot no manifest names (another instance published
   * it) stays, with its files, while a retained version can use it, even past the grace period,
   * and goes once none can; its files only in a later round; nothing a retained manifest names
   * is ever deleted.
   */
  @Test
  void garbageCollectionKeepsAPublishedSnapshotWhileUsable() throws Exception {
    GcSettings gc = new GcSettings(true, 3, 1, 60_000);
    OffsetClock clock = new OffsetClock();
    TreeMap<String, String> state;
    SyncedStore other = open("gc", "other", gc, clock, null);
    try (SyncedStore a = open("gc", "a", gc, clock, null)) {
      try {
        other.load(0, Optional.empty());
        state = commit(other, new TreeMap<>(), 1, 4, "d");
        a.load(4, Optional.empty()); // a short chain: schedules no snapshot of its own
        assertTrue(other.snapshotNow(), "another instance's snapshot of version 4");
      } finally {
        other.close();
      }
      String first = keys("gc", StoreLayout.PUBLISHED_SNAPSHOTS).get(0);
      Set<String> firstFiles = Reachability.namedKeys(read("gc", first), first);
      state = commit(a, state, 5, 9, "d");
      assertTrue(a.loadedManifest().orElseThrow().base().isEmpty(),
          "a never saw it: its manifests name no base");
      clock.advance(Duration.ofSeconds(120));
      a.collectGarbage();
      assertTrue(keys("gc", StoreLayout.PUBLISHED_SNAPSHOTS).contains(first),
          "usable by the retained versions 6..9: kept past the grace period");
      assertAllPresent(firstFiles, "the files of a usable published snapshot");
      assertRetainedLoad(gc, 9, 3);

      // A newer snapshot becomes the base of every retained version: the first is of no use.
      assertTrue(a.snapshotNow(), "a snapshot of version 9");
      state = commit(a, state, 10, 13, "d");
      assertEquals(9, a.loadedManifest().orElseThrow().base().orElseThrow().version());
      clock.advance(Duration.ofSeconds(120));
      GcStats round1 = a.collectGarbage();
      assertFalse(keys("gc", StoreLayout.PUBLISHED_SNAPSHOTS).contains(first),
          "no retained version can use it: deleted (" + round1 + ")");
      Set<String> onlyFirst = new HashSet<>(firstFiles);
      for (long v = 10; v <= 13; v++) {
        onlyFirst.removeAll(Reachability.namedKeys(a.readManifest(v, Optional.empty())));
      }
      assertFalse(onlyFirst.isEmpty(), "the first snapshot has a pack of its own");
      // Issue 43: the files only it named went with it, after it, in the same round.
      for (String k : onlyFirst) {
        assertFalse(keys("gc", k).contains(k), k + " is deleted with it (" + round1 + ")");
      }
      assertRetainedLoad(gc, 13, 3);
      try (ObjectStore o = objects("gc")) {
        GcWorkload.assertOnlyRetainedAndNamedRemain(a, o, 13, 3, Set.of());
      }
      GcWorkload.assertState(a, state, "version 13");
    }
  }

  private static void assertAllPresent(Set<String> keys, String what) throws Exception {
    for (String k : keys) {
      assertTrue(keys("gc", k).contains(k), what + ": " + k);
    }
  }

  private static void assertRetainedLoad(GcSettings gc, long newest, int retain)
      throws Exception {
    for (long v = newest - retain; v <= newest; v++) {
      try (SyncedStore fresh = open("gc", "verify-" + v, gc, new OffsetClock(), null)) {
        fresh.load(v, Optional.empty());
        assertTrue(fresh.lastRestore().filesDownloaded() > 0, "a cold load of " + v);
      }
    }
  }

  /**
   * (e) A published snapshot whose pack was deleted, or whose SST is corrupt: the load falls back
   * to the manifest's own chain and the state is exact.
   */
  @Test
  void aLoadFallsBackWhenAPublishedSnapshotsFileIsGoneOrCorrupt() throws Exception {
    for (String damage : List.of("deleted", "corrupt")) {
      String name = "fallback-" + damage;
      TreeMap<String, String> state;
      try (SyncedStore a = open(name, "a")) {
        a.load(0, Optional.empty());
        state = commit(a, new TreeMap<>(), 1, 6, "e");
        assertTrue(a.snapshotNow(), "a snapshot of version 6");
      }
      String key = keys(name, StoreLayout.PUBLISHED_SNAPSHOTS).get(0);
      PublishedSnapshot p = read(name, key);
      var victim = p.files().stream().filter(f -> f.name().equals("CURRENT")).findFirst()
          .orElseThrow().file();
      if (damage.equals("deleted")) {
        try (ObjectStore o = objects(name)) {
          o.delete(List.of(victim.key()));
        }
      } else {
        Path blob = server.dataDir().resolve(BUCKET).resolve(name + "/state/0/0/" + victim.key());
        byte[] bytes = Files.readAllBytes(blob);
        bytes[(int) victim.offset()] ^= 0x01;
        Files.write(blob, bytes);
      }
      try (SyncedStore b = open(name, "b")) {
        b.load(6, Optional.empty());
        RestoreStats r = b.lastRestore();
        assertFalse(r.fromPublishedSnapshot(), damage + ": restored from the manifest: " + r);
        assertEquals(6, r.deltasReplayed());
        GcWorkload.assertState(b, state, "version 6 (" + damage + " snapshot file)");
      }
    }
  }
}
