// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import static org.apache.spark.sql.functions.count;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.SortedMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Stream;
import org.apache.spark.ExceptionFailure;
import org.apache.spark.api.java.function.VoidFunction2;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.StreamingQueryProgress;
import org.apache.spark.sql.streaming.Trigger;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A damaged block in a live local SST, found by a read, through a real streaming query with
 * task retries ({@code local[2, 4]}): a grouped count over a file source, every key in every
 * batch. After batch 1 the newest SST of every local database gets bytes flipped in its middle,
 * its modification time reset (so Strata's stamps cannot see it; only RocksDB's block checksum
 * can). Batch 2's reads meet the damaged block: the task fails with an error naming the store,
 * version and file, the retried task restores the version from S3, and the query's output equals
 * that of Spark's HDFS provider on the same input, batch by batch.
 */
class SparkLocalReadErrorIT {
  private static final int KEYS = 4000;
  private static final int BATCHES = 4;
  private static final StructType SCHEMA = new StructType().add("key", DataTypes.StringType);
  private static final Map<String, SortedMap<Long, List<String>>> OUTPUT =
      new ConcurrentHashMap<>();
  private static final List<String> TASK_FAILURES = new CopyOnWriteArrayList<>();
  private static final List<Path> DAMAGED = new CopyOnWriteArrayList<>();
  private static SparkS3Harness h;

  @BeforeAll
  static void start() throws IOException {
    h = new SparkS3Harness(2, "local[2, 4]");
    h.spark.sparkContext().addSparkListener(new SparkListener() {
      @Override
      public void onTaskEnd(SparkListenerTaskEnd end) {
        if (end.reason() instanceof ExceptionFailure f) {
          TASK_FAILURES.add(f.toErrorString());
        }
      }
    });
  }

  @AfterAll
  static void stop() throws IOException {
    if (h != null) {
      h.close();
    }
  }

  private static void writeInput(Path in) throws IOException {
    for (int b = 0; b < BATCHES; b++) {
      StringBuilder sb = new StringBuilder();
      for (int k = 0; k < KEYS; k++) {
        sb.append("{\"key\":\"key-").append(String.format("%05d", k)).append("\"}\n");
        if (k % 7 == b) {
          sb.append("{\"key\":\"key-").append(String.format("%05d", k)).append("\"}\n");
        }
      }
      Path f = in.resolve(String.format("part-%03d.json", b));
      Files.writeString(f, sb, StandardCharsets.UTF_8);
      Files.setLastModifiedTime(f, FileTime.fromMillis(1_700_000_000_000L + b * 1000L));
    }
  }

  /** Runs the grouped count to the end of its input; returns the progress of every batch. */
  private static List<StreamingQueryProgress> run(String name, String provider, Path in,
      String checkpoint, Long damageAfterBatch) throws Exception {
    SparkSession session = h.spark.newSession();
    session.conf().set("spark.sql.streaming.stateStore.providerClass", provider);
    session.conf().set("spark.sql.streaming.noDataMicroBatches.enabled", "false");
    // No base snapshot in this short run: the damage must be found by a read, not by an upload.
    session.conf().set("spark.sql.streaming.stateStore.strata.snapshotInterval", "1000");
    OUTPUT.put(name, new ConcurrentSkipListMap<>());
    VoidFunction2<Dataset<Row>, Long> sink = (df, batchId) -> {
      List<String> rows = new ArrayList<>();
      for (Row r : df.collectAsList()) { // runs the stateful stage: its version is committed
        rows.add(r.toString());
      }
      rows.sort(null);
      OUTPUT.get(name).put(batchId, rows);
      if (damageAfterBatch != null && batchId == damageAfterBatch.longValue()) {
        damageNewestLocalSsts();
      }
    };
    StreamingQuery q = session.readStream().schema(SCHEMA).option("maxFilesPerTrigger", 1)
        .json(in.toString())
        .groupBy("key").agg(count("*").as("n"))
        .writeStream().outputMode("update")
        .option("checkpointLocation", checkpoint)
        .trigger(Trigger.AvailableNow())
        .foreachBatch(sink)
        .start();
    q.awaitTermination();
    if (q.exception().isDefined()) {
      throw q.exception().get();
    }
    return List.of(q.recentProgress());
  }

