// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.format.sst.SstReader;
import io.strata.testkit.ChildJvm;
import io.strata.testkit.RepoRoot;
import java.io.File;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.Trigger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A checkpoint moves between Spark 3.5 and Spark 4.0 in both directions: when the user upgrades
 * Spark (issue 20), and when a platform rolls that upgrade back (issue 43).
 *
 * <p>Upgrade: a driver JVM on Spark 3.5 (the class path of {@code src/spark-3.5}'s tests, which
 * its build writes to {@code target/upgrade/test.classpath}) runs {@link CheckpointDriver}'s
 * query, with Strata's state store and Strata's checkpoint file manager on S3, over the first
 * three input files; then this JVM (Spark 4.0, new local directories) resumes the same
 * checkpoint over three more. Every batch's output, the 3.5 batches and the 4.0 ones, must equal
 * that of Spark's HDFS-backed provider running the same query over all six files on Spark 4.0.
 *
 * <p>Rollback: this JVM (Spark 4.0, RocksDB 9.8) runs the query over six files with a base
 * snapshot every two versions, until each store has published one that holds a compaction
 * output (an SST RocksDB wrote, not Strata's delta writer); then a Spark 3.5 driver JVM (RocksDB
 * 8.3, new local directories) resumes over three more, restoring from those snapshots. Every
 * batch equals Spark's HDFS-backed provider's. Before the local databases wrote table format 5
 * on every line, RocksDB 9.8 wrote format 6, which RocksDB 8.3 cannot read.
 */
class UpgradeFrom35IT {
  private static SparkS3Harness h;

  @BeforeAll
  static void start() throws Exception {
    h = new SparkS3Harness(2);
  }

  @AfterAll
  static void stop() throws Exception {
    h.close();
  }

  @Test
  @Timeout(600)
  void aCheckpointWrittenOnSpark35ResumesOnSpark40() throws Exception {
    Path work = Files.createDirectories(h.work.resolve("upgrade"));
    Path in = Files.createDirectories(work.resolve("in"));
    for (int f = 0; f < 3; f++) {
      writeInput(in, f);
    }
    String checkpoint = "s3://" + SparkS3Harness.BUCKET + "/upgrade-35-40";
    Path out = work.resolve("out");

    // Batches 0 to 2 on Spark 3.5, in a driver JVM of their own.
    String cp = spark35ClassPath();
    Path log = work.resolve("driver-35.log");
    int code;
    // A base snapshot every 2 versions (Spark reads spark.* system properties), so that 4.0 also
    // restores from a snapshot RocksDB 8.3 wrote.
    try (ChildJvm child = ChildJvm.start(cp,
        List.of("-Dspark.sql.streaming.stateStore.strata.snapshotInterval=2"),
        CheckpointDriver.class.getName(), log, h.s3.endpoint().toString(), checkpoint,
        in.toString(), out.toString(), work.resolve("driver-35").toString(), "availableNow",
        "v35", "-1")) {
      code = child.await(300);
    }
    assertEquals(0, code, "the Spark 3.5 driver ran; log " + log);
    assertTrue(Files.notExists(out.resolve("error-v35.txt")), () -> read(out.resolve(
        "error-v35.txt")));
    for (long b = 0; b < 3; b++) {
      assertTrue(Files.exists(out.resolve("batch-" + b + ".txt")), "3.5 wrote batch " + b);
    }

    try (Stream<Path> objects = Files.walk(h.s3.dataDir().resolve(SparkS3Harness.BUCKET)
        .resolve("upgrade-35-40"))) {
      assertTrue(objects.anyMatch(p -> p.toString().contains("/b/")),
          "Spark 3.5 published a base snapshot");
    }

    // Batches 3 to 5 on Spark 4.0, in this JVM, from the same checkpoint.
    for (int f = 3; f < 6; f++) {
      writeInput(in, f);
    }
    SparkSession s40 = h.spark.newSession();
    for (Map.Entry<String, String> e : CheckpointDriver.sparkConf(h.s3.endpoint().toString(),
        work.resolve("driver-40")).entrySet()) {
      if (e.getKey().startsWith("spark.sql.")) {
        s40.conf().set(e.getKey(), e.getValue());
      }
    }
    await(CheckpointDriver.start(s40, checkpoint, in, out, Trigger.AvailableNow(), "v40", -1));

    // Spark's HDFS-backed provider over all six files, on a local checkpoint.
    Path expected = work.resolve("expected");
    SparkSession oracle = h.spark.newSession();
    await(CheckpointDriver.start(oracle, h.fileCheckpoint("upgrade-oracle"), in, expected,
        Trigger.AvailableNow(), "oracle", -1, SparkS3Harness.HDFS_PROVIDER));

    for (long b = 0; b < 6; b++) {
      assertEquals(read(expected.resolve("batch-" + b + ".txt")),
          read(out.resolve("batch-" + b + ".txt")),
          "batch " + b + (b < 3 ? " (Spark 3.5)" : " (Spark 4.0, resumed)"));
    }
    assertEquals(List.of("v35 0", "v35 1", "v35 2", "v40 3", "v40 4", "v40 5"),
        Files.readAllLines(out.resolve("runs.log")), "each batch ran once, 3.5 then 4.0");
  }

