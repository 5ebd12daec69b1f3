// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.engine.SharedMemory;
import io.strata.format.StoreLayout;
import io.strata.objectstore.ObjectStore;
import io.strata.objectstore.ObjectStores;
import io.strata.objectstore.RequestListener;
import io.strata.objectstore.S3Settings;
import io.strata.testkit.S3ProxyServer;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Corruption and loss of committed objects on a real S3-compatible server (S3Proxy, filesystem
 * backend, whose objects are plain files under {@code <dataDir>/<bucket>/<key>} that the test
 * damages directly). Each case commits five versions (with a base snapshot after version 3),
 * damages one object, and restores on a fresh local directory: the load must fail with a
 * {@link StateLoadException} naming the store, the version and the object key and saying what
 * was wrong, never yield an empty, older or different state. A local SST changed on disk
 * between two loads is detected before the local database is reused.
 */
class CorruptionIT {
  private static final String BUCKET = "corruption";
  private static final int VERSIONS = 5;
  private static Path work;
  private static S3ProxyServer server;

  @BeforeAll
  static void start() throws Exception {
    work = Files.createTempDirectory("strata-corruption-it");
    server = S3ProxyServer.start(work.resolve("s3"), Map.of());
    server.createBucket(BUCKET);
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

  private static SyncedStore open(String name, String local) {
    S3Settings s3 = new S3Settings(Optional.of(server.endpoint()), "us-east-1", true,
        Optional.of(S3ProxyServer.ACCESS_KEY), Optional.of(S3ProxyServer.SECRET_KEY),
        Optional.empty(), 3, Duration.ofSeconds(30), Duration.ofSeconds(10), 8);
    ObjectStore objects = ObjectStores.open(location(name), s3, RequestListener.NONE);
    return new SyncedStore(new StoreIdentity(0, 0, "default", location(name)), objects,
        work.resolve(local), new StoreSettings(3, 2, 0, false, SharedMemory.Limits.DEFAULT, GcSettings.DEFAULT), "{}", "{}");
  }

  private static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  /** Commits versions 1..5 (100 keys each; version v sets every key to "v<v>"), snapshot at 3. */
  private static void commitVersions(String name) throws IOException {
    try (SyncedStore s = open(name, name + "-writer")) {
      s.load(0, Optional.empty());
      for (int v = 1; v <= VERSIONS; v++) {
        for (int i = 0; i < 100; i++) {
          s.put(b("key-" + i), b("v" + v + "-" + i));
        }
        s.commit();
        if (v == 3) {
          assertTrue(s.maintenance() || s.lastSnapshotVersion() == 3, "base snapshot of 3");
        }
      }
    }
  }

  /** The file S3Proxy keeps the object {@code key} (relative to the store) in. */
  private static Path file(String name, String key) {
    return server.dataDir().resolve(BUCKET).resolve(name + "/state/0/0/" + key);
  }

  private static String versionKey(long v) {
    return StoreLayout.versionObject(v);
  }

  /** Loads the newest version on a fresh local dir and returns the failure. */
  private static StateLoadException failsToLoad(String name) {
    try (SyncedStore s = open(name, name + "-reader-" + System.nanoTime())) {
      return assertThrows(StateLoadException.class, () -> s.load(VERSIONS, Optional.empty()),
          "a damaged checkpoint must not load");
    }
  }

  private static void assertNames(StateLoadException e, String name, long version, String key,
      String what) {
    String m = e.getMessage();
    assertTrue(m.contains("0/0/default"), "names the store: " + m);
    assertTrue(m.contains("version " + version), "names the version: " + m);
    assertTrue(m.contains(name + "/state/0/0/" + key), "names the object key " + key + ": " + m);
    assertTrue(m.contains(what), "says '" + what + "': " + m);
  }

  private static void flipByte(Path f, long offset) throws IOException {
    try (RandomAccessFile raf = new RandomAccessFile(f.toFile(), "rw")) {
      raf.seek(offset);
      int old = raf.read();
      raf.seek(offset);
      raf.write(old ^ 0x01);
    }
  }

  @Test
  void undamagedCheckpointRestoresExactly() throws Exception {
    commitVersions("intact");
    try (SyncedStore s = open("intact", "intact-reader")) {
      s.load(VERSIONS, Optional.empty());
      assertEquals(100, s.numKeys());
      assertArrayEquals(b("v5-7"), s.get(b("key-7")));
      assertTrue(s.loadedManifest().orElseThrow().base().isPresent(), "restored via a base");
    }
  }

  @Test
  void truncatedVersionObjectOfTheNewestVersion() throws Exception {
    commitVersions("trunc-newest");
    Path f = file("trunc-newest", versionKey(VERSIONS));
    try (RandomAccessFile raf = new RandomAccessFile(f.toFile(), "rw")) {
      raf.setLength(raf.length() / 2);
    }
    assertNames(failsToLoad("trunc-newest"), "trunc-newest", VERSIONS, versionKey(VERSIONS),
        "is invalid");
  }

  @Test
  void truncatedDeltaNamedByTheManifest() throws Exception {
    commitVersions("trunc-delta");
    // version 4's delta is named by version 5's manifest (after the base of version 3)
    Path f = file("trunc-delta", versionKey(4));
    try (RandomAccessFile raf = new RandomAccessFile(f.toFile(), "rw")) {
      raf.setLength(100);
    }
    StateLoadException e = failsToLoad("trunc-delta");
    assertEquals(StateLoadException.Reason.CORRUPT, e.reason(), e.getMessage());
    assertNames(e, "trunc-delta", VERSIONS, versionKey(4), "do not match the manifest");
  }

  @Test
  void oneFlippedByteInAnSst() throws Exception {
    commitVersions("flip-sst");
    // byte 64 of version 4's object lies inside its SST delta (data block)
    flipByte(file("flip-sst", versionKey(4)), 64);
    StateLoadException e = failsToLoad("flip-sst");
    assertEquals(StateLoadException.Reason.CORRUPT, e.reason(), e.getMessage());
    assertNames(e, "flip-sst", VERSIONS, versionKey(4), "do not match the manifest");
  }

  @Test
  void oneFlippedByteInAnSstOfTheBaseSnapshot() throws Exception {
    commitVersions("flip-base");
    // the base of version 3 names version 1's delta (ingested, reused by the snapshot)
    flipByte(file("flip-base", versionKey(1)), 64);
    StateLoadException e = failsToLoad("flip-base");
    assertEquals(StateLoadException.Reason.CORRUPT, e.reason(), e.getMessage());
    assertNames(e, "flip-base", VERSIONS, versionKey(1), "do not match the manifest");
  }

  /** The base snapshot file of the newest version whose name starts with {@code prefix}. */
  private static io.strata.format.BaseSnapshot.BaseFile baseFile(String name, String prefix)
      throws IOException {
    try (SyncedStore s = open(name, name + "-manifest-" + System.nanoTime())) {
      return s.readManifest(VERSIONS, Optional.empty()).base().orElseThrow().files().stream()
          .filter(f -> f.name().startsWith(prefix)).findFirst().orElseThrow();
    }
  }

  @Test
  void oneFlippedByteInAFileOfTheBasePackFetchedWithItsNeighbours() throws Exception {
    commitVersions("flip-pack");
    // The published snapshot object holds CURRENT, MANIFEST-* and OPTIONS-* (and the small
    // SSTs) back to back: one GET carries them all; the damaged one among them is still found
    // and named.
    io.strata.format.BaseSnapshot.BaseFile manifest = baseFile("flip-pack", "MANIFEST-");
    String key = manifest.file().key();
    assertTrue(key.endsWith(".bsm"), key);
    flipByte(file("flip-pack", key), manifest.file().offset() + manifest.file().length() / 2);
    StateLoadException e = failsToLoad("flip-pack");
    assertEquals(StateLoadException.Reason.CORRUPT, e.reason(), e.getMessage());
    assertNames(e, "flip-pack", VERSIONS, key, "do not match the manifest");
  }

  @Test
  void aPackCutShortAtAFileBoundary() throws Exception {
    commitVersions("trunc-pack");
    io.strata.format.BaseSnapshot.BaseFile current = baseFile("trunc-pack", "CURRENT");
    String key = current.file().key();
    try (RandomAccessFile raf = new RandomAccessFile(file("trunc-pack", key).toFile(), "rw")) {
      assertTrue(raf.length() > current.file().offset() + current.file().length(),
          "CURRENT is not the pack's last file");
      raf.setLength(current.file().offset() + current.file().length());
    }
    StateLoadException e = failsToLoad("trunc-pack");
    assertEquals(StateLoadException.Reason.CORRUPT, e.reason(), e.getMessage());
    assertNames(e, "trunc-pack", VERSIONS, key, "shorter or longer than its manifest says");
  }

  @Test
  void oneChangedDigitInAManifest() throws Exception {
    commitVersions("flip-manifest");
    Path f = file("flip-manifest", versionKey(VERSIONS));
    byte[] bytes = Files.readAllBytes(f);
    String text = new String(bytes, StandardCharsets.ISO_8859_1);
    int at = text.indexOf("\"version\":" + VERSIONS);
    assertTrue(at > 0, "the manifest's version field is in the object");
    int digit = at + "\"version\":".length();
    bytes[digit] = (byte) '4'; // "version":5 -> "version":4
    Files.write(f, bytes);
    StateLoadException e = failsToLoad("flip-manifest");
    assertEquals(StateLoadException.Reason.CORRUPT, e.reason(), e.getMessage());
    assertNames(e, "flip-manifest", VERSIONS, versionKey(VERSIONS), "checksum");
  }

  @Test
  void deletedNewestVersionObject() throws Exception {
    commitVersions("deleted-newest");
    Files.delete(file("deleted-newest", versionKey(VERSIONS)));
    StateLoadException e = failsToLoad("deleted-newest");
    assertEquals(StateLoadException.Reason.VERSION_NOT_FOUND, e.reason(), e.getMessage());
    assertNames(e, "deleted-newest", VERSIONS, "v/" + String.format("%020d", VERSIONS),
        "no version object");
    // and version 4 still loads: the failure is about version 5 only, nothing was repaired by
    // falling back to an older state
    try (SyncedStore s = open("deleted-newest", "deleted-newest-older")) {
      s.load(4, Optional.empty());
      assertArrayEquals(b("v4-7"), s.get(b("key-7")));
    }
  }

  @Test
  void deletedSstThatARetainedManifestNames() throws Exception {
    commitVersions("deleted-sst");
    Files.delete(file("deleted-sst", versionKey(2))); // in version 3's base
    StateLoadException e = failsToLoad("deleted-sst");
    assertEquals(StateLoadException.Reason.MISSING_FILE, e.reason(), e.getMessage());
    assertNames(e, "deleted-sst", VERSIONS, versionKey(2), "does not exist");
  }

  @Test
  void aLocalSstChangedOnDiskIsDetectedBeforeReuse() throws Exception {
    commitVersions("local");
    try (SyncedStore s = open("local", "local-reader")) {
      s.load(VERSIONS, Optional.empty());
      assertArrayEquals(b("v5-7"), s.get(b("key-7")));
      java.util.List<Path> ssts = null;
      for (int attempt = 0; ssts == null; attempt++) {
        try (Stream<Path> files = Files.walk(work.resolve("local-reader"))) {
          ssts = files.filter(p -> p.toString().endsWith(".sst")).toList();
        } catch (java.io.UncheckedIOException racedWithCompaction) {
          // a background compaction of the restored database removed a file during the walk
          if (attempt >= 10) {
            throw racedWithCompaction;
          }
          Thread.sleep(50);
        }
      }
      assertFalse(ssts.isEmpty(), "the local database holds SSTs");
      java.util.List<Path> flipped = new java.util.ArrayList<>();
      for (Path sst : ssts) {
        try {
          java.nio.file.attribute.FileTime before = Files.getLastModifiedTime(sst);
          flipByte(sst, 64);
          // A write lands in the same file-system timestamp tick as the restore when it comes
          // within a few ms of it: the stamps (size, mtime) cannot see that, only a read's
          // checksum can (LocalReadErrorTest). This test is about the stamps: a later write.
          Files.setLastModifiedTime(sst, java.nio.file.attribute.FileTime.fromMillis(
              before.toMillis() + 2_000));
          flipped.add(sst);
        } catch (java.nio.file.NoSuchFileException | java.io.FileNotFoundException gone) {
          // a background compaction of the restored database replaced it meanwhile
        }
      }
      assertFalse(flipped.isEmpty(), "flipped a live SST of " + ssts);
      Path sst = flipped.get(0);
      // the next batch loads the same version: the change is noticed and the version is
      // restored from the object store instead of reusing the damaged database
      s.load(VERSIONS, Optional.empty());
      assertTrue(s.lastRestore().filesDownloaded() > 0, "restored, not reused: " + s.lastRestore());
      assertEquals(100, s.numKeys());
      for (int i = 0; i < 100; i++) {
        assertArrayEquals(b("v5-" + i), s.get(b("key-" + i)), "key-" + i);
      }
      assertFalse(Files.exists(sst), "the damaged database was dropped");
    }
  }

  // Files larger than a transfer thread's share of the restore are downloaded as ranged GETs
  // of parts written at their offsets, and verified once all parts are in (Restorer).

  private static final int BIG_KEYS = 3000;

  /** Version 1: 3000 keys of 1 KiB values (a delta of about 3 MB, several parts of >= 1 MiB). */
  private static void commitBigVersion(String name) throws IOException {
    try (SyncedStore s = open(name, name + "-writer")) {
      s.load(0, Optional.empty());
      java.util.Random r = new java.util.Random(42);
      for (int i = 0; i < BIG_KEYS; i++) {
        byte[] v = new byte[1024];
        r.nextBytes(v); // incompressible: the SST stays about 3 MB
        s.put(b("big-" + i), v);
      }
      s.commit();
    }
  }

  private static byte[] bigValue(int i) {
    java.util.Random r = new java.util.Random(42);
    byte[] v = new byte[1024];
    for (int k = 0; k <= i; k++) {
      r.nextBytes(v);
    }
    return v;
  }

  @Test
  void aFileDownloadedInPartsRestoresExactly() throws Exception {
    commitBigVersion("parts-intact");
    long size = Files.size(file("parts-intact", versionKey(1)));
    assertTrue(size > 2 * DownloadPlan.MIN_PART_BYTES, "the delta spans several parts: " + size);
    try (SyncedStore s = open("parts-intact", "parts-intact-reader")) {
      s.load(1, Optional.empty());
      assertEquals(BIG_KEYS, s.numKeys());
      for (int i : new int[] {0, 1, 1234, BIG_KEYS - 1}) {
        assertArrayEquals(bigValue(i), s.get(b("big-" + i)), "key big-" + i);
      }
      assertTrue(s.lastRestore().bytesDownloaded() > 2 * DownloadPlan.MIN_PART_BYTES);
      assertTrue(s.lastRestore().downloadMs() <= s.lastRestore().restoreMs());
    }
  }

  @Test
  void oneFlippedByteInTheLastPartOfAFile() throws Exception {
    commitBigVersion("parts-flip");
    Path f = file("parts-flip", versionKey(1));
    flipByte(f, Files.size(f) * 3 / 4); // in the SST delta, past its first part
    try (SyncedStore s = open("parts-flip", "parts-flip-reader")) {
      StateLoadException e = assertThrows(StateLoadException.class,
          () -> s.load(1, Optional.empty()));
      assertEquals(StateLoadException.Reason.CORRUPT, e.reason(), e.getMessage());
      assertNames(e, "parts-flip", 1, versionKey(1), "do not match the manifest");
    }
  }

  @Test
  void aFileTruncatedInsideItsLastPart() throws Exception {
    commitBigVersion("parts-trunc");
    Path f = file("parts-trunc", versionKey(1));
    try (RandomAccessFile raf = new RandomAccessFile(f.toFile(), "rw")) {
      raf.setLength(DownloadPlan.MIN_PART_BYTES + 100); // the manifest tail is gone too
    }
    try (SyncedStore s = open("parts-trunc", "parts-trunc-reader")) {
      StateLoadException e = assertThrows(StateLoadException.class,
          () -> s.load(1, Optional.empty()));
      assertNames(e, "parts-trunc", 1, versionKey(1), "invalid");
    }
  }
}
