// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import static io.strata.sync.GcWorkload.b;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.engine.SharedMemory;
import io.strata.format.Manifest;
import io.strata.format.Reachability;
import io.strata.format.StoreLayout;
import io.strata.metrics.GcStats;
import io.strata.objectstore.ObjectInfo;
import io.strata.objectstore.ObjectStore;
import io.strata.objectstore.ObjectStores;
import io.strata.objectstore.RequestListener;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Retention and garbage collection against the local-filesystem object store. Time passing is
 * modelled by moving every object's last-modified time back ({@link #age}) and, where a store's
 * own notion of time matters (the base-snapshot publication deadline), by an {@link
 * OffsetClock}.
 */
class GarbageCollectionTest {
  private static final Duration GRACE = Duration.ofHours(1);
  private static final int RETAIN = 10;

  @TempDir Path tmp;
  private Path remote;
  private ObjectStore objects;

  @BeforeEach
  void openRemote() {
    remote = tmp.resolve("remote");
    objects = ObjectStores.open(remote.toUri().toString(), SyncedStoreTest.UNUSED_S3,
        RequestListener.NONE);
  }

  @AfterEach
  void closeRemote() {
    objects.close();
  }

  private SyncedStore open(String name, boolean attemptKeys, long spillBytes,
      GcSettings gc, OffsetClock clock) {
    ObjectStore o = ObjectStores.open(remote.toUri().toString(), SyncedStoreTest.UNUSED_S3,
        RequestListener.NONE);
    return new SyncedStore(new StoreIdentity(0, 1, "default", remote.toString()), o,
        tmp.resolve("local-" + name), new StoreSettings(3, 2, spillBytes, attemptKeys, SharedMemory.Limits.DEFAULT, gc),
        "{}", "{}", clock);
  }

  private SyncedStore open(String name) {
    return open(name, false, 2048, gc(5), new OffsetClock());
  }

  private static GcSettings gc(int roundInterval) {
    return new GcSettings(true, RETAIN, roundInterval, GRACE.toMillis());
  }

  /**
   * Makes every object (and temporary file) under the remote root {@code d} older. A file that
   * vanishes meanwhile (the temporary file of an upload still running) is skipped.
   */
  private void age(Duration d) throws IOException {
    try (Stream<Path> files = Files.walk(remote)) {
      for (Path p : files.filter(Files::isRegularFile).toList()) {
        try {
          FileTime t = Files.getLastModifiedTime(p);
          Files.setLastModifiedTime(p, FileTime.fromMillis(t.toMillis() - d.toMillis()));
        } catch (java.nio.file.NoSuchFileException gone) {
          // renamed into place or deleted since the walk listed it
        }
      }
    }
  }

  private List<String> keys() throws IOException {
    return objects.list("").stream().map(ObjectInfo::key).toList();
  }

  /**
   * Commits versions {@code from..to} on {@code s} (which holds {@code from - 1}), with a
   * snapshot attempt after each; returns the expected state of each version.
   */
  private static void commitRange(SyncedStore s, Map<Long, TreeMap<String, String>> states,
      long from, long to) throws IOException {
    for (long v = from; v <= to; v++) {
      TreeMap<String, String> next = GcWorkload.write(s, states.get(v - 1), v, "a");
      assertEquals(v, s.commit().manifest().version());
      states.put(v, next);
      s.maintenance();
    }
  }

  private static Map<Long, TreeMap<String, String>> fromEmpty() {
    Map<Long, TreeMap<String, String>> states = new HashMap<>();
    states.put(0L, new TreeMap<>());
    return states;
  }

