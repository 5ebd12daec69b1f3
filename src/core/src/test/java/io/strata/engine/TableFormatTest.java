// SPDX-License-Identifier: Apache-2.0
package io.strata.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.format.sst.SstReader;
import io.strata.testkit.RepoRoot;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The table format rule ({@link TableFormat}, docs/format.md "Table formats across Spark
 * lines"): a base snapshot's SST files are in a table format every supported line's RocksDB
 * reads, the lines' RocksDB versions are those the poms build against, and a file in a format
 * this JVM's RocksDB does not read is named as such, not as corruption.
 */
class TableFormatTest {
  @TempDir Path tmp;

  private static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  /** The table format version in the footer of {@code sst}. */
  private static int footerFormat(Path sst) throws Exception {
    return SstReader.footerFormatVersion(ByteBuffer.wrap(Files.readAllBytes(sst)));
  }

  @Test
  void aBaseSnapshotsSstsAreInATableFormatEverySupportedLineReads() throws Exception {
    Map<String, Integer> formats = new TreeMap<>();
    try (LocalStore s = LocalStore.open(tmp.resolve("db"), 0, SharedMemory.Limits.DEFAULT)) {
      // Overlapping deltas, then a compaction (as RocksDB runs one after 4 files in level 0):
      // its output is the part of a base snapshot that RocksDB, not Strata's writer, wrote.
      for (int d = 0; d < 5; d++) {
        for (int i = 0; i < 200; i++) {
          s.put(b("k" + (i * 7 + d) % 300), b("v" + d + "-" + i));
        }
        s.commitPending(s.writeDelta(tmp.resolve("d" + d + ".sst")));
      }
      s.db().compactRange();
      s.put(b("after"), b("compaction")); // one ingested delta beside the compaction output
      s.commitPending(s.writeDelta(tmp.resolve("last.sst")));
      s.checkpoint(tmp.resolve("snapshot")); // what a base snapshot uploads
    }
    for (Path f : TableFormat.sstsIn(tmp.resolve("snapshot"))) {
      formats.put(f.getFileName().toString(), footerFormat(f));
    }
    assertTrue(formats.size() >= 2, "a compaction output and a delta: " + formats);
    assertTrue(formats.containsValue(TableFormat.WRITTEN),
        "the compaction output is written in table format " + TableFormat.WRITTEN + ": "
        + formats);
    int everyLine = TableFormat.LINES.stream().mapToInt(TableFormat.SparkLine::newestReadable)
        .min().orElseThrow();
    for (Map.Entry<String, Integer> e : formats.entrySet()) {
      assertTrue(e.getValue() <= everyLine, e.getKey() + " is table format " + e.getValue()
          + ", which not every supported line reads (up to " + everyLine + "): " + formats);
      assertTrue(e.getValue() == TableFormat.WRITTEN || e.getValue() == 2, e.getKey()
          + ": RocksDB's output in " + TableFormat.WRITTEN + ", Strata's deltas in 2: "
          + formats);
    }
  }

  @Test
  void theLinesAreThoseThePomsBuildAgainst() throws Exception {
    String pom = Files.readString(RepoRoot.resolve("pom.xml"));
    String spark35 = property(pom, "spark35.rocksdb.version");
    String spark4 = property(pom, "rocksdb.version");
    List<String> lines = new ArrayList<>();
    for (TableFormat.SparkLine l : TableFormat.LINES) {
      lines.add(l.spark() + "=" + l.rocksdb());
    }
    assertEquals(List.of("3.5=" + spark35, "4.0=" + spark4, "4.1=" + spark4, "4.2=" + spark4),
        lines, "TableFormat.LINES against the root pom");
    for (String line : List.of("4.0", "4.1", "4.2")) {
      String linePom = Files.readString(RepoRoot.resolve("src/spark-" + line + "/pom.xml"));
      assertTrue(!linePom.contains("<rocksdb.version>"), "src/spark-" + line
          + "/pom.xml keeps the root's rocksdb.version");
    }
    assertTrue(Files.readString(RepoRoot.resolve("src/spark-3.5/pom.xml"))
        .contains("<rocksdb.version>${spark35.rocksdb.version}</rocksdb.version>"));
    assertEquals(5, TableFormat.newestReadable("8.3.2"));
    assertEquals(6, TableFormat.newestReadable("8.6.7"));
    assertEquals(6, TableFormat.newestReadable("9.8.4"));
    assertEquals(5, TableFormat.newestReadable("6.29.5"));
    assertEquals("Spark 4.0, 4.1, 4.2 (RocksDB 9.8.4)", TableFormat.linesReading(6));
    assertEquals("Spark 3.5, 4.0, 4.1, 4.2 (RocksDB 8.3.2, 9.8.4)",
        TableFormat.linesReading(TableFormat.WRITTEN));
    assertEquals(TableFormat.newestReadable(TableFormat.rocksdbHere()),
        TableFormat.newestReadableHere());
  }

  private static String property(String pom, String name) {
    Matcher m = Pattern.compile("<" + Pattern.quote(name) + ">([^<]+)</").matcher(pom);
    assertTrue(m.find(), name + " in the root pom");
    return m.group(1);
  }

  @Test
  void anSstInAFormatThisRocksDbDoesNotReadIsNamedAsSuchNotAsCorruption() throws Exception {
    // A format one newer than this JVM's RocksDB reads: what a Spark 4.x snapshot of table
    // format 6 is to Spark 3.5's RocksDB 8.3 (TableFormat's lines).
    int newer = TableFormat.newestReadableHere() + 1;
    Path sst = tmp.resolve("newer.sst");
    try (LocalStore w = LocalStore.open(tmp.resolve("w"), 0, SharedMemory.Limits.DEFAULT)) {
      w.put(b("a"), b("1"));
      w.writeDelta(sst).orElseThrow();
    }
    byte[] bytes = Files.readAllBytes(sst);
    ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN).putInt(bytes.length - 12, newer);
    Files.write(sst, bytes);
    assertEquals(newer, footerFormat(sst));
    try (LocalStore s = LocalStore.open(tmp.resolve("db"), 0, SharedMemory.Limits.DEFAULT)) {
      UnreadableTableFormatException e = assertThrows(UnreadableTableFormatException.class,
          () -> s.ingest(sst));
      assertEquals(newer, e.formatVersion());
      assertEquals(sst, e.file());
      String msg = e.getMessage();
      assertTrue(msg.contains("newer.sst is RocksDB table format " + newer), msg);
      assertTrue(msg.contains("reads table formats up to " + (newer - 1)), msg);
      assertTrue(msg.contains("(" + TableFormat.rocksdbHere() + ", bundled by Spark"), msg);
      assertTrue(msg.contains("Table format " + newer + " is read by no supported Spark line"),
          msg);
      assertTrue(e.getCause().getMessage().contains("format_version"), "RocksDB's own error: "
          + e.getCause().getMessage());
    }
    // RocksDB failing for another reason is not taken for a format it does not read.
    Path garbage = Files.write(tmp.resolve("garbage.sst"), new byte[4096]);
    try (LocalStore s = LocalStore.open(tmp.resolve("db2"), 0, SharedMemory.Limits.DEFAULT)) {
      java.io.IOException e = assertThrows(java.io.IOException.class, () -> s.ingest(garbage));
      assertTrue(!(e instanceof UnreadableTableFormatException), e.toString());
    }
    assertEquals(Optional.empty(), TableFormat.unreadable(List.of(garbage), tmp, null));
  }
}
