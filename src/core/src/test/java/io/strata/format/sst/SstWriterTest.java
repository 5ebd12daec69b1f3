// SPDX-License-Identifier: Apache-2.0
package io.strata.format.sst;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.rocksdb.BlockBasedTableConfig;
import org.rocksdb.BloomFilter;
import org.rocksdb.CompressionType;
import org.rocksdb.FlushOptions;
import org.rocksdb.IngestExternalFileOptions;
import org.rocksdb.Options;
import org.rocksdb.ReadOptions;
import org.rocksdb.RocksDB;
import org.rocksdb.SstFileReader;
import org.rocksdb.SstFileReaderIterator;
import org.rocksdb.TableProperties;

/**
 * Golden tests of the pure-Java SST writer against RocksDB itself (the rocksdbjni on the class
 * path, 9.8, which the 4.x lines bundle; for Spark 3.5's 8.3, run {@code mvn test
 * -Drocksdb.version=8.3.2 -Dtest=SstWriterTest} in this module; the 3.5 module's integration
 * tests ingest these deltas into 8.3 on every build): RocksDB's
 * reader verifies every block checksum and reads back every put; a database ingests the file
 * and answers point reads and scans through its filter; the filter is byte for byte the one
 * RocksDB's {@code SstFileWriter} builds for the same keys; Strata's own reader returns every
 * entry, tombstones included.
 */
class SstWriterTest {
  static {
    RocksDB.loadLibrary();
  }

  @TempDir Path tmp;

  /** Key (unsigned byte order) to value, null for a tombstone. */
  private static TreeMap<byte[], byte[]> randomWrites(Random r, int n, int maxKey, int maxValue) {
    TreeMap<byte[], byte[]> writes = new TreeMap<>(Arrays::compareUnsigned);
    while (writes.size() < n) {
      byte[] k = new byte[1 + r.nextInt(maxKey)];
      r.nextBytes(k);
      if (r.nextInt(4) == 0) {
        writes.put(k, null);
      } else {
        byte[] v = new byte[r.nextInt(maxValue + 1)];
        if (r.nextBoolean()) {
          Arrays.fill(v, (byte) 'x'); // compressible
        } else {
          r.nextBytes(v);
        }
        writes.put(k, v);
      }
    }
    return writes;
  }

  /** Adds {@code writes} to {@code w} (a null value is a tombstone). */
  private static void add(SstWriter w, TreeMap<byte[], byte[]> writes) throws Exception {
    for (Map.Entry<byte[], byte[]> e : writes.entrySet()) {
      if (e.getValue() == null) {
        w.delete(e.getKey());
      } else {
        w.put(e.getKey(), e.getValue());
      }
    }
  }

  private static byte[] javaSst(TreeMap<byte[], byte[]> writes) throws Exception {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    SstWriter w = new SstWriter(out);
    add(w, writes);
    long size = w.finish();
    assertEquals(writes.size(), w.entries());
    byte[] bytes = out.toByteArray();
    assertEquals(bytes.length, size);
    return bytes;
  }

  private static Options dbOptions(BloomFilter bloom) {
    return new Options().setCreateIfMissing(true)
        .setCompressionType(CompressionType.LZ4_COMPRESSION)
        .setTableFormatConfig(new BlockBasedTableConfig().setFilterPolicy(bloom)
            .setBlockSize(16 * 1024));
  }

  @ParameterizedTest
  @ValueSource(ints = {1, 7, 1250, 20_000})
  void rocksDbReadsEveryPutAndVerifiesEveryBlock(int n) throws Exception {
    TreeMap<byte[], byte[]> writes = randomWrites(new Random(n), n, 40, 300);
    Path f = tmp.resolve("j.sst");
    Files.write(f, javaSst(writes));
    try (BloomFilter bloom = new BloomFilter(10, false); Options o = dbOptions(bloom);
        SstFileReader r = new SstFileReader(o)) {
      r.open(f.toString());
      r.verifyChecksum();
      TableProperties p = r.getTableProperties();
      assertEquals(n, p.getNumEntries());
      assertEquals(writes.values().stream().filter(v -> v == null).count(), p.getNumDeletions());
      assertEquals("rocksdb.BuiltinBloomFilter", p.getFilterPolicyName());
      assertEquals("leveldb.BytewiseComparator", p.getComparatorName());
      assertTrue(p.getNumDataBlocks() >= 1);
      try (ReadOptions ro = new ReadOptions().setVerifyChecksums(true);
          SstFileReaderIterator it = r.newIterator(ro)) {
        List<byte[]> seen = new ArrayList<>();
        for (it.seekToFirst(); it.isValid(); it.next()) {
          byte[] expected = writes.get(it.key());
          assertArrayEquals(expected, it.value());
          seen.add(it.key());
        }
        it.status();
        assertEquals(writes.values().stream().filter(v -> v != null).count(), seen.size());
      }
    }
  }