  @Test
  void oldVersionsAndOrphansGoAndEveryRetainedVersionStillLoads() throws Exception {
    Map<Long, TreeMap<String, String>> states = fromEmpty();
    try (SyncedStore a = open("a"); SyncedStore loser = open("loser")) {
      a.load(0, Optional.empty());
      commitRange(a, states, 1, 12);
      // An aborted batch that spilled: its spill deltas are orphans.
      GcWorkload.writeJunk(a, 100);
      assertFalse(objects.list("spill/").isEmpty(), "the batch spilled");
      a.abort();
      a.load(12, Optional.empty());
      commitRange(a, states, 13, 20);
      // A second attempt of version 21 loses the race after spilling (format 1).
      loser.load(20, Optional.empty());
      GcWorkload.writeJunk(loser, 100);
      commitRange(a, states, 21, 21);
      assertTrue(loser.commit().lostRace(), "the second attempt of version 21 lost");
      commitRange(a, states, 22, 30);
      long before = keys().size();

      age(GRACE.plusMinutes(1));
      GcStats stats = a.collectGarbage();
      assertEquals(30, stats.newestVersion());
      assertEquals(30 - RETAIN, stats.oldestRetainedVersion(), "Spark's rule: newest - "
          + "minBatchesToRetain stays loadable");
      assertTrue(stats.objectsDeleted() > 0, "something was collected: " + stats);
      assertEquals(before - stats.objectsDeleted(), keys().size());
      assertTrue(stats.bytesDeleted() > 0);
      assertEquals(1, stats.listRequests());
      assertEquals(1, stats.deleteRequests());
      assertEquals(0, stats.manifestReads(), "the owner cached every manifest it committed");
      assertEquals(stats, a.lastGc());
      // The files of the published snapshots that round deleted (no retained version could use
      // them) went with them, after them (issue 43): nothing is left for a later round.
      assertTrue(stats.publishedSnapshotsDeleted() > 0, "published snapshots went: " + stats);
      GcStats next = a.collectGarbage();
      assertEquals(0, next.objectsDeleted(), "nothing was left for a later round: " + next);
    }
    Set<String> named;
    try (SyncedStore reader = open("reader")) {
      named = GcWorkload.assertOnlyRetainedAndNamedRemain(reader, objects, 30, RETAIN, Set.of());
    }
    assertTrue(objects.list("spill/").isEmpty(), "orphaned spill deltas are gone");
    for (long v = 1; v < 30 - RETAIN; v++) {
      String key = StoreLayout.versionObject(v);
      assertTrue(!keys().contains(key) || named.contains(key),
          "version " + v + " is older than the retention: gone unless a retained manifest "
              + "names a delta inside it");
    }
    try (SyncedStore fresh = open("fresh")) {
      for (long v = 30 - RETAIN; v <= 30; v++) {
        fresh.load(v, Optional.empty());
        GcWorkload.assertState(fresh, states.get(v), "retained version " + v);
      }
      StateLoadException gone = assertThrows(StateLoadException.class,
          () -> fresh.load(1, Optional.empty()));
      assertTrue(gone.getMessage().contains("version 1"), gone.getMessage());
    }
  }

  @Test
  void youngObjectsThatMayBeInFlightAreNeverDeleted() throws Exception {
    Map<Long, TreeMap<String, String>> states = fromEmpty();
    try (SyncedStore a = open("a")) {
      a.load(0, Optional.empty());
      commitRange(a, states, 1, 25);
      GcWorkload.writeJunk(a, 100);
      a.abort();
      a.awaitLocalIngestion();
      List<String> before = keys();
      GcStats stats = a.collectGarbage();
      List<String> after = keys();
      List<String> deleted = before.stream().filter(k -> !after.contains(k)).toList();
      // Issue 43: what was written before every retained version is deleted at once (nothing
      // in flight can name it); nothing else is, being younger than the grace period.
      assertEquals(deleted.size(), stats.objectsDeleted());
      for (String k : deleted) {
        Reachability.Kind kind = Reachability.kindOf(k);
        assertTrue((kind == Reachability.Kind.VERSION_OBJECT
            && StoreLayout.versionOf(k) < stats.oldestRetainedVersion())
            || kind == Reachability.Kind.PUBLISHED_SNAPSHOT, "only settled objects: " + k);
      }
      assertTrue(after.containsAll(before.stream().filter(k -> k.startsWith("spill/")
          || k.startsWith("sst/") || k.startsWith("snap/")).toList()),
          "spills and base-snapshot files younger than the grace period stay");
    }
  }

