// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.engine.SharedMemory;
import io.strata.format.ColumnFamilies;
import io.strata.format.ColumnFamily;
import io.strata.format.Manifest;
import io.strata.format.StoreLayout;
import io.strata.objectstore.ObjectInfo;
import io.strata.objectstore.ObjectStore;
import io.strata.objectstore.ObjectStores;
import io.strata.objectstore.RequestListener;
import io.strata.objectstore.S3Settings;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The commit protocol, restore and snapshots against the local-filesystem object store. */
class SyncedStoreTest {
  @TempDir Path tmp;

  static final S3Settings UNUSED_S3 = new S3Settings(Optional.empty(), "us-east-1", false,
      Optional.empty(), Optional.empty(), Optional.empty(), 1, Duration.ofSeconds(5),
      Duration.ofSeconds(5), 4);

  private SyncedStore open(String name, int snapshotInterval) {
    return open(name, snapshotInterval, 0);
  }

  private SyncedStore open(String name, int snapshotInterval, long spillBytes) {
    return open(name, snapshotInterval, spillBytes, false);
  }

  /** A store on the shared "remote" directory; {@code attemptKeys}: checkpoint format 2. */
  private SyncedStore open(String name, int snapshotInterval, long spillBytes,
      boolean attemptKeys) {
    Path remote = tmp.resolve("remote");
    ObjectStore objects = ObjectStores.open(remote.toUri().toString(), UNUSED_S3,
        RequestListener.NONE);
    return new SyncedStore(new StoreIdentity(0, 1, "default", remote.toString()), objects,
        tmp.resolve("local-" + name), new StoreSettings(snapshotInterval, 4, spillBytes, attemptKeys, SharedMemory.Limits.DEFAULT, GcSettings.DEFAULT), "{}", "{}");
  }

  private static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static byte[] key(int i) {
    return b(String.format("key-%06d", i));
  }

  /** Writes version v: puts keys [0, v*10), deletes key v-1's neighbour, updates a counter. */
  private static void writeVersion(SyncedStore s, long v) throws Exception {
    for (int i = 0; i < 10; i++) {
      s.put(key((int) (v * 10 + i)), b("v" + v));
    }
    s.put(b("counter"), b(Long.toString(v)));
    if (v > 2) {
      s.delete(key((int) ((v - 2) * 10)));
    }
  }

  private static void assertVersion(SyncedStore s, long v) throws Exception {
    assertArrayEquals(b(Long.toString(v)), s.get(b("counter")), "counter at version " + v);
    long expectedKeys = 1;
    for (long w = 1; w <= v; w++) {
      for (int i = 0; i < 10; i++) {
        int k = (int) (w * 10 + i);
        boolean deleted = i == 0 && w + 2 <= v;
        byte[] got = s.get(key(k));
        if (deleted) {
          assertNull(got, "key " + k + " deleted by version " + (w + 2));
        } else {
          assertArrayEquals(b("v" + w), got, "key " + k + " at version " + v);
          expectedKeys++;
        }
      }
    }
    assertEquals(expectedKeys, s.numKeys());
  }

  @Test
  void commitWritesOneVersionObjectAndRestoresFromItOnAFreshInstance() throws Exception {
    try (SyncedStore s = open("a", 100)) {
      s.load(0, Optional.empty());
      for (long v = 1; v <= 5; v++) {
        writeVersion(s, v);
        CommitResult c = s.commit();
        assertEquals(v, c.manifest().version());
        assertEquals(StoreLayout.versionObject(v), c.key(), "format 1: one key per version");
        assertEquals(v, c.manifest().deltaChainLength());
      }
      assertVersion(s, 5);
    }
    try (SyncedStore fresh = open("b", 100)) {
      fresh.load(5, Optional.empty());
      assertTrue(fresh.lastRestore().filesDownloaded() == 5);
      assertVersion(fresh, 5);
      fresh.load(3, Optional.empty());
      assertVersion(fresh, 3);
    }
  }

