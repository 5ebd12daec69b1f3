// SPDX-License-Identifier: Apache-2.0
package io.strata.format.sst;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
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
import org.rocksdb.CompressionType;
import org.rocksdb.DataBlockIndexType;
import org.rocksdb.EnvOptions;
import org.rocksdb.IndexType;
import org.rocksdb.Options;
import org.rocksdb.RocksDB;
import org.rocksdb.SstFileReader;
import org.rocksdb.SstFileReaderIterator;
import org.rocksdb.ReadOptions;
import org.rocksdb.SstFileWriter;

/**
 * The pure-Java reader against SSTs that RocksDB's own {@code SstFileWriter} wrote, with every
 * table option it claims to read; for the puts, RocksDB's own {@code SstFileReader} is the
 * oracle too (it hides deletions, which is why the Java reader exists).
 */
class SstReaderTest {
  static {
    RocksDB.loadLibrary();
  }

  @TempDir Path tmp;

  /** Key (unsigned byte order) to value, null for a delete; values half compressible. */
  static TreeMap<byte[], byte[]> randomWrites(Random r, int n, int maxValue) {
    TreeMap<byte[], byte[]> writes = new TreeMap<>(Arrays::compareUnsigned);
    while (writes.size() < n) {
      byte[] k = new byte[1 + r.nextInt(24)];
      r.nextBytes(k);
      if (r.nextInt(5) == 0) {
        writes.put(k, null);
      } else {
        byte[] v = new byte[r.nextInt(maxValue + 1)];
        // half compressible, half random
        if (r.nextBoolean()) {
          Arrays.fill(v, (byte) 'x');
        } else {
          r.nextBytes(v);
        }
        writes.put(k, v);
      }
    }
    return writes;
  }

  private Path write(Options options, TreeMap<byte[], byte[]> writes) throws Exception {
    return writeWithRocksDb(Files.createTempFile(tmp, "t", ".sst"), options, writes);
  }

  /** Writes {@code writes} (null values: deletes) to {@code file} with RocksDB's SstFileWriter. */
  static Path writeWithRocksDb(Path file, Options options, TreeMap<byte[], byte[]> writes)
      throws Exception {
    try (EnvOptions env = new EnvOptions(); SstFileWriter w = new SstFileWriter(env, options)) {
      w.open(file.toString());
      for (Map.Entry<byte[], byte[]> e : writes.entrySet()) {
        if (e.getValue() == null) {
          w.delete(e.getKey());
        } else {
          w.put(e.getKey(), e.getValue());
        }
      }
      w.finish();
    }
    return file;
  }

  private static void assertReads(TreeMap<byte[], byte[]> writes, Path file, String what)
      throws Exception {
    SstReader reader = SstReader.open(ByteBuffer.wrap(Files.readAllBytes(file)));
    List<SstReader.Entry> read = reader.readAll();
    assertEquals(writes.size(), read.size(), what + ": entries");
    int i = 0;
    for (Map.Entry<byte[], byte[]> e : writes.entrySet()) {
      SstReader.Entry got = read.get(i++);
      assertArrayEquals(e.getKey(), got.key(), what + ": key " + i);
      if (e.getValue() == null) {
        assertEquals(SstReader.Op.DELETE, got.op(), what + ": entry " + i);
        assertEquals(0, got.value().length);
      } else {
        assertEquals(SstReader.Op.PUT, got.op(), what + ": entry " + i);
        assertArrayEquals(e.getValue(), got.value(), what + ": value " + i);
      }
    }
    assertEquals(null, reader.next(), what + ": stays at the end");
  }

  private static Options options(BlockBasedTableConfig table, CompressionType compression) {
    return new Options().setTableFormatConfig(table).setCompressionType(compression);
  }

  @ParameterizedTest
  @ValueSource(ints = {2, 3, 4, 5, 6})
  void readsEveryFormatVersionWithManyBlocksBothCompressionsAndDeletes(int formatVersion)
      throws Exception {
    Random r = new Random(formatVersion);
    for (CompressionType c : List.of(CompressionType.NO_COMPRESSION,
        CompressionType.LZ4_COMPRESSION)) {
      for (int restart : new int[] {1, 3, 16}) {
        BlockBasedTableConfig table = new BlockBasedTableConfig().setFormatVersion(formatVersion)
            .setBlockSize(256).setBlockRestartInterval(restart).setIndexBlockRestartInterval(
                restart);
        try (Options o = options(table, c)) {
          TreeMap<byte[], byte[]> writes = randomWrites(r, 2_000, 600);
          Path file = write(o, writes);
          String what = "format " + formatVersion + ", " + c + ", restart interval " + restart;
          assertReads(writes, file, what);
          SstReader reader = SstReader.open(ByteBuffer.wrap(Files.readAllBytes(file)));
          assertEquals(formatVersion, reader.formatVersion(), what);
          assertTrue(reader.dataBlockCount() > 100, what + ": many blocks");
        }
      }
    }
  }