  @Test
  @Timeout(600)
  void aCheckpointWithBaseSnapshotsWrittenOnSpark40ResumesOnSpark35() throws Exception {
    Path work = Files.createDirectories(h.work.resolve("rollback"));
    Path in = Files.createDirectories(work.resolve("in"));
    for (int f = 0; f < 6; f++) {
      writeInput(in, f);
    }
    String name = "rollback-40-35";
    String checkpoint = "s3://" + SparkS3Harness.BUCKET + "/" + name;
    Path out = work.resolve("out");

    // Batches 0 to 5 on Spark 4.0, in this JVM, a base snapshot every 2 versions.
    SparkSession s40 = h.spark.newSession();
    for (Map.Entry<String, String> e : CheckpointDriver.sparkConf(h.s3.endpoint().toString(),
        work.resolve("driver-40")).entrySet()) {
      if (e.getKey().startsWith("spark.sql.")) {
        s40.conf().set(e.getKey(), e.getValue());
      }
    }
    s40.conf().set("spark.sql.streaming.stateStore.strata.snapshotInterval", "2");
    await(CheckpointDriver.start(s40, checkpoint, in, out, Trigger.AvailableNow(), "v40", -1));
    Path state = h.s3.dataDir().resolve(SparkS3Harness.BUCKET).resolve(name).resolve("state")
        .resolve("0");
    Map<String, byte[]> compacted = awaitSnapshotsWithCompactionOutput(state, 2);
    for (Map.Entry<String, byte[]> sst : compacted.entrySet()) {
      // 5: written by RocksDB 9.8 (a compaction output); 2: a delta Strata's SST writer wrote,
      // uploaded again as a base file (docs/format.md, "Base snapshots"). Never 6.
      int format = tableFormat(sst.getValue());
      assertTrue(format == 5 || format == 2, "table format of " + sst.getKey() + ": " + format);
    }

    // Batches 6 to 8 on Spark 3.5, in a driver JVM of its own, on new local directories.
    for (int f = 6; f < 9; f++) {
      writeInput(in, f);
    }
    Path log = work.resolve("driver-35.log");
    int code;
    try (ChildJvm child = ChildJvm.start(spark35ClassPath(), List.of(),
        CheckpointDriver.class.getName(), log, h.s3.endpoint().toString(), checkpoint,
        in.toString(), out.toString(), work.resolve("driver-35").toString(), "availableNow",
        "v35", "-1")) {
      code = child.await(300);
    }
    assertEquals(0, code, "the Spark 3.5 driver ran; log " + log);
    assertTrue(Files.notExists(out.resolve("error-v35.txt")), () -> read(out.resolve(
        "error-v35.txt")));
    assertFalse(read(log).contains("cannot restore from published snapshot"),
        "Spark 3.5 restored from the snapshots Spark 4.0 published; log " + log);

    // Spark's HDFS-backed provider over all nine files, on a local checkpoint.
    Path expected = work.resolve("expected");
    SparkSession oracle = h.spark.newSession();
    await(CheckpointDriver.start(oracle, h.fileCheckpoint("rollback-oracle"), in, expected,
        Trigger.AvailableNow(), "oracle", -1, SparkS3Harness.HDFS_PROVIDER));
    for (long b = 0; b < 9; b++) {
      assertEquals(read(expected.resolve("batch-" + b + ".txt")),
          read(out.resolve("batch-" + b + ".txt")),
          "batch " + b + (b < 6 ? " (Spark 4.0)" : " (Spark 3.5, resumed)"));
    }
    List<String> runs = new ArrayList<>();
    for (long b = 0; b < 9; b++) {
      runs.add((b < 6 ? "v40 " : "v35 ") + b);
    }
    assertEquals(runs, Files.readAllLines(out.resolve("runs.log")),
        "each batch ran once, 4.0 then 3.5");
  }