  /**
   * Column families: the name-to-id mapping is committed in the manifest and restored exactly
   * on a fresh instance (ids are not reassigned); a removal writes tombstones for the family's
   * keys into the version's delta and its id is never reused; an abort drops creations and
   * removals of the version being built.
   */
  @Test
  void columnFamiliesAreCommittedInTheManifestAndRestoredExactly() throws Exception {
    byte[] aPrefix;
    try (SyncedStore s = open("a", 100)) {
      s.load(0, Optional.empty());
      ColumnFamily a = s.createColumnFamily("a", false);
      ColumnFamily b = s.createColumnFamily("$b", true);
      assertEquals(a, s.createColumnFamily("a", true), "existing family kept as it was");
      assertEquals(List.of(1, 2), List.of(a.id(), b.id()));
      aPrefix = a.keyPrefix();
      s.put(concat(a.keyPrefix(), b("k1")), b("1"));
      s.put(concat(a.keyPrefix(), b("k2")), b("2"));
      s.put(concat(b.keyPrefix(), b("k1")), b("3"));
      CommitResult c1 = s.commit();
      assertEquals(2, c1.manifest().formatVersion());
      assertEquals(new ColumnFamilies(2, List.of(a, b)), c1.manifest().columnFamilies());

      // Version 2 removes "a" (its keys too) and creates "c", which gets a new id.
      assertTrue(s.removeColumnFamily("a"));
      assertFalse(s.removeColumnFamily("a"));
      assertNull(s.get(concat(aPrefix, b("k1"))));
      assertEquals(1, s.numKeys());
      ColumnFamily c = s.createColumnFamily("c", false);
      assertEquals(3, c.id());
      s.abort();
      assertEquals(new ColumnFamilies(2, List.of(a, b)), s.columnFamilies(), "abort undid both");
      assertArrayEquals(b("1"), s.get(concat(aPrefix, b("k1"))));

      assertTrue(s.removeColumnFamily("a"));
      assertEquals(3, s.createColumnFamily("c", false).id());
      s.put(concat(c.keyPrefix(), b("k1")), b("4"));
      CommitResult c2 = s.commit();
      assertEquals(new ColumnFamilies(3, List.of(b, c)), c2.manifest().columnFamilies());
      assertEquals(2, c2.manifest().numKeys());
    }
    try (SyncedStore fresh = open("b", 100)) {
      fresh.load(2, Optional.empty());
      assertEquals(new ColumnFamilies(3, List.of(new ColumnFamily("$b", 2, true),
          new ColumnFamily("c", 3, false))), fresh.columnFamilies());
      assertNull(fresh.get(concat(aPrefix, b("k1"))), "the removal's tombstones were restored");
      assertArrayEquals(b("3"), fresh.get(concat(ColumnFamily.keyPrefix(2), b("k1"))));
      assertEquals(4, fresh.createColumnFamily("a", false).id(), "ids are never reused");
      fresh.load(1, Optional.empty());
      assertEquals(List.of("$b", "a"), fresh.columnFamilies().families().stream()
          .map(ColumnFamily::name).sorted().toList());
      assertArrayEquals(b("1"), fresh.get(concat(aPrefix, b("k1"))));
      fresh.load(0, Optional.empty());
      assertEquals(ColumnFamilies.NONE, fresh.columnFamilies());
    }
  }