  /**
   * The parts a commit reports (issue 45, the commit's own cost): they add up to the file, and
   * the filter and index are the blocks RocksDB's table properties name, each with its 5-byte
   * trailer.
   */
  @ParameterizedTest
  @ValueSource(ints = {1, 1250, 20_000})
  void partsAddUpToTheFileAsRocksDbSizesItsBlocks(int n) throws Exception {
    TreeMap<byte[], byte[]> writes = randomWrites(new Random(11 * n), n, 40, 300);
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    SstWriter w = new SstWriter(out);
    assertThrows(IllegalStateException.class, w::parts);
    add(w, writes);
    long size = w.finish();
    SstWriter.Parts parts = w.parts();
    assertEquals(size, parts.total());
    Path f = tmp.resolve("parts.sst");
    Files.write(f, out.toByteArray());
    try (BloomFilter bloom = new BloomFilter(10, false); Options o = dbOptions(bloom);
        SstFileReader r = new SstFileReader(o)) {
      r.open(f.toString());
      TableProperties p = r.getTableProperties();
      assertEquals(p.getFilterSize() + 5, parts.filter());
      assertEquals(p.getIndexSize() + 5, parts.index());
      assertEquals(p.getRawKeySize(), parts.rawKeys());
      assertEquals(p.getRawValueSize(), parts.rawValues());
      assertTrue(parts.data() > 0 && parts.tableMeta() > 0, parts.toString());
    }
  }

  @ParameterizedTest
  @ValueSource(ints = {1, 1250, 20_000})
  void strataReaderReturnsEveryEntryWithTombstones(int n) throws Exception {
    TreeMap<byte[], byte[]> writes = randomWrites(new Random(7 * n), n, 40, 300);
    List<SstReader.Entry> read = SstReader.open(ByteBuffer.wrap(javaSst(writes))).readAll();
    assertEquals(writes.size(), read.size());
    int i = 0;
    for (Map.Entry<byte[], byte[]> e : writes.entrySet()) {
      SstReader.Entry got = read.get(i++);
      assertArrayEquals(e.getKey(), got.key());
      if (e.getValue() == null) {
        assertEquals(SstReader.Op.DELETE, got.op());
      } else {
        assertEquals(SstReader.Op.PUT, got.op());
        assertArrayEquals(e.getValue(), got.value());
      }
    }
  }

  @Test
  void aDatabaseIngestsItAndItsTombstonesAndFilterAnswerPointReads() throws Exception {
    Random r = new Random(42);
    TreeMap<byte[], byte[]> base = randomWrites(r, 5_000, 24, 100);
    base.replaceAll((k, v) -> v == null ? new byte[] {1} : v);
    TreeMap<byte[], byte[]> delta = new TreeMap<>(Arrays::compareUnsigned);
    int i = 0;
    for (byte[] k : base.keySet()) { // remove a third, update a third of the base's keys
      if (i % 3 == 0) {
        delta.put(k, null);
      } else if (i % 3 == 1) {
        delta.put(k, ("new" + i).getBytes());
      }
      i++;
    }
    delta.putAll(randomWrites(r, 2_000, 24, 100)); // and new keys (some tombstones of nothing)
    TreeMap<byte[], byte[]> expected = new TreeMap<>(Arrays::compareUnsigned);
    expected.putAll(base);
    delta.forEach((k, v) -> {
      if (v == null) {
        expected.remove(k);
      } else {
        expected.put(k, v);
      }
    });
    Path f = tmp.resolve("delta.sst");
    Files.write(f, javaSst(delta));
    try (BloomFilter bloom = new BloomFilter(10, false); Options o = dbOptions(bloom);
        RocksDB db = RocksDB.open(o, tmp.resolve("db").toString());
        ReadOptions ro = new ReadOptions().setVerifyChecksums(true);
        IngestExternalFileOptions io = new IngestExternalFileOptions().setMoveFiles(true)
            .setWriteGlobalSeqno(false)) {
      for (Map.Entry<byte[], byte[]> e : base.entrySet()) {
        db.put(e.getKey(), e.getValue());
      }
      try (FlushOptions fo = new FlushOptions().setWaitForFlush(true)) {
        db.flush(fo);
      }
      db.ingestExternalFile(List.of(f.toString()), io);
      assertAll(db, ro, expected, base, delta);
      db.compactRange(); // the delta merged into the database's own files
      assertAll(db, ro, expected, base, delta);
    }
  }

  private static void assertAll(RocksDB db, ReadOptions ro, TreeMap<byte[], byte[]> expected,
      TreeMap<byte[], byte[]> base, TreeMap<byte[], byte[]> delta) throws Exception {
    for (byte[] k : base.keySet()) {
      assertArrayEquals(expected.get(k), db.get(ro, k));
    }
    for (byte[] k : delta.keySet()) {
      assertArrayEquals(expected.get(k), db.get(ro, k));
    }
    Random r = new Random(1);
    for (int i = 0; i < 2_000; i++) { // absent keys: the filter must not hide present ones
      byte[] k = new byte[1 + r.nextInt(24)];
      r.nextBytes(k);
      assertArrayEquals(expected.get(k), db.get(ro, k));
    }
    int n = 0;
    try (var it = db.newIterator(ro)) {
      for (it.seekToFirst(); it.isValid(); it.next()) {
        assertArrayEquals(expected.get(it.key()), it.value());
        n++;
      }
      it.status();
    }
    assertEquals(expected.size(), n);
  }

