// SPDX-License-Identifier: Apache-2.0
package io.strata.format.sst;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.rocksdb.BlockBasedTableConfig;
import org.rocksdb.BloomFilter;
import org.rocksdb.CompressionType;
import org.rocksdb.Options;
import org.rocksdb.RocksDB;
import org.rocksdb.SstFileReader;
import org.rocksdb.TableProperties;

/**
 * {@link SstReader#layout()}: the parts it reads from an SST's handles add up to the file, and
 * are the parts Strata's writer counted as it wrote them and the sizes RocksDB's own table
 * properties give for the files RocksDB writes.
 */
class SstLayoutTest {
  static {
    RocksDB.loadLibrary();
  }

  @TempDir Path tmp;

  /** Key (unsigned byte order) to value, null for a tombstone; values half compressible. */
  private static TreeMap<byte[], byte[]> writes(int n, long seed) {
    return SstReaderTest.randomWrites(new Random(seed), n, 200);
  }

  @ParameterizedTest
  @ValueSource(ints = {1, 1250, 20_000})
  void strataWritersPartsAreWhatTheLayoutReads(int n) throws Exception {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    SstWriter w = new SstWriter(out);
    for (Map.Entry<byte[], byte[]> e : writes(n, n).entrySet()) {
      if (e.getValue() == null) {
        w.delete(e.getKey());
      } else {
        w.put(e.getKey(), e.getValue());
      }
    }
    long size = w.finish();
    SstWriter.Parts parts = w.parts();
    SstReader reader = SstReader.open(ByteBuffer.wrap(out.toByteArray()));
    SstLayout l = reader.layout();
    String what = n + " entries: " + l + " against " + parts;
    assertEquals(size, l.fileBytes(), what);
    assertEquals(parts.data(), l.dataBytes(), what);
    assertEquals(parts.filter(), l.filterBytes(), what);
    assertEquals(parts.index(), l.indexBytes(), what);
    assertEquals(parts.tableMeta(), l.tableMetaBytes(), what);
    assertEquals(53, l.footerBytes(), what);
    assertEquals(0, l.otherBytes(), what);
    assertEquals(reader.dataBlockCount(), l.dataBlocks(), what);
    assertTrue(l.propertiesBytes() > 0 && l.metaindexBytes() > 0, what);
    assertTrue(n < 20_000 || l.dataBlocks() > 1, what + ": many blocks");
  }

  @ParameterizedTest
  @ValueSource(ints = {2, 5, 6})
  void rocksDbsFilesAddUpAsItsTablePropertiesSizeThem(int formatVersion) throws Exception {
    for (boolean filtered : new boolean[] {true, false}) {
      TreeMap<byte[], byte[]> writes = writes(5_000, formatVersion);
      Path f = tmp.resolve("f" + formatVersion + "-" + filtered + ".sst");
      BlockBasedTableConfig table = new BlockBasedTableConfig().setFormatVersion(formatVersion)
          .setBlockSize(4096);
      try (BloomFilter bloom = new BloomFilter(10, false);
          Options o = new Options().setCompressionType(CompressionType.LZ4_COMPRESSION)
              .setTableFormatConfig(filtered ? table.setFilterPolicy(bloom) : table)) {
        SstReaderTest.writeWithRocksDb(f, o, writes);
        SstLayout l = SstReader.open(ByteBuffer.wrap(Files.readAllBytes(f))).layout();
        String what = "format " + formatVersion + (filtered ? ", filter: " : ", no filter: ") + l;
        try (SstFileReader r = new SstFileReader(o)) {
          r.open(f.toString());
          TableProperties p = r.getTableProperties();
          assertEquals(Files.size(f), l.fileBytes(), what);
          assertEquals(p.getNumDataBlocks(), l.dataBlocks(), what);
          assertEquals(p.getDataSize(), l.dataBytes(), what);
          assertEquals(filtered ? p.getFilterSize() + 5 : 0, l.filterBytes(), what);
          // No property sizes RocksDB's index block as stored (rocksdb.index.size is its
          // builder's count: without the trailer from format 5, more than the block in format 2),
          // so the index is checked by the whole: every byte of the file is in one part.
          assertEquals(0, l.otherBytes(), what);
          assertTrue(l.indexBytes() > 5 * l.dataBlocks(), what + ": an entry per data block");
          assertTrue(l.dataBlocks() > 10, what + ": many blocks");
        }
      }
    }
  }
}