  /**
   * In every live Strata database (local mode: the executor is this JVM), flips 16 bytes in
   * the middle of the newest SST (the last commit's delta, ingested and never read, so none of
   * its blocks is cached) and resets its modification time.
   */
  private static void damageNewestLocalSsts() throws IOException {
    awaitLocalIngestions();
    List<Path> dbs;
    try (Stream<Path> s = Files.walk(h.localDir)) {
      dbs = s.filter(p -> Files.isDirectory(p) && p.getFileName().toString().startsWith("db-"))
          .toList();
    }
    for (Path db : dbs) {
      Path newest;
      try (Stream<Path> s = Files.list(db)) {
        newest = s.filter(p -> p.toString().endsWith(".sst"))
            .max(Comparator.comparing(p -> p.getFileName().toString())).orElse(null);
      }
      if (newest == null) {
        continue;
      }
      FileTime mtime = Files.getLastModifiedTime(newest);
      try (RandomAccessFile raf = new RandomAccessFile(newest.toFile(), "rw")) {
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
      Files.setLastModifiedTime(newest, mtime);
      DAMAGED.add(newest);
    }
  }

  /**
   * Waits (up to 15 s) until the SST files of the local databases have not changed for 1 s: the
   * last commit's delta is ingested after {@code commit()} returned, on Strata's ingest threads,
   * and on a busy machine it may not be in its database yet when the sink runs.
   */
  private static void awaitLocalIngestions() throws IOException {
    long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(15);
    List<String> last = null;
    long stableSince = System.nanoTime();
    while (System.nanoTime() < deadline) {
      List<String> now;
      try (Stream<Path> s = Files.walk(h.localDir)) {
        now = s.map(Path::toString).filter(n -> n.endsWith(".sst")).sorted().toList();
      } catch (IOException | java.io.UncheckedIOException e) {
        now = null; // a file went away during the walk: not settled yet
      }
      if (now == null || !now.equals(last)) {
        last = now;
        stableSince = System.nanoTime();
      } else if (System.nanoTime() - stableSince >= 1_000_000_000L) {
        return;
      }
      try {
        Thread.sleep(100);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
    }
  }

  private static long restoreBytes(StreamingQueryProgress p) {
    return Arrays.stream(p.stateOperators())
        .mapToLong(o -> o.customMetrics().getOrDefault("strataRestoreBytes", 0L)).sum();
  }

  @Test
  void aDamagedLocalBlockFailsTheTaskAndTheRetryRestoresExactly() throws Exception {
    Path in = Files.createDirectories(h.work.resolve("in"));
    writeInput(in);
    run("hdfs", SparkS3Harness.HDFS_PROVIDER, in, h.fileCheckpoint("hdfs"), null);
    List<StreamingQueryProgress> progress =
        run("strata", SparkS3Harness.PROVIDER, in, h.s3Checkpoint("strata"), 1L);

    assertFalse(DAMAGED.isEmpty(), "local SSTs were damaged after batch 1");
    SortedMap<Long, List<String>> baseline = OUTPUT.get("hdfs");
    assertEquals(BATCHES, baseline.size(), "the baseline ran every batch");
    assertEquals(baseline, OUTPUT.get("strata"), "Strata's output equals the HDFS provider's");

    List<String> ours = TASK_FAILURES.stream().filter(t -> t.contains("Cannot read")).toList();
    assertFalse(ours.isEmpty(), "a task failed on the damaged block: " + TASK_FAILURES);
    String text = ours.get(0);
    assertTrue(text.contains("StrataStateStoreProvider["), "names the store: " + text);
    assertTrue(text.contains("partitionId="), "names the partition: " + text);
    assertTrue(text.contains("version 2"), "names the version: " + text);
    assertTrue(DAMAGED.stream().anyMatch(p -> text.contains(p.getFileName().toString())
        && text.contains(p.getParent().toString())), "names the file and directory: " + text);
    assertTrue(text.contains("restores the version from s3a://"), "says what happens: " + text);

    StreamingQueryProgress batch2 = progress.stream().filter(p -> p.batchId() == 2)
        .findFirst().orElseThrow();
    assertTrue(restoreBytes(batch2) > 0, "the retried task restored from S3: " + batch2.json());
    StreamingQueryProgress batch1 = progress.stream().filter(p -> p.batchId() == 1)
        .findFirst().orElseThrow();
    assertEquals(0, restoreBytes(batch1), "batch 1 reused the local database");
  }
}