  @ParameterizedTest
  @ValueSource(ints = {1, 2, 3, 100, 1250, 5_000})
  void filterIsByteForByteRocksDbsLegacyBloom(int n) throws Exception {
    TreeMap<byte[], byte[]> writes = randomWrites(new Random(n + 5), n, 30, 20);
    byte[] mine = filterOf(javaSst(writes));
    Path f = tmp.resolve("r.sst");
    try (BloomFilter bloom = new BloomFilter(10, false);
        Options o = new Options().setTableFormatConfig(new BlockBasedTableConfig()
            .setFilterPolicy(bloom).setFormatVersion(2))) {
      SstReaderTest.writeWithRocksDb(f, o, writes);
    }
    assertArrayEquals(filterOf(Files.readAllBytes(f)), mine);
  }

  @Test
  void bloomHashIsRocksDbsIncludingSignedTailBytes() {
    // Values from RocksDB's util/hash_test.cc (HashTest.Values: Hash with BloomHash's seed).
    assertEquals((int) 3164544308L, SstWriter.bloomHash(bytes()));
    assertEquals((int) 3195034349L, SstWriter.bloomHash(bytes(0x9a)));
    assertEquals(31066776, SstWriter.bloomHash(bytes(0x91, 0xf7)));
    assertEquals((int) 2157698265L, SstWriter.bloomHash(bytes(0x56, 0xdc, 0xd6)));
    assertEquals(118283265, SstWriter.bloomHash(bytes(0x67, 0x53, 0x81, 0x1c)));
    assertEquals((int) 4255445370L, SstWriter.bloomHash(bytes(0xd0, 0x7a, 0x6e, 0xea, 0x56)));
    assertEquals(815120748, SstWriter.bloomHash(bytes(0x5c, 0xbe, 0x97, 0x75, 0x54, 0x9a,
        0x52)));
  }

  private static byte[] bytes(int... b) {
    byte[] out = new byte[b.length];
    for (int i = 0; i < b.length; i++) {
      out[i] = (byte) b[i];
    }
    return out;
  }

  @Test
  void refusesKeysOutOfOrderAndEmptyFiles() throws Exception {
    SstWriter w = new SstWriter(new ByteArrayOutputStream());
    assertThrows(IllegalStateException.class, w::finish);
    w.put(new byte[] {2}, new byte[] {1});
    assertThrows(IllegalArgumentException.class, () -> w.put(new byte[] {2}, new byte[0]));
    assertThrows(IllegalArgumentException.class, () -> w.delete(new byte[] {1, 9}));
    w.put(new byte[] {2, 0}, new byte[0]); // a longer key after its prefix is in order
    w.finish();
    assertThrows(IllegalStateException.class, () -> w.put(new byte[] {3}, new byte[0]));
  }

  @Test
  void eachDeltaHasItsOwnSessionIdForBlockCacheKeys() throws Exception {
    TreeMap<byte[], byte[]> writes = randomWrites(new Random(3), 10, 8, 8);
    String a = property(javaSst(writes), "rocksdb.creating.session.identity");
    String b = property(javaSst(writes), "rocksdb.creating.session.identity");
    assertEquals(SstWriter.CHECKSUM_CRC32C, javaSst(writes)[javaSst(writes).length - 53]);
    assertEquals(20, a.length());
    assertTrue(a.chars().allMatch(c -> (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z')), a);
    assertFalse(a.equals(b));
    assertNull(nullIfAbsent(javaSst(writes), "rocksdb.range_del"));
  }

  // --- reading the metaindex of a format-version-2 file ---

  private static Map<String, byte[]> metaindex(byte[] sst) throws Exception {
    ByteBuffer b = ByteBuffer.wrap(sst).order(ByteOrder.LITTLE_ENDIAN);
    assertEquals(SstReader.MAGIC, b.getLong(sst.length - 8));
    assertEquals(2, b.getInt(sst.length - 12));
    SstReader.Cursor c = new SstReader.Cursor(b, sst.length - 52);
    return SstReader.entriesOf(SstReader.readBlock(b, c.handle(), 2, "metaindex"));
  }

  private static byte[] block(byte[] sst, byte[] handle) throws Exception {
    ByteBuffer b = ByteBuffer.wrap(sst).order(ByteOrder.LITTLE_ENDIAN);
    long[] h = new SstReader.Cursor(ByteBuffer.wrap(handle), 0).handle();
    return SstReader.readBlock(b, h, 2, "meta");
  }

  private static byte[] filterOf(byte[] sst) throws Exception {
    return block(sst, metaindex(sst).get(SstWriter.FILTER_BLOCK));
  }

  private static String property(byte[] sst, String name) throws Exception {
    byte[] props = block(sst, metaindex(sst).get("rocksdb.properties"));
    return new String(SstReader.entriesOf(props).get(name), "US-ASCII");
  }

  private static byte[] nullIfAbsent(byte[] sst, String metaName) throws Exception {
    return metaindex(sst).get(metaName);
  }
}