  private static byte[] concat(byte[] a, byte[] b) {
    byte[] out = java.util.Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, out, a.length, b.length);
    return out;
  }

  @Test
  void idleVersionCommitsAManifestWithoutDelta() throws Exception {
    try (SyncedStore s = open("a", 100)) {
      s.load(0, Optional.empty());
      writeVersion(s, 1);
      CommitResult written = s.commit();
      CommitResult idle = s.commit();
      assertEquals(2, idle.manifest().version());
      assertEquals(1, idle.manifest().deltaChainLength());
      assertEquals(0, idle.stats().deltaBytes());
      // The version object by part (issue 45): the SST's parts, then the manifest.
      for (CommitResult c : List.of(written, idle)) {
        var p = c.stats().parts();
        assertEquals(c.stats().bytesUploaded(), p.sstData() + p.sstFilter() + p.sstIndex()
            + p.sstTableMeta() + p.manifest(), p.toString());
        assertEquals(c.stats().deltaBytes(), c.stats().bytesUploaded() - p.manifest());
        assertTrue(p.manifest() > 0 && c.stats().ownMicros() >= 0, p.toString());
      }
      assertTrue(written.stats().parts().sstData() > 0
          && written.stats().parts().sstFilter() > 0, written.stats().toString());
      assertEquals(0, idle.stats().parts().sstData());
    }
    try (SyncedStore fresh = open("b", 100)) {
      fresh.load(2, Optional.empty());
      assertVersion(fresh, 1);
    }
  }

  @Test
  void abortDropsPendingWritesAndTheFirstOfTwoFormat1AttemptsWins() throws Exception {
    String first;
    try (SyncedStore s = open("a", 100)) {
      s.load(0, Optional.empty());
      writeVersion(s, 1);
      first = s.commit().manifest().attempt();
      s.put(b("garbage"), b("x"));
      s.abort();
      assertNull(s.get(b("garbage")));
      // re-run of version 2 twice (task retry): the first attempt to commit wins in format 1
      s.load(1, Optional.empty());
      s.put(b("attempt"), b("one"));
      CommitResult c1 = s.commit();
      assertFalse(c1.lostRace());
      s.load(1, Optional.of(first));
      s.put(b("attempt"), b("two"));
      CommitResult c2 = s.commit();
      assertTrue(c2.lostRace(), "the second attempt finds version 2 committed");
      assertEquals(c1.manifest().attempt(), c2.manifest().attempt());
      s.load(2, Optional.empty());
      assertArrayEquals(b("one"), s.get(b("attempt")), "the loser holds the winner's state");
    }
    try (SyncedStore fresh = open("b", 100)) {
      fresh.load(2, Optional.empty());
      assertArrayEquals(b("one"), fresh.get(b("attempt")));
      assertNull(fresh.get(b("garbage")));
    }
  }

  @Test
  void loadByCheckpointIdReadsExactlyThatAttempt() throws Exception {
    String a1;
    try (SyncedStore s = open("a", 100, 0, true)) {
      s.load(0, Optional.empty());
      s.put(b("k"), b("one"));
      a1 = s.commit().manifest().attempt();
      s.load(0, Optional.empty());
      s.put(b("k"), b("two"));
      s.commit();
    }
    try (SyncedStore fresh = open("b", 100, 0, true)) {
      fresh.load(1, Optional.of(a1));
      assertArrayEquals(b("one"), fresh.get(b("k")));
      assertEquals(Optional.of(a1), fresh.loadedAttempt());
    }
  }

  @Test
  void missingVersionIsNotFoundNeverEmpty() throws Exception {
    try (SyncedStore s = open("a", 100)) {
      s.load(0, Optional.empty());
      s.put(b("k"), b("v"));
      s.commit();
      StateLoadException e = assertThrows(StateLoadException.class,
          () -> s.load(7, Optional.empty()));
      assertEquals(StateLoadException.Reason.VERSION_NOT_FOUND, e.reason());
      assertTrue(e.getMessage().contains("version 7"), e.getMessage());
    }
  }

  @Test
  void snapshotShortensTheChainAndUploadsOnlyWhatIsMissing() throws Exception {
    try (SyncedStore s = open("a", 3)) {
      s.load(0, Optional.empty());
      for (long v = 1; v <= 3; v++) {
        writeVersion(s, v);
        s.commit();
      }
      assertTrue(s.maintenance(), "snapshot due after 3 versions");
      assertFalse(s.maintenance(), "no second snapshot of the same version");
      writeVersion(s, 4);
      Manifest m4 = s.commit().manifest();
      assertTrue(m4.base().isPresent());
      assertEquals(3, m4.base().get().version());
      assertEquals(1, m4.deltaChainLength());
      // Every base SST that was an ingested delta points into a version object: not re-uploaded.
      long reused = m4.base().get().files().stream()
          .filter(f -> f.file().key().startsWith("v/")).count();
      assertTrue(reused >= 1, "ingested deltas are reused by the snapshot: " + m4.base());
      for (long v = 5; v <= 6; v++) {
        writeVersion(s, v);
        s.commit();
      }
    }
    try (SyncedStore fresh = open("b", 3)) {
      fresh.load(6, Optional.empty());
      assertVersion(fresh, 6);
      fresh.load(4, Optional.empty());
      assertVersion(fresh, 4);
    }
  }

  @Test
  void corruptDeltaFailsLoudlyNamingStoreVersionAndKey() throws Exception {
    String key;
    try (SyncedStore s = open("a", 100)) {
      s.load(0, Optional.empty());
      writeVersion(s, 1);
      key = s.commit().key();
    }
    Path file = tmp.resolve("remote").resolve(key);
    try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw")) {
      raf.seek(100);
      int x = raf.read();
      raf.seek(100);
      raf.write(x ^ 0x01);
    }
    try (SyncedStore fresh = open("b", 100)) {
      StateLoadException e = assertThrows(StateLoadException.class,
          () -> fresh.load(1, Optional.empty()));
      assertEquals(StateLoadException.Reason.CORRUPT, e.reason());
      assertTrue(e.getMessage().contains("0/1/default"), e.getMessage());
      assertTrue(e.getMessage().contains("version 1"), e.getMessage());
      assertTrue(e.getMessage().contains(key), e.getMessage());
    }
  }

  @Test
  void missingSnapshotFileFailsLoudly() throws Exception {
    try (SyncedStore s = open("a", 1)) {
      s.load(0, Optional.empty());
      writeVersion(s, 1);
      s.commit();
      s.put(b("x"), b("y"));
      assertTrue(s.maintenance());
      writeVersion(s, 2);
      Manifest m = s.commit().manifest();
      assertTrue(m.base().isPresent());
    }
    ObjectStore objects = ObjectStores.open(tmp.resolve("remote").toUri().toString(), UNUSED_S3,
        RequestListener.NONE);
    List<ObjectInfo> packs = objects.list(StoreLayout.PUBLISHED_SNAPSHOTS); // its one object
    assertEquals(1, packs.size());
    objects.delete(List.of(packs.get(0).key()));
    objects.close();
    try (SyncedStore fresh = open("b", 100)) {
      StateLoadException e = assertThrows(StateLoadException.class,
          () -> fresh.load(2, Optional.empty()));
      assertEquals(StateLoadException.Reason.MISSING_FILE, e.reason());
      assertTrue(e.getMessage().contains(packs.get(0).key()), e.getMessage());
    }
    assertTrue(Files.exists(tmp.resolve("remote")));
  }

  @Test
  void aLargeBatchSpillsWhileItRunsAndTheCommitNamesTheSpills() throws Exception {
    ObjectStore objects = ObjectStores.open(tmp.resolve("remote").toUri().toString(), UNUSED_S3,
        RequestListener.NONE);
    try (SyncedStore s = open("a", 100, 4096)) {
      s.load(0, Optional.empty());
      writeVersion(s, 1);
      s.commit();
      for (int i = 0; i < 500; i++) {
        s.put(b("big-" + i), new byte[100]);
      }
      assertFalse(objects.list("spill/").isEmpty(), "spilled before commit");
      s.delete(b("big-7"));
      Manifest m = s.commit().manifest();
      long spills = m.deltas().stream().filter(d -> d.file().key().startsWith("spill/")).count();
      assertTrue(spills >= 2, "several spill deltas: " + m.deltas());
      assertTrue(m.deltas().stream().filter(d -> d.version() == 2)
          .allMatch(d -> d.attempt().equals(m.attempt())), "spills carry the commit's attempt");
      assertEquals(1 + 10 + 499, m.numKeys());
      assertNull(s.get(b("big-7")));
    }
    try (SyncedStore fresh = open("b", 100)) {
      fresh.load(2, Optional.empty());
      assertEquals(1 + 10 + 499, fresh.numKeys());
      assertNull(fresh.get(b("big-7")));
      assertArrayEquals(new byte[100], fresh.get(b("big-8")));
    }
    objects.close();
  }

  @Test
  void abortAfterASpillDropsTheLocalDatabaseNotCommittedState() throws Exception {
    try (SyncedStore s = open("a", 100, 4096)) {
      s.load(0, Optional.empty());
      writeVersion(s, 1);
      s.commit();
      for (int i = 0; i < 500; i++) {
        s.put(b("big-" + i), new byte[100]);
      }
      s.abort();
      s.load(1, Optional.empty());
      assertNull(s.get(b("big-1")), "spilled writes of the aborted batch are gone");
      assertVersion(s, 1);
    }
  }

  @Test
  void noSpillWhileAScanIsOpen() throws Exception {
    ObjectStore objects = ObjectStores.open(tmp.resolve("remote").toUri().toString(), UNUSED_S3,
        RequestListener.NONE);
    try (SyncedStore s = open("a", 100, 4096)) {
      s.load(0, Optional.empty());
      writeVersion(s, 1);
      s.commit();
      try (var it = s.scan(new byte[0])) {
        assertTrue(it.hasNext(), "the scan stays open while it has rows");
        for (int i = 0; i < 500; i++) {
          s.put(b("big-" + i), new byte[100]);
        }
        assertTrue(objects.list("spill/").isEmpty());
      }
      s.put(b("one-more"), new byte[1]);
      assertFalse(objects.list("spill/").isEmpty(), "spills once the scan is closed");
      s.commit();
    }
    objects.close();
  }
}