  @Test
  void aStaleInstanceWindowsFromItsOwnVersionAndOnlyKeepsMore() throws Exception {
    Map<Long, TreeMap<String, String>> states = fromEmpty();
    try (SyncedStore owner = open("owner"); SyncedStore stale = open("stale")) {
      owner.load(0, Optional.empty());
      commitRange(owner, states, 1, 5);
      stale.load(5, Optional.empty()); // then the partition moved to "owner" for good
      commitRange(owner, states, 6, 40);
      owner.awaitLocalIngestion(); // and the owner's first round, right after its first commit
      age(GRACE.plusMinutes(1));
      List<String> before = keys();
      GcStats stats = stale.collectGarbage();
      assertEquals(5, stats.newestVersion(), "its own version, not the listing's 40: versions "
          + "listed above a collector's may be an earlier run's above a rewind point");
      assertEquals(5 - RETAIN, stats.oldestRetainedVersion());
      assertTrue(keys().containsAll(before.stream()
          .filter(k -> StoreLayout.versionOf(k) >= 5 - RETAIN).toList()),
          "every version object from its floor up stays");
      // The stale instance kept what its own loaded version names.
      Set<String> loadedFiles = Reachability.namedKeys(stale.loadedManifest().orElseThrow());
      // (The owner's rounds may have deleted some already: version 5 is older than its
      // retention. The stale round deleted none of them.)
      List<String> now = keys();
      List<String> missing = loadedFiles.stream()
          .filter(k -> before.contains(k) && !now.contains(k)).toList();
      assertTrue(missing.isEmpty(), "the stale instance's loaded version: missing " + missing);
      GcStats owners = owner.collectGarbage();
      assertEquals(40, owners.newestVersion());
      assertTrue(owners.objectsDeleted() > 0, "the owner collects: " + owners);
    }
    try (SyncedStore fresh = open("fresh")) {
      for (long v = 40 - RETAIN; v <= 40; v++) {
        fresh.load(v, Optional.empty());
        GcWorkload.assertState(fresh, states.get(v), "retained version " + v);
      }
    }
  }

  @Test
  void anInFlightSpillAndAPendingBaseSnapshotSurviveRoundsOfOtherInstances() throws Exception {
    Map<Long, TreeMap<String, String>> states = fromEmpty();
    try (SyncedStore owner = open("owner"); SyncedStore other = open("other")) {
      owner.load(0, Optional.empty());
      commitRange(owner, states, 1, 20);
      other.load(20, Optional.empty());
      // Version 21 is being built: a large batch spilled; the version's commit is still to come.
      TreeMap<String, String> next = GcWorkload.write(owner, states.get(20L), 21, "a");
      for (int i = 0; i < 100; i++) {
        owner.put(b("big-" + i), new byte[100]);
        next.put("big-" + i, new String(new byte[100], java.nio.charset.StandardCharsets.UTF_8));
      }
      List<String> spills = objects.list("spill/").stream().map(ObjectInfo::key).toList();
      assertFalse(spills.isEmpty());
      age(GRACE.plusMinutes(1)); // the batch runs for longer than the grace period
      other.collectGarbage();
      assertTrue(keys().containsAll(spills), "spills of a version newer than the newest stay");
      owner.collectGarbage();
      assertTrue(keys().containsAll(spills), "and the owner protects its own");
      owner.commit();
      states.put(21L, next);
    }
    try (SyncedStore fresh = open("fresh")) {
      fresh.load(21, Optional.empty());
      GcWorkload.assertState(fresh, states.get(21L), "version 21 with its spills");
    }
  }

