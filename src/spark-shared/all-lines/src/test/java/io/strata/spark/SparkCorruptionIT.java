// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import static org.apache.spark.sql.functions.count;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.format.StoreLayout;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.RandomAccessFile;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.spark.api.java.function.VoidFunction2;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.Trigger;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Corruption and bad settings seen through a real streaming query (local mode, checkpoint on
 * S3Proxy): the reference query counts keys 0..9, each added once per batch. A flipped byte in a
 * committed SST, found by a restart on wiped local dirs, stops the query with an error naming the
 * store, version and object key, and no batch runs on a wrong state; an invalid setting fails the
 * query at the provider's init, naming the key, without retries.
 */
class SparkCorruptionIT {
  private static final int KEYS = 10;
  private static final StructType SCHEMA = new StructType().add("key", DataTypes.StringType);
  private static final Map<String, Map<Long, Map<String, Long>>> OUTPUT =
      new ConcurrentHashMap<>();
  private static SparkS3Harness h;

  @BeforeAll
  static void start() throws IOException {
    h = new SparkS3Harness(2);
  }

  @AfterAll
  static void stop() throws IOException {
    if (h != null) {
      h.close();
    }
  }

  private static void writeBatch(Path in, int b) throws IOException {
    StringBuilder sb = new StringBuilder();
    for (int k = 0; k < KEYS; k++) {
      sb.append("{\"key\":\"k").append(k).append("\"}\n");
    }
    Path f = in.resolve(String.format("part-%03d.json", b));
    Files.writeString(f, sb, StandardCharsets.UTF_8);
    Files.setLastModifiedTime(f, FileTime.fromMillis(1_700_000_000_000L + b * 1000L));
  }

  /** Runs the reference query to the end of its input (AvailableNow); rethrows its failure. */
  private static void run(String name, Path in, String checkpoint, Map<String, String> conf)
      throws Exception {
    SparkSession session = h.spark.newSession();
    session.conf().set("spark.sql.streaming.stateStore.providerClass", SparkS3Harness.PROVIDER);
    session.conf().set("spark.sql.streaming.noDataMicroBatches.enabled", "false");
    conf.forEach((k, v) -> session.conf().set(k, v));
    OUTPUT.putIfAbsent(name, new ConcurrentHashMap<>());
    VoidFunction2<Dataset<Row>, Long> sink = (df, batchId) -> {
      Map<String, Long> counts = new TreeMap<>();
      for (Row r : df.collectAsList()) {
        counts.put(r.getString(0), r.getLong(1));
      }
      OUTPUT.get(name).put(batchId, counts);
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
  }

  private static String chain(Throwable t) {
    StringWriter w = new StringWriter();
    t.printStackTrace(new PrintWriter(w));
    return w.toString();
  }

  @Test
  void aFlippedByteInACommittedSstStopsTheRestartedQueryWithAnExactError() throws Exception {
    Path in = Files.createDirectories(h.work.resolve("in-corrupt"));
    String checkpoint = h.s3Checkpoint("corrupt");
    for (int b = 0; b < 3; b++) {
      writeBatch(in, b);
    }
    run("corrupt", in, checkpoint, Map.of());
    Map<String, Long> last = OUTPUT.get("corrupt").get(2L);
    assertEquals(KEYS, last.size());
    last.values().forEach(n -> assertEquals(3L, n, "every count is exactly 3: " + last));

    // version 3 of partition 0's store: its SST delta starts at byte 0 of the version object
    String prefix = checkpoint.substring(("s3a://" + SparkS3Harness.BUCKET + "/").length());
    // a query run commits format 1 in generations: its first run writes generation 1
    String key = prefix + "/state/0/0/" + StoreLayout.generationVersionObject(3, 1);
    Path object = h.s3.dataDir().resolve(SparkS3Harness.BUCKET).resolve(key);
    assertTrue(Files.exists(object), "partition 0 committed version 3 as " + key);
    try (RandomAccessFile raf = new RandomAccessFile(object.toFile(), "rw")) {
      raf.seek(64);
      int old = raf.read();
      raf.seek(64);
      raf.write(old ^ 0x01);
    }
    h.wipeLocalState();
    writeBatch(in, 3);
    Exception e = assertThrows(Exception.class, () -> run("corrupt", in, checkpoint, Map.of()));
    String text = chain(e);
    assertTrue(text.contains("store 0/0/default"), "names the store: " + text);
    assertTrue(text.contains("version 3"), "names the version: " + text);
    assertTrue(text.contains(SparkS3Harness.BUCKET + "/" + key), "names the key: " + text);
    assertTrue(text.contains("do not match the manifest"), "says what is wrong: " + text);
    assertEquals(null, OUTPUT.get("corrupt").get(3L), "no batch ran on a wrong state");
  }

  @Test
  void anInvalidSettingFailsAtInitNamingTheKey() throws Exception {
    Path in = Files.createDirectories(h.work.resolve("in-badconf"));
    writeBatch(in, 0);
    long t0 = System.nanoTime();
    Exception e = assertThrows(Exception.class, () -> run("badconf", in,
        h.s3Checkpoint("badconf"),
        Map.of("spark.sql.streaming.stateStore.strata.transferThreads", "0")));
    long ms = (System.nanoTime() - t0) / 1_000_000;
    String text = chain(e);
    assertTrue(text.contains("spark.sql.streaming.stateStore.strata.transferThreads"), text);
    assertTrue(text.contains("expected an integer >= 1"), text);
    // The time includes starting the query and writing its offset log through S3A (about 20 s
    // on two loaded cores); the store's init fails at once and is not retried (the first task
    // failure aborts the job in local mode).
    assertTrue(ms < 90_000, "failed after " + ms + " ms");
    assertTrue(text.contains("IllegalArgumentException"), text);
  }
}
