// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.count;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.spark.SparkThrowable;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.function.FlatMapFunction;
import org.apache.spark.api.java.function.VoidFunction2;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.execution.streaming.checkpointing.CommitLog;
import org.apache.spark.sql.execution.streaming.checkpointing.OffsetSeq;
import org.apache.spark.sql.execution.streaming.checkpointing.OffsetSeqLog;
import org.apache.spark.sql.execution.streaming.checkpointing.OffsetSeqMetadata;
import org.apache.spark.sql.execution.streaming.state.NoPrefixKeyStateEncoderSpec;
import org.apache.spark.sql.execution.streaming.state.StatePartitionAllColumnFamiliesWriter;
import org.apache.spark.sql.execution.streaming.state.StatePartitionWriterColumnFamilyInfo;
import org.apache.spark.sql.execution.streaming.state.StateStoreCheckpointInfo;
import org.apache.spark.sql.execution.streaming.state.StateStoreColFamilySchema;
import org.apache.spark.sql.execution.streaming.state.StateStoreConf;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.Trigger;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;
import org.apache.spark.util.SerializableConfiguration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import scala.Option;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Spark 4.2's offline state repartitioning on a Strata checkpoint on S3 (S3Proxy). A streaming
 * aggregation runs batches 0 and 1 with 4 partitions. Spark's own runner ({@code
 * streamingCheckpointManager().repartition}, {@code OfflineStateRepartitionRunner.run}) is
 * called first and must fail as the docs say: it writes {@code offsets/2} (batch 1's entry with
 * the new partition count) and then refuses the provider by class name ({@code
 * STATE_REPARTITION_INVALID_CHECKPOINT.UNSUPPORTED_PROVIDER}, thrown by {@code
 * StateDataSource.getTable} for its {@code _readAllColumnFamilies} read), and the query then
 * refuses to restart ({@code STREAMING_UNFINISHED_REPARTITION_DETECTED}). The rest of the
 * runner's work is then done here with Spark's own write half: the state of batch 1 (read with
 * the ordinary {@code format("statestore")}, turned back into the stored {@code UnsafeRow} bytes)
 * is shuffled by its key ({@code repartition(n, key)}, the live query's placement) and written
 * by {@code StatePartitionAllColumnFamiliesWriter} into every new partition (Strata's {@code
 * getStore(2, None, loadEmpty = true)}, commit of version 3, close), and {@code commits/2} is
 * batch 1's with the new checkpoint ids (the runner's {@code commitBatch}). The state of batch
 * 2 read back equals batch 1's, spread over the new partitions; the query resumes and its next
 * batch's counts are exact. One Spark session for both cases (4 to 7 partitions in checkpoint
 * format 1, 4 to 3 in format 2).
 */
class OfflineRepartitionIT {
  private static final int KEYS = 20;
  private static final int BEFORE = 4;
  private static final StructType SCHEMA = new StructType().add("key", DataTypes.StringType);
  private static final Map<String, Map<Long, Map<String, Long>>> OUTPUT =
      new ConcurrentHashMap<>();
  private static SparkS3Harness h;

  @BeforeAll
  static void start() throws IOException {
    h = new SparkS3Harness(BEFORE);
  }

  @AfterAll
  static void stop() throws IOException {
    if (h != null) {
      h.close();
    }
  }

  /** Batch {@code b}'s input: key {@code k} appears {@code 1 + (k + b) % 3} times. */
  private static void writeBatch(Path in, int b, Map<String, Long> totals) throws IOException {
    StringBuilder sb = new StringBuilder();
    for (int k = 0; k < KEYS; k++) {
      for (int i = 0; i < 1 + (k + b) % 3; i++) {
        sb.append("{\"key\":\"k").append(k).append("\"}\n");
        totals.merge("k" + k, 1L, Long::sum);
      }
    }
    Path f = in.resolve(String.format("part-%03d.json", b));
    Files.writeString(f, sb, StandardCharsets.UTF_8);
    Files.setLastModifiedTime(f, FileTime.fromMillis(1_700_000_000_000L + b * 1000L));
  }

  private static SparkSession session(int format) {
    SparkSession s = h.spark.newSession();
    s.conf().set("spark.sql.streaming.stateStore.providerClass", SparkS3Harness.PROVIDER);
    s.conf().set("spark.sql.streaming.noDataMicroBatches.enabled", "false");
    s.conf().set(FORMAT, "" + format);
    return s;
  }

  private static final String FORMAT = "spark.sql.streaming.stateStore.checkpointFormatVersion";