  @Test
  void aBaseSnapshotIsAdoptedHoweverLateItsNextCommitComesAndRoundsKeepIt() throws Exception {
    OffsetClock clock = new OffsetClock();
    Map<Long, TreeMap<String, String>> states = fromEmpty();
    try (SyncedStore a = open("a", false, 0, gc(100), clock)) {
      a.load(0, Optional.empty());
      for (long v = 1; v <= 3; v++) {
        states.put(v, GcWorkload.write(a, states.get(v - 1), v, "a"));
        a.commit();
      }
      assertTrue(a.maintenance(), "a base snapshot of version 3 was uploaded");
      List<String> packs = objects.list(StoreLayout.PUBLISHED_SNAPSHOTS).stream()
          .map(ObjectInfo::key).toList();
      assertEquals(1, packs.size());
      // Its own rounds keep the pending snapshot even when it looks old.
      age(GRACE.plusMinutes(1));
      a.collectGarbage();
      assertEquals(packs, objects.list(StoreLayout.PUBLISHED_SNAPSHOTS).stream().map(ObjectInfo::key).toList());
      // The next commit comes after more than the grace period (a long trigger).
      clock.advance(GRACE.plusMinutes(1));
      states.put(4L, GcWorkload.write(a, states.get(3L), 4, "a"));
      Manifest m4 = a.commit().manifest();
      assertEquals(3, m4.base().orElseThrow().version(), "adopted however late: " + m4.base());
      assertEquals(1, m4.deltaChainLength());
      assertFalse(a.maintenance(), "no new snapshot is due one version after the base");
      states.put(5L, GcWorkload.write(a, states.get(4L), 5, "a"));
      Manifest m5 = a.commit().manifest();
      assertEquals(3, m5.base().orElseThrow().version());
      age(GRACE.plusMinutes(1));
      clock.advance(GRACE.plusMinutes(1));
      a.collectGarbage();
      assertTrue(keys().contains(packs.get(0)), "the adopted snapshot's object stays");
      assertEquals(packs, objects.list(StoreLayout.PUBLISHED_SNAPSHOTS).stream().map(ObjectInfo::key).toList(),
          "and no other snapshot was uploaded");
    }
    try (SyncedStore fresh = open("fresh")) {
      for (long v = 1; v <= 5; v++) {
        fresh.load(v, Optional.empty());
        GcWorkload.assertState(fresh, states.get(v), "version " + v);
      }
    }
  }

  @Test
  void unusedFormat2AttemptsAreCollectedOnceOlderThanTheRetention() throws Exception {
    Map<String, TreeMap<String, String>> byAttempt = new HashMap<>();
    Map<Long, String> used = new HashMap<>();
    List<String> unused = new java.util.ArrayList<>();
    try (SyncedStore a = open("a", true, 0, gc(5), new OffsetClock())) {
      a.load(0, Optional.empty());
      TreeMap<String, String> state = new TreeMap<>();
      for (long v = 1; v <= 30; v++) {
        String parent = used.get(v - 1);
        if (v % 4 == 0) {
          // A first attempt the driver will not use (its task failed after the commit).
          GcWorkload.write(a, state, v, "x");
          unused.add(a.commit().key());
          a.load(v - 1, Optional.ofNullable(parent));
        }
        TreeMap<String, String> next = GcWorkload.write(a, state, v, "a");
        CommitResult c = a.commit();
        used.put(v, c.manifest().attempt());
        byAttempt.put(c.manifest().attempt(), next);
        state = next;
      }
      age(GRACE.plusMinutes(1));
      a.collectGarbage();
      a.collectGarbage(); // the files of the published snapshots the first round deleted
    }
    List<String> left = keys();
    for (String key : unused) {
      long v = StoreLayout.versionOf(key);
      assertEquals(v >= 30 - RETAIN, left.contains(key),
          "an unused attempt of version " + v + " stays only within the retention");
    }
    try (SyncedStore reader = open("reader", true, 0, gc(5), new OffsetClock())) {
      GcWorkload.assertOnlyRetainedAndNamedRemain(reader, objects, 30, RETAIN, Set.of());
      for (long v = 30 - RETAIN; v <= 30; v++) {
        reader.load(v, Optional.of(used.get(v)));
        GcWorkload.assertState(reader, byAttempt.get(used.get(v)), "version " + v);
      }
    }
  }