  /**
   * Waits up to 60 s until each of the operator's {@code partitions} stores (under {@code
   * state}) has published a base snapshot ({@code b/}) that names an SST RocksDB wrote (a
   * compaction output, table format 5, inside the snapshot's own object or in {@code sst/}; a
   * delta a base carried is uploaded again too, in table format 2); returns the bytes of the
   * new SSTs those snapshots name (not those in version objects), by store and name.
   */
  private static Map<String, byte[]> awaitSnapshotsWithCompactionOutput(Path state,
      int partitions) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (true) {
      Map<String, byte[]> found = new java.util.TreeMap<>();
      int stores = 0;
      for (int p = 0; p < partitions; p++) {
        Path store = state.resolve(Integer.toString(p));
        Path b = store.resolve("b");
        Map<String, byte[]> named = new java.util.TreeMap<>();
        if (Files.isDirectory(b)) {
          try (Stream<Path> snapshots = Files.list(b)) {
            for (Path bsm : snapshots.filter(f -> f.toString().endsWith(".bsm")).toList()) {
              String key = "b/" + bsm.getFileName();
              io.strata.format.PublishedSnapshot snap;
              try {
                snap = io.strata.format.PublishedSnapshotCodec.decode(Files.readAllBytes(bsm),
                    key);
              } catch (io.strata.format.ManifestFormatException e) {
                continue; // being written
              }
              for (io.strata.format.BaseSnapshot.BaseFile f : snap.files()) {
                String k = f.file().key();
                if (f.name().endsWith(".sst") && (k.equals(key) || k.startsWith("sst/"))) {
                  byte[] object = Files.readAllBytes(store.resolve(k));
                  named.put(p + "/" + key + "/" + f.name(), java.util.Arrays.copyOfRange(object,
                      (int) f.file().offset(), (int) (f.file().offset() + f.file().length())));
                }
              }
            }
          }
        }
        boolean rocksDbWrote = false;
        for (byte[] sst : named.values()) {
          rocksDbWrote |= tableFormat(sst) == 5;
        }
        if (rocksDbWrote) {
          stores++;
          found.putAll(named);
        }
      }
      if (stores == partitions) {
        return found;
      }
      if (System.nanoTime() > deadline) {
        try (Stream<Path> all = Files.walk(state)) {
          throw new AssertionError("no published snapshot with a compaction output in every "
              + "store after 60 s: " + all.map(state::relativize).toList());
        }
      }
      Thread.sleep(200);
    }
  }

  /** The table format in the footer of the SST file {@code sst}. */
  private static int tableFormat(byte[] sst) throws Exception {
    return SstReader.footerFormatVersion(ByteBuffer.wrap(sst));
  }

  /** The class path of a Spark 3.5 driver: {@code src/spark-3.5}'s test class path. */
  private static String spark35ClassPath() throws Exception {
    Path spark35 = RepoRoot.resolve("src/spark-3.5", "target");
    Path cpFile = spark35.resolve("upgrade/test.classpath");
    assertTrue(Files.exists(cpFile), cpFile + " (written by the build of src/spark-3.5)");
    String cp = String.join(File.pathSeparator, spark35.resolve("test-classes").toString(),
        spark35.resolve("classes").toString(), Files.readString(cpFile).trim());
    assertTrue(cp.contains("spark-sql_2.12-3.5."), "Spark 3.5 on the driver's class path");
    return cp;
  }

  /** Input file {@code f}: keys that recur across files, so the state carries across batches. */
  private static void writeInput(Path in, int f) throws Exception {
    List<String> lines = new ArrayList<>();
    for (int i = 0; i < 40; i++) {
      lines.add("{\"key\":\"k" + ((i * 7 + f * 3) % 25) + "\",\"value\":" + (f * 100 + i) + "}");
    }
    Path tmp = in.resolve(".f" + f + ".tmp");
    Files.write(tmp, lines, StandardCharsets.UTF_8);
    Files.move(tmp, in.resolve(String.format("f%02d.json", f)));
  }

  private static void await(StreamingQuery q) throws Exception {
    q.awaitTermination();
    if (q.exception().isDefined()) {
      throw q.exception().get();
    }
  }

  private static String read(Path p) {
    try {
      return Files.readString(p);
    } catch (java.io.IOException e) {
      return "(unreadable " + p + ": " + e + ")";
    }
  }
}
