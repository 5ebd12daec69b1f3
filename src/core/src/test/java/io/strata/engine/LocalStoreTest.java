// SPDX-License-Identifier: Apache-2.0
package io.strata.engine;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.format.Checksums;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class LocalStoreTest {
  @TempDir Path tmp;

  private static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static List<String> keys(CloseableIterator<KeyValue> it) {
    List<String> out = new ArrayList<>();
    while (it.hasNext()) {
      out.add(new String(it.next().key(), StandardCharsets.UTF_8));
    }
    return out;
  }

  @Test
  void pendingWritesAreVisibleBeforeCommitAndGoneAfterAbort() throws Exception {
    try (LocalStore s = LocalStore.open(tmp.resolve("db"), 0, SharedMemory.Limits.DEFAULT)) {
      s.put(b("a"), b("1"));
      assertArrayEquals(b("1"), s.get(b("a")));
      assertEquals(1, s.numKeys());
      s.discardPending();
      assertNull(s.get(b("a")));
      assertEquals(0, s.numKeys());
    }
  }

  @Test
  void deltaChecksumAndSizeAreThoseOfTheFileForSmallAndLargeDeltas() throws Exception {
    // Deltas of up to 4 MiB of pending writes are built in memory and keep their bytes (the
    // upload sends them), larger ones are streamed to the file and hashed on the way: both must
    // give the file's own XXHash64 and size (the manifest records them; a restore verifies them).
    try (LocalStore s = LocalStore.open(tmp.resolve("db"), 0, SharedMemory.Limits.DEFAULT)) {
      java.util.Random r = new java.util.Random(7);
      for (int n : new int[] {1, 100, 20_000, 40_000}) {
        for (int i = 0; i < n; i++) {
          byte[] v = new byte[n == 40_000 ? 128 : 64];
          r.nextBytes(v); // incompressible
          s.put(b("k" + i), v);
        }
        boolean streamed = s.pendingBytes() > LocalStore.IN_MEMORY_DELTA_BYTES;
        assertEquals(n == 40_000, streamed, "pending bytes " + s.pendingBytes());
        Path sst = tmp.resolve("d" + n + ".sst");
        DeltaFile d = s.writeDelta(sst).orElseThrow();
        assertEquals(Files.size(sst), d.size(), "size, " + n + " entries");
        assertEquals(Checksums.xxhash64(sst), d.checksum(), "checksum, " + n + " entries");
        assertEquals(n, d.entries());
        if (streamed) {
          assertNull(d.bytes());
        } else {
          assertArrayEquals(Files.readAllBytes(sst), d.bytes());
        }
        s.commitPending(Optional.of(d));
        assertTrue(s.numKeys() >= n, "keys after " + n + " entries: " + s.numKeys());
      }
    }
  }

  @Test
  void theJavaSstReaderReadsEveryDeltaEntryTombstonesIncluded() throws Exception {
    // The change feed reads deltas with io.strata.format.sst.SstReader: it must see exactly the
    // pending writes, in key order, with removals as deletes, in the table format the local
    // database's options give SST deltas.
    try (LocalStore s = LocalStore.open(tmp.resolve("db"), 0, SharedMemory.Limits.DEFAULT)) {
      s.put(b("b"), b("2"));
      s.put(b("a"), b("1"));
      s.commitPending(s.writeDelta(tmp.resolve("d1.sst")));
      java.util.TreeMap<String, String> expected = new java.util.TreeMap<>();
      for (int i = 0; i < 5_000; i++) { // several 16 KiB blocks
        s.put(b("k" + i), b("value-" + i));
        expected.put("k" + i, "value-" + i);
      }
      s.delete(b("a"));
      expected.put("a", null);
      s.put(b("b"), b("22"));
      expected.put("b", "22");
      Path sst = tmp.resolve("d2.sst");
      s.writeDelta(sst).orElseThrow();
      java.util.TreeMap<String, String> read = new java.util.TreeMap<>();
      io.strata.format.sst.SstReader r = io.strata.format.sst.SstReader.open(
          java.nio.ByteBuffer.wrap(Files.readAllBytes(sst)));
      String previous = null;
      for (io.strata.format.sst.SstReader.Entry e = r.next(); e != null; e = r.next()) {
        String k = new String(e.key(), StandardCharsets.UTF_8);
        assertTrue(previous == null || previous.compareTo(k) < 0, "key order at " + k);
        previous = k;
        read.put(k, e.op() == io.strata.format.sst.SstReader.Op.DELETE ? null
            : new String(e.value(), StandardCharsets.UTF_8));
      }
      assertEquals(expected, read);
      assertTrue(r.dataBlockCount() > 1, "blocks: " + r.dataBlockCount());
    }
  }

  @Test
  void deltaIsIngestedByteForByteAndTombstonesHideCommittedKeys() throws Exception {
    try (LocalStore s = LocalStore.open(tmp.resolve("db"), 0, SharedMemory.Limits.DEFAULT)) {
      s.put(b("a"), b("1"));
      s.put(b("b"), b("2"));
      s.put(b("c"), b("3"));
      Path sst1 = tmp.resolve("d1.sst");
      Optional<DeltaFile> d1 = s.writeDelta(sst1);
      assertTrue(d1.isPresent());
      long checksum = d1.get().checksum();
      assertEquals(checksum, Checksums.xxhash64(sst1));
      s.commitPending(d1);
      assertEquals(3, s.numKeys());

      s.delete(b("b"));
      s.put(b("c"), b("33"));
      s.put(b("d"), b("4"));
      assertEquals(List.of("a", "c", "d"), keys(s.scan(new byte[0])));
      Optional<DeltaFile> d2 = s.writeDelta(tmp.resolve("d2.sst"));
      s.commitPending(d2);
      assertNull(s.get(b("b")));
      assertArrayEquals(b("33"), s.get(b("c")));
      assertEquals(3, s.numKeys());
      assertEquals(List.of("a", "c", "d"), keys(s.scan(new byte[0])));

      // The ingested file in the DB is the very bytes we wrote (write_global_seqno=false).
      Path cp = tmp.resolve("cp");
      s.checkpoint(cp);
      boolean found = false;
      try (var files = Files.list(cp)) {
        for (Path f : files.filter(p -> p.toString().endsWith(".sst")).toList()) {
          if (Files.size(f) == d1.get().size() && Checksums.xxhash64(f) == checksum) {
            found = true;
          }
        }
      }
      assertTrue(found, "the first delta should be in the checkpoint unchanged");
    }
  }

  @Test
  void overlappingDeltasIngestedInOneCallLetTheLaterFileWin() throws Exception {
    List<Path> deltas = new ArrayList<>();
    try (LocalStore w = LocalStore.open(tmp.resolve("writer"), 0, SharedMemory.Limits.DEFAULT)) {
      for (int v = 1; v <= 3; v++) {
        for (int i = 0; i < 100; i++) {
          w.put(b("k" + (i * v % 100)), b("v" + v + "-" + i));
        }
        w.delete(b("k" + (v * 7)));
        Path sst = tmp.resolve("d" + v + ".sst");
        Path copy = tmp.resolve("copy" + v + ".sst");
        Optional<DeltaFile> d = w.writeDelta(sst);
        Files.copy(sst, copy);
        deltas.add(copy);
        w.commitPending(d);
      }
      try (LocalStore r = LocalStore.open(tmp.resolve("reader"), 0, SharedMemory.Limits.DEFAULT)) {
        r.ingestAll(deltas);
        try (CloseableIterator<KeyValue> a = w.scan(new byte[0]);
            CloseableIterator<KeyValue> c = r.scan(new byte[0])) {
          int n = 0;
          while (a.hasNext()) {
            assertTrue(c.hasNext());
            KeyValue x = a.next();
            KeyValue y = c.next();
            assertArrayEquals(x.key(), y.key());
            assertArrayEquals(x.value(), y.value(), new String(x.key(), StandardCharsets.UTF_8));
            n++;
          }
          assertFalse(c.hasNext());
          assertEquals(99, n, "k0..k99 less k21, deleted by the last delta");
        }
      }
    }
  }

  @Test
  void emptyVersionWritesNoDelta() throws Exception {
    try (LocalStore s = LocalStore.open(tmp.resolve("db"), 0, SharedMemory.Limits.DEFAULT)) {
      assertFalse(s.writeDelta(tmp.resolve("x.sst")).isPresent());
      assertFalse(Files.exists(tmp.resolve("x.sst")));
    }
  }

  @Test
  void prefixScanReturnsOnlyMatchingKeysInOrder() throws Exception {
    try (LocalStore s = LocalStore.open(tmp.resolve("db"), 0, SharedMemory.Limits.DEFAULT)) {
      s.put(b("p1/b"), b("x"));
      s.put(b("p2/a"), b("x"));
      s.commitPending(s.writeDelta(tmp.resolve("d.sst")));
      s.put(b("p1/a"), b("x"));
      s.put(b("p1/c"), b("x"));
      s.delete(b("p1/b"));
      assertEquals(List.of("p1/a", "p1/c"), keys(s.scan(b("p1/"))));
    }
  }

  @Test
  void rangeScanReturnsKeysFromStartUntilEndExclusiveWithinThePrefix() throws Exception {
    try (LocalStore s = LocalStore.open(tmp.resolve("db"), 0, SharedMemory.Limits.DEFAULT)) {
      for (String k : List.of("p1/a", "p1/c", "p1/e", "p2/b")) {
        s.put(b(k), b("x"));
      }
      s.commitPending(s.writeDelta(tmp.resolve("d.sst")));
      s.put(b("p1/b"), b("x")); // pending
      s.put(b("p1/d"), b("x")); // pending
      s.delete(b("p1/c"));      // tombstone over a committed key
      assertEquals(List.of("p1/b", "p1/d"), keys(s.scan(b("p1/"), b("p1/b"), b("p1/e"))));
      assertEquals(List.of("p1/a", "p1/b"), keys(s.scan(b("p1/"), null, b("p1/c"))));
      assertEquals(List.of("p1/d", "p1/e"), keys(s.scan(b("p1/"), b("p1/cc"), null)));
      assertThrows(IllegalArgumentException.class, () -> s.scan(b("p1/"), b("p2/a"), null));
    }
  }

  @Test
  void writesWhileIteratingAreAllowed() throws Exception {
    try (LocalStore s = LocalStore.open(tmp.resolve("db"), 0, SharedMemory.Limits.DEFAULT)) {
      for (int i = 0; i < 100; i++) {
        s.put(b(String.format("k%03d", i)), b("v"));
      }
      s.commitPending(s.writeDelta(tmp.resolve("d.sst")));
      int seen = 0;
      try (CloseableIterator<KeyValue> it = s.scan(new byte[0])) {
        while (it.hasNext()) {
          KeyValue kv = it.next();
          s.delete(kv.key());
          seen++;
        }
      }
      assertEquals(100, seen);
      assertEquals(0, s.numKeys());
      assertEquals(List.of(), keys(s.scan(new byte[0])));
    }
  }

  /**
   * A scan sees pending writes as they were when it started (as a RocksDB iterator sees its
   * implicit snapshot in Spark's provider): puts, overwrites and removals made while it runs,
   * ahead of its position, do not change what it returns.
   */
  @Test
  void aScanSeesPendingWritesAsOfItsStart() throws Exception {
    try (LocalStore s = LocalStore.open(tmp.resolve("db"), 0, SharedMemory.Limits.DEFAULT)) {
      s.put(b("a1"), b("c"));
      s.commitPending(s.writeDelta(tmp.resolve("d.sst")));
      s.put(b("a2"), b("p"));
      s.put(b("a4"), b("p"));
      s.put(b("b1"), b("other prefix"));
      List<String> seen = new ArrayList<>();
      try (CloseableIterator<KeyValue> it = s.scan(b("a"))) {
        while (it.hasNext()) {
          KeyValue kv = it.next();
          seen.add(new String(kv.key(), StandardCharsets.UTF_8) + "="
              + new String(kv.value(), StandardCharsets.UTF_8));
          if (seen.size() == 1) {
            s.put(b("a3"), b("new"));     // ahead of the scan: not seen
            s.delete(b("a4"));           // ahead of the scan: still seen
            s.put(b("a2"), b("changed")); // ahead of the scan: old value seen
          }
        }
      }
      assertEquals(List.of("a1=c", "a2=p", "a4=p"), seen);
      assertEquals(List.of("a1", "a2", "a3"), keys(s.scan(b("a"))));
      assertArrayEquals(b("changed"), s.get(b("a2")));
    }
  }

  @Test
  void aSpilledDatabaseIsNeverCheckpointedUntilItsVersionCommits() throws Exception {
    try (LocalStore s = LocalStore.open(tmp.resolve("db"), 0, SharedMemory.Limits.DEFAULT)) {
      assertEquals(LocalStore.State.CLEAN, s.state());
      s.put(b("a"), b("1"));
      s.spillPending(s.writeDelta(tmp.resolve("spill.sst")).orElseThrow());
      assertEquals(LocalStore.State.SPILLED, s.state());
      IllegalStateException e = assertThrows(IllegalStateException.class,
          () -> s.checkpoint(tmp.resolve("cp1")));
      assertTrue(e.getMessage().contains("spilled"), e.getMessage());
      assertFalse(Files.exists(tmp.resolve("cp1")));
      // Dropping the pending writes cannot take spilled writes out of the database.
      s.discardPending();
      assertEquals(LocalStore.State.SPILLED, s.state());
      assertThrows(IllegalStateException.class, () -> s.checkpoint(tmp.resolve("cp2")));
      s.put(b("b"), b("2"));
      s.commitPending(s.writeDelta(tmp.resolve("d.sst")));
      assertEquals(LocalStore.State.CLEAN, s.state());
      s.checkpoint(tmp.resolve("cp3"));
      assertTrue(Files.exists(tmp.resolve("cp3").resolve("CURRENT")));
    }
  }

  @Test
  void closeFreesTheMemoryLeaseAndReportsNoMemory() throws Exception {
    SharedMemory memory = new SharedMemory();
    LocalStore s = LocalStore.open(tmp.resolve("db"), 0, memory,
        new SharedMemory.Limits(true, 4L << 20));
    s.put(b("a"), b("1"));
    s.commitPending(s.writeDelta(tmp.resolve("d.sst")));
    assertArrayEquals(b("1"), s.get(b("a")));
    assertTrue(s.memoryUsage().blockCacheBytes() > 0, "the read block is cached");
    assertEquals(1, memory.usage().stores());
    s.close();
    assertEquals(LocalStore.State.CLOSED, s.state());
    assertEquals(LocalStore.MemoryUsage.NONE, s.memoryUsage());
    assertEquals(SharedMemory.Usage.NONE, memory.usage());
    assertThrows(IllegalStateException.class, () -> s.checkpoint(tmp.resolve("cp")));
    assertThrows(IllegalStateException.class, () -> s.commitPending(Optional.empty()));
  }

  @Test
  void useAfterCloseIsAClearError() throws Exception {
    LocalStore s = LocalStore.open(tmp.resolve("db"), 0, SharedMemory.Limits.DEFAULT);
    CloseableIterator<KeyValue> it = s.scan(new byte[0]);
    s.close();
    s.close();
    assertThrows(IllegalStateException.class, () -> s.get(b("a")));
    it.close();
  }

  // ---------------------------------------------------------------- local read errors

  /** Keys of {@link #writeLarge}: {@code k-00000} .. {@code k-19999}. */
  private static final int LARGE_KEYS = 20_000;

  private static byte[] largeKey(int i) {
    return b(String.format("k-%05d", i));
  }

  /** 100 incompressible bytes derived from {@code i}: the SST is about 2 MB, ~130 blocks. */
  private static byte[] largeValue(int i) {
    byte[] v = new byte[100];
    new java.util.Random(i).nextBytes(v);
    return v;
  }

  /** Commits {@link #LARGE_KEYS} keys as one ingested SST and returns the database's SST. */
  private Path writeLarge(LocalStore s) throws Exception {
    for (int i = 0; i < LARGE_KEYS; i++) {
      s.put(largeKey(i), largeValue(i));
    }
    s.commitPending(s.writeDelta(tmp.resolve("large.sst")));
    List<String> live = new ArrayList<>(s.liveSstFiles());
    assertEquals(1, live.size(), "one SST: " + live);
    return s.dir().resolve(live.get(0));
  }

  /**
   * Flips 16 bytes in the middle of {@code sst} (a data block) and restores its modification
   * time: size, mtime and inode are unchanged, so only RocksDB's block checksum can tell.
   */
  static void damageMiddle(Path sst) throws Exception {
    java.nio.file.attribute.FileTime mtime = Files.getLastModifiedTime(sst);
    try (java.io.RandomAccessFile raf = new java.io.RandomAccessFile(sst.toFile(), "rw")) {
      long mid = raf.length() / 2;
      byte[] buf = new byte[16];
      raf.seek(mid);
      raf.readFully(buf);
      for (int i = 0; i < buf.length; i++) {
        buf[i] ^= (byte) 0x5a;
      }
      raf.seek(mid);
      raf.write(buf);
    }
    Files.setLastModifiedTime(sst, mtime);
  }

  /** Drains {@code it}; returns how many elements it gave before it ended or threw. */
  private static int drain(CloseableIterator<KeyValue> it, int[] seen) {
    while (it.hasNext()) {
      it.next();
      seen[0]++;
    }
    return seen[0];
  }

  @Test
  void aCorruptBlockFailsEveryScanInsteadOfEndingItEarly() throws Exception {
    Path dir = tmp.resolve("db");
    Path sst;
    try (LocalStore s = LocalStore.open(dir, 0, SharedMemory.Limits.DEFAULT)) {
      sst = writeLarge(s);
    }
    damageMiddle(sst);
    // A fresh memory owner: no block of the file is cached, so the damaged block is read.
    try (LocalStore s = LocalStore.open(dir, LARGE_KEYS, new SharedMemory(),
        SharedMemory.Limits.DEFAULT)) {
      byte[] all = new byte[0];
      byte[] prefix = b("k-");
      byte[] from = largeKey(LARGE_KEYS / 4);
      byte[] until = largeKey(3 * LARGE_KEYS / 4);
      for (String kind : List.of("iterator", "prefix", "range", "pending overlay")) {
        if (kind.equals("pending overlay")) {
          s.put(b("zz-pending"), b("p")); // a pending write after the damaged block
        }
        int[] seen = {0};
        LocalReadException e = assertThrows(LocalReadException.class, () -> {
          CloseableIterator<KeyValue> it = switch (kind) {
            case "prefix" -> s.scan(prefix);
            case "range" -> s.scan(prefix, from, until);
            default -> s.scan(all);
          };
          drain(it, seen);
        }, kind + " scan must fail, not end early");
        int expected = kind.equals("range") ? LARGE_KEYS / 2 : LARGE_KEYS;
        assertTrue(seen[0] < expected, kind + ": " + seen[0] + " of " + expected
            + " before the error");
        assertTrue(e.getMessage().contains(dir.toString()), "names the directory: " + e);
        assertTrue(e.getMessage().contains(sst.getFileName().toString()), "names the file: " + e);
        assertEquals(dir, e.dir());
        assertEquals(0, s.openScans(), kind + ": the failed scan was closed");
      }
      s.discardPending();
    }
  }

  @Test
  void aCorruptBlockFailsAPointReadNeverReturnsAbsent() throws Exception {
    Path dir = tmp.resolve("db");
    Path sst;
    try (LocalStore s = LocalStore.open(dir, 0, SharedMemory.Limits.DEFAULT)) {
      sst = writeLarge(s);
    }
    damageMiddle(sst);
    try (LocalStore s = LocalStore.open(dir, LARGE_KEYS, new SharedMemory(),
        SharedMemory.Limits.DEFAULT)) {
      int failed = 0;
      for (int i = 0; i < LARGE_KEYS; i++) {
        try {
          assertArrayEquals(largeValue(i), s.get(largeKey(i)), "key " + i);
        } catch (LocalReadException e) {
          failed++;
          assertTrue(e.getMessage().contains(sst.getFileName().toString()), e.getMessage());
          assertTrue(e.getMessage().contains(dir.toString()), e.getMessage());
        }
      }
      assertTrue(failed > 0, "the keys of the damaged block fail to read");
      assertTrue(failed < LARGE_KEYS, "the other blocks still read");
      // put's and delete's existence checks read too
      byte[] victim = null;
      for (int i = 0; i < LARGE_KEYS && victim == null; i++) {
        try {
          s.get(largeKey(i));
        } catch (LocalReadException e) {
          victim = largeKey(i);
        }
      }
      byte[] k = victim;
      assertThrows(LocalReadException.class, () -> s.put(k, b("x")));
      assertThrows(LocalReadException.class, () -> s.delete(k));
      assertFalse(s.hasPendingWrites(), "a failed existence check records nothing");
    }
  }
  /**
   * Deltas of an append-only key space land at the bottommost level, where RocksDB's leveled
   * compaction never merges them: one file per commit. {@link LocalStore#mergeSmallFiles} merges
   * them once more than {@link SmallFileMerge#MAX_SMALL_FILES} piled up, and the data is intact.
   */
  @Test
  void smallFilesOfAnAppendOnlyKeySpaceAreMergedOnceTooMany() throws Exception {
    int commits = SmallFileMerge.MAX_SMALL_FILES + 4;
    try (LocalStore s = LocalStore.open(tmp.resolve("db"), 0, SharedMemory.Limits.DEFAULT)) {
      for (int v = 0; v < commits; v++) {
        for (int i = 0; i < 50; i++) {
          s.put(b(String.format("k%05d", v * 50 + i)), b("v" + v));
        }
        DeltaFile d = s.writeDelta(tmp.resolve("d" + v + ".sst")).orElseThrow();
        s.commitPending(Optional.of(d));
        if (v == SmallFileMerge.MAX_SMALL_FILES - 1) {
          assertEquals(0, s.mergeSmallFiles(), "not due at " + (v + 1) + " files");
        }
      }
      assertEquals(commits, sstFiles(s), "one file per commit, as ingested");
      assertEquals(commits, s.mergeSmallFiles());
      assertEquals(1, sstFiles(s), "merged into one file");
      assertEquals(0, s.mergeSmallFiles(), "nothing more to merge");
      assertEquals(commits * 50L, s.numKeys());
      assertArrayEquals(b("v0"), s.get(b("k00000")));
      assertArrayEquals(b("v" + (commits - 1)), s.get(b(String.format("k%05d",
          commits * 50 - 1))));
      try (CloseableIterator<KeyValue> it = s.scan(new byte[0])) {
        assertEquals(commits * 50, keys(it).size());
      }
    }
  }

  private static long sstFiles(LocalStore s) throws Exception {
    try (java.util.stream.Stream<Path> files = Files.list(s.dir())) {
      return files.filter(p -> p.getFileName().toString().endsWith(".sst")).count();
    }
  }
}