  /** Runs the query to the end of its input (AvailableNow, one file a batch). */
  private static void run(String name, SparkSession s, Path in, String checkpoint)
      throws Exception {
    OUTPUT.putIfAbsent(name, new ConcurrentHashMap<>());
    VoidFunction2<Dataset<Row>, Long> sink = (df, batchId) -> {
      Map<String, Long> counts = new TreeMap<>();
      for (Row r : df.collectAsList()) {
        counts.put(r.getString(0), r.getLong(1));
      }
      OUTPUT.get(name).put(batchId, counts);
    };
    StreamingQuery q = s.readStream().schema(SCHEMA).option("maxFilesPerTrigger", 1)
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

  /** The state of {@code batch}: "key -> value" (sorted), and the partitions holding it. */
  private static List<String> state(String checkpoint, long batch, TreeSet<Integer> partitions) {
    List<Row> rows = h.withS3A(() -> h.spark.read().format("statestore")
        .option("batchId", batch).load(checkpoint).collectAsList());
    List<String> out = new ArrayList<>();
    for (Row r : rows) {
      out.add(r.get(0) + " -> " + r.get(1));
      partitions.add(r.getInt(2));
    }
    out.sort(null);
    return out;
  }

  /** The conditions of the {@link SparkThrowable}s in {@code e}'s cause chain, outermost first. */
  private static List<String> conditions(Throwable e) {
    List<String> out = new ArrayList<>();
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof SparkThrowable st && st.getCondition() != null) {
        out.add(st.getCondition());
      }
    }
    return out;
  }

  @ParameterizedTest(name = "checkpoint format {0}, {1} partitions")
  @CsvSource({"1, 7", "2, 3"})
  void sparksStateWriterRepartitionsAStrataCheckpoint(int format, int after) throws Exception {
    String name = "repartition-" + format;
    Path in = Files.createDirectories(h.work.resolve("in-" + name));
    String checkpoint = h.s3Checkpoint(name);
    SparkSession s = session(format);
    Map<String, Long> totals = new HashMap<>();
    for (int b = 0; b < 2; b++) {
      writeBatch(in, b, totals);
    }
    run(name, s, in, checkpoint);
    assertEquals(new TreeMap<>(totals), OUTPUT.get(name).get(1L), "batch 1's counts");
    TreeSet<Integer> oldPartitions = new TreeSet<>();
    List<String> before = state(checkpoint, 1, oldPartitions);
    assertEquals(KEYS, before.size(), "one state row per key: " + before);

    // Spark's runner: offsets/2 first, then the refusal of the provider (docs: README, "Not yet
    // in 0.3"). Run on the root session (S3A for the checkpoint path), in the query's format.
    h.spark.conf().set(FORMAT, "" + format);
    Exception refused;
    try {
      refused = assertThrows(Exception.class, () -> h.withS3A(() -> {
        ((org.apache.spark.sql.classic.SparkSession) h.spark).streamingCheckpointManager()
            .repartition(checkpoint, after, true);
        return null;
      }));
    } finally {
      h.spark.conf().unset(FORMAT);
    }
    assertTrue(conditions(refused).contains(
        "STATE_REPARTITION_INVALID_CHECKPOINT.UNSUPPORTED_PROVIDER"), refused.toString());
    OffsetSeqLog offsets = new OffsetSeqLog(s, checkpoint + "/offsets", false);
    OffsetSeq two = (OffsetSeq) offsets.get(2L).get();
    assertEquals("" + after, two.metadataOpt().get().conf().get("spark.sql.shuffle.partitions")
        .get(), "the runner wrote offsets/2 with the new partition count before it failed");
    CommitLog commits = new CommitLog(s, checkpoint + "/commits", false);
    assertTrue(commits.get(2L).isEmpty(), "and no commit of batch 2");
    Exception restart = assertThrows(Exception.class,
        () -> run(name, session(format), in, checkpoint));
    assertTrue(conditions(restart).contains("STREAMING_UNFINISHED_REPARTITION_DETECTED"),
        "Spark refuses to restart the query on the unfinished repartition batch: " + restart);

    // The rewrite: Spark's writer in every new partition, on the executors (StateRewriter's
    // rewriteStore), with the store conf of offsets/2 (createConfsFromOffsetLog).
    long start = System.nanoTime();
    SQLConf conf = ((org.apache.spark.sql.classic.SparkSession) s).sessionState().conf().clone();
    OffsetSeqMetadata.setSessionConf(two.metadataOpt().get(), conf);
    Dataset<Row> old = h.withS3A(() -> h.spark.read().format("statestore")
        .option("batchId", 1).load(checkpoint));
    StructType keySchema = (StructType) old.schema().apply("key").dataType();
    StructType valueSchema = (StructType) old.schema().apply("value").dataType();
    StateStoreColFamilySchema cf = new StateStoreColFamilySchema("default", (short) 0, keySchema,
        (short) 0, valueSchema, Option.apply(new NoPrefixKeyStateEncoderSpec(keySchema)),
        Option.empty());
    Rewrite write = new Rewrite(new StateStoreConf(conf, Scala.map(Map.of())),
        new SerializableConfiguration(((org.apache.spark.sql.classic.SparkSession) s)
            .sessionState().newHadoopConf()), checkpoint, keySchema, valueSchema,
        Scala.map(Map.of("default", new StatePartitionWriterColumnFamilyInfo(cf, false))));
    List<String> infos = h.withS3A(() -> old.repartition(after, col("key")).queryExecution()
        .toRdd().toJavaRDD().mapPartitions(write).collect());
    long rewriteMs = (System.nanoTime() - start) / 1_000_000;
    assertEquals(after, infos.size(), "every new partition committed: " + infos);
    String[][] ids = new String[after][];
    for (String i : infos) {
      String[] f = i.split(",", -1);
      assertEquals("3", f[1], "version 3 (batch 2 + 1): " + i);
      assertEquals("false", f[3], "no base checkpoint id: " + i);
      assertTrue(!f[2].isEmpty(), "a checkpoint id (the commit log keeps it in format 2): " + i);
      ids[Integer.parseInt(f[0])] = new String[] {f[2]};
    }

    // commits/2 (the runner's commitBatch): batch 1's, with the new checkpoint ids (format 2).
    Map<Object, String[][]> byOperator = new HashMap<>();
    byOperator.put(0L, ids);
    assertTrue(commits.add(2L, commits.get(1L).get().withStateUniqueIds(
        format == 1 ? Option.empty() : Option.apply(Scala.map(byOperator)))));

    TreeSet<Integer> newPartitions = new TreeSet<>();
    assertEquals(before, state(checkpoint, 2, newPartitions),
        "the state of batch 2 is batch 1's, repartitioned");
    assertTrue(newPartitions.size() > 1 && newPartitions.last() < after
        && (after < BEFORE || newPartitions.last() >= BEFORE),
        "spread over the new partitions: " + newPartitions);

    // The query resumes with the new partition count: batch 3 counts on the rewritten state.
    writeBatch(in, 2, totals);
    run(name, session(format), in, checkpoint);
    assertEquals(new TreeMap<>(totals), OUTPUT.get(name).get(3L),
        "batch 3's counts after the repartition (batch 2 read no input)");
    System.out.println("OfflineRepartitionIT: format " + format + ", " + BEFORE + " -> " + after
        + " partitions rewritten in " + rewriteMs + " ms");
  }

  /**
   * One new partition's write, on an executor: the state data source's rows (key, value,
   * partition_id) as the runner's all-column-families rows (partition_key, key bytes, value
   * bytes, column family), written by Spark's {@code StatePartitionAllColumnFamiliesWriter};
   * returns "partition,version,checkpoint id,has base id".
   */
  private record Rewrite(StateStoreConf storeConf, SerializableConfiguration hadoop,
      String checkpoint, StructType keySchema, StructType valueSchema,
      scala.collection.immutable.Map<String, StatePartitionWriterColumnFamilyInfo> families)
      implements FlatMapFunction<Iterator<InternalRow>, String> {
    @Override
    public Iterator<String> call(Iterator<InternalRow> rows) {
      UnsafeProjection keys = UnsafeProjection.create(keySchema);
      UnsafeProjection values = UnsafeProjection.create(valueSchema);
      UTF8String family = UTF8String.fromString("default");
      Iterator<InternalRow> raw = new Iterator<>() {
        @Override
        public boolean hasNext() {
          return rows.hasNext();
        }

        @Override
        public InternalRow next() {
          InternalRow r = rows.next();
          return new GenericInternalRow(new Object[] {null,
              keys.apply(r.getStruct(0, keySchema.length())).copy().getBytes(),
              values.apply(r.getStruct(1, valueSchema.length())).copy().getBytes(), family});
        }
      };
      StateStoreCheckpointInfo info = new StatePartitionAllColumnFamiliesWriter(storeConf,
          hadoop.value(), TaskContext.getPartitionId(), checkpoint, 0L, "default", 2L, families,
          Option.empty()).write(CollectionConverters.asScala(raw));
      return List.of(info.partitionId() + "," + info.batchVersion() + ","
          + info.stateStoreCkptId().getOrElse(() -> "") + ","
          + info.baseStateStoreCkptId().isDefined()).iterator();
    }
  }
}