  @Test
  void readsIndexesWithFirstKeysAndHashSearchAndAFilter() throws Exception {
    Random r = new Random(11);
    for (IndexType type : List.of(IndexType.kBinarySearchWithFirstKey, IndexType.kHashSearch)) {
      BlockBasedTableConfig table = new BlockBasedTableConfig().setIndexType(type)
          .setBlockSize(512).setFilterPolicy(new org.rocksdb.BloomFilter(10, false));
      try (Options o = options(table, CompressionType.LZ4_COMPRESSION)) {
        if (type == IndexType.kHashSearch) {
          o.useFixedLengthPrefixExtractor(1);
        }
        TreeMap<byte[], byte[]> writes = randomWrites(r, 1_000, 300);
        assertReads(writes, write(o, writes), type.toString());
      }
    }
  }

  @Test
  void putsEqualWhatRocksDbsOwnReaderReturns() throws Exception {
    Random r = new Random(3);
    TreeMap<byte[], byte[]> writes = randomWrites(r, 3_000, 200);
    BlockBasedTableConfig table = new BlockBasedTableConfig().setBlockSize(16 * 1024);
    try (Options o = options(table, CompressionType.LZ4_COMPRESSION)) {
      Path file = write(o, writes);
      TreeMap<byte[], byte[]> rocks = new TreeMap<>(Arrays::compareUnsigned);
      try (SstFileReader reader = new SstFileReader(o); ReadOptions ro = new ReadOptions()) {
        reader.open(file.toString());
        try (SstFileReaderIterator it = reader.newIterator(ro)) {
          for (it.seekToFirst(); it.isValid(); it.next()) {
            rocks.put(it.key(), it.value());
          }
        }
      }
      TreeMap<byte[], byte[]> ours = new TreeMap<>(Arrays::compareUnsigned);
      for (SstReader.Entry e : SstReader.open(ByteBuffer.wrap(Files.readAllBytes(file)))
          .readAll()) {
        if (e.op() == SstReader.Op.PUT) {
          ours.put(e.key(), e.value());
        }
      }
      assertEquals(rocks.size(), ours.size());
      for (Map.Entry<byte[], byte[]> e : rocks.entrySet()) {
        assertArrayEquals(e.getValue(), ours.get(e.getKey()));
      }
    }
  }

  @Test
  void refusesWhatItDoesNotReadWithAMessageThatSaysWhat() throws Exception {
    Random r = new Random(5);
    TreeMap<byte[], byte[]> writes = randomWrites(r, 500, 100);
    try (Options o = options(new BlockBasedTableConfig().setBlockSize(256),
        CompressionType.ZSTD_COMPRESSION)) {
      byte[] zstd = Files.readAllBytes(write(o, writes));
      SstFormatException e = assertThrows(SstFormatException.class,
          () -> SstReader.open(ByteBuffer.wrap(zstd)).readAll());
      assertTrue(e.getMessage().contains("compression type"), e.getMessage());
    }
    try (Options o = options(new BlockBasedTableConfig().setBlockSize(256)
        .setDataBlockIndexType(DataBlockIndexType.kDataBlockBinaryAndHash),
        CompressionType.NO_COMPRESSION)) {
      byte[] hashed = Files.readAllBytes(write(o, writes));
      SstFormatException e = assertThrows(SstFormatException.class,
          () -> SstReader.open(ByteBuffer.wrap(hashed)).readAll());
      assertTrue(e.getMessage().contains("hash index"), e.getMessage());
    }
    try (Options o = options(new BlockBasedTableConfig().setBlockSize(256)
        .setIndexType(IndexType.kTwoLevelIndexSearch).setMetadataBlockSize(256),
        CompressionType.NO_COMPRESSION)) {
      byte[] twoLevel = Files.readAllBytes(write(o, writes));
      SstFormatException e = assertThrows(SstFormatException.class,
          () -> SstReader.open(ByteBuffer.wrap(twoLevel)));
      assertTrue(e.getMessage().contains("partitioned"), e.getMessage());
    }
  }

  @Test
  void truncatedOrForeignBytesAreRefusedNotMisread() throws Exception {
    Random r = new Random(9);
    TreeMap<byte[], byte[]> writes = randomWrites(r, 500, 100);
    try (Options o = options(new BlockBasedTableConfig(), CompressionType.LZ4_COMPRESSION)) {
      byte[] sst = Files.readAllBytes(write(o, writes));
      for (int cut : new int[] {1, 8, 40, sst.length / 2, sst.length - 1}) {
        byte[] shorter = Arrays.copyOf(sst, sst.length - cut);
        assertThrows(SstFormatException.class,
            () -> SstReader.open(ByteBuffer.wrap(shorter)).readAll(), "cut " + cut);
      }
      byte[] text = "not an sst at all, just some bytes that are long enough to have a footer"
          .getBytes(java.nio.charset.StandardCharsets.US_ASCII);
      SstFormatException e = assertThrows(SstFormatException.class,
          () -> SstReader.open(ByteBuffer.wrap(text)));
      assertTrue(e.getMessage().contains("magic"), e.getMessage());
    }
  }
}