  @Test
  void roundsAreDueAfterTheIntervalOrOnceAnOrphanIsOldEnough() throws Exception {
    OffsetClock clock = new OffsetClock();
    Map<Long, TreeMap<String, String>> states = fromEmpty();
    try (SyncedStore a = open("a", false, 2048, gc(5), clock)) {
      a.load(0, Optional.empty());
      assertFalse(a.gcDue(), "an instance that never committed never collects");
      states.put(1L, GcWorkload.write(a, states.get(0L), 1, "a"));
      a.commit();
      a.awaitLocalIngestion();
      assertEquals(1, a.lastGc().round(), "the first round follows the first commit at once, in "
          + "the background (a one-batch run never reaches maintenance)");
      assertFalse(a.gcDue());
      a.maintenance();
      assertEquals(1, a.lastGc().round());
      for (long v = 2; v <= 5; v++) {
        states.put(v, GcWorkload.write(a, states.get(v - 1), v, "a"));
        a.commit();
        a.maintenance();
        assertFalse(a.gcDue(), "version " + v + ": fewer than 5 versions since the last round");
      }
      assertEquals(1, a.lastGc().round(), "no request at all between rounds");
      states.put(6L, GcWorkload.write(a, states.get(5L), 6, "a"));
      a.commit();
      assertTrue(a.gcDue(), "5 versions committed since the round at version 1");
      a.maintenance();
      assertEquals(2, a.lastGc().round());
      List<String> packs = objects.list(StoreLayout.PUBLISHED_SNAPSHOTS).stream()
          .map(ObjectInfo::key).toList();
      assertEquals(2, packs.size(), "the base of version 3 (published) and of 6 (pending)");
      // The batch of version 7 spills and is aborted: its spills and the pending snapshot of
      // version 6 (dropped with the local database) are orphans.
      GcWorkload.writeJunk(a, 100);
      a.abort();
      a.load(6, Optional.empty());
      assertFalse(a.gcDue(), "the orphans are younger than the grace period");
      clock.advance(GRACE);
      age(GRACE);
      assertTrue(a.gcDue(), "an orphan is now old enough to collect");
      a.maintenance();
      assertEquals(3, a.lastGc().round());
      assertFalse(a.gcDue(), "that round covered the orphans");
      String dropped = packs.stream().filter(k -> StoreLayout.publishedSnapshotVersionOf(k) == 6)
          .findFirst().orElseThrow();
      // Dropped with the local database, but published: a cold load of version 6 may restore
      // from it, so it stays.
      assertTrue(keys().contains(dropped), "the dropped snapshot stays published");
      assertFalse(objects.list("spill/").isEmpty(),
          "spills of version 7 stay while 7 could still be a running batch");
      for (long v = 7; v <= 8; v++) {
        states.put(v, GcWorkload.write(a, states.get(v - 1), v, "a"));
        a.commit();
      }
      age(GRACE);
      a.collectGarbage();
      assertTrue(objects.list("spill/").isEmpty(), "collected once version 8 is the newest");
    }
  }

  @Test
  void aRetainedManifestThatCannotBeReadStopsTheRoundBeforeAnyDelete() throws Exception {
    Map<Long, TreeMap<String, String>> states = fromEmpty();
    try (SyncedStore a = open("a")) {
      a.load(0, Optional.empty());
      commitRange(a, states, 1, 20);
    }
    Path newest = remote.resolve(StoreLayout.versionObject(20));
    try (RandomAccessFile raf = new RandomAccessFile(newest.toFile(), "rw")) {
      raf.seek(raf.length() - 40);
      raf.write(0x55);
    }
    age(GRACE.plusMinutes(1));
    List<String> before = keys();
    try (SyncedStore stranger = open("stranger")) {
      IOException e = assertThrows(IOException.class, stranger::collectGarbage);
      assertTrue(e.getMessage().contains("nothing is deleted"), e.getMessage());
      assertTrue(e.getMessage().contains("version 20"), e.getMessage());
    }
    assertEquals(before, keys());
  }

  @Test
  void disabledGarbageCollectionNeverDeletes() throws Exception {
    Map<Long, TreeMap<String, String>> states = fromEmpty();
    try (SyncedStore a = open("a", false, 0, new GcSettings(false, 1, 1, 0), new OffsetClock())) {
      a.load(0, Optional.empty());
      commitRange(a, states, 1, 10);
      assertFalse(a.gcDue());
      List<String> before = keys();
      assertEquals(GcStats.NONE, a.collectGarbage());
      assertEquals(before, keys());
    }
  }
}
