// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import static io.strata.spark.BatchFiles.outputs;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.testkit.ChildJvm;
import io.strata.testkit.OncePerSparkLine;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.stream.Stream;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.streaming.state.StateStore;
import org.apache.spark.sql.execution.streaming.state.StateStoreConf;
import org.apache.spark.sql.execution.streaming.state.StateStoreId;
import org.apache.spark.sql.execution.streaming.state.UnsafeRowPair;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import scala.Option;

/**
 * Issue 14: re-runs from a later query run. A query on a file source ({@code
 * groupBy(key).count()}, update mode, one file per batch) runs 10 batches; then the newest
 * {@code offsets/N} and {@code commits/N} of the last two batches are deleted (a common way to
 * make Spark process them again) and the query restarts: Spark re-runs them, grouped
 * differently (the file source plans the two files, and any added since, anew). Every batch's
 * output must equal that of Spark's HDFS-backed provider doing the same on the same input: with
 * checkpoint format 1 the later run's re-commits are what later loads read, as Spark's
 * re-written version files are. Also with {@code checkpointFormatVersion=2} (Strata only; the
 * HDFS provider, which does not support it, is the baseline in format 1: a correct provider's
 * output does not depend on the checkpoint format). And zombies of the older run that commit
 * after the new run did ({@link
 * #aZombieOfTheOlderRunCommitsAfterTheNewRunCommittedTheSameAndLaterVersions}).
 *
 * <p>Issue 44: Strata's checkpoints are rewound with {@code strata rewind --to-batch N} (the
 * tools jar in a child JVM, as an operator runs it after stopping the query), the HDFS
 * provider's by hand; both must give the same batches.
 */
@OncePerSparkLine(reason = "rewinds are Spark's offset log and the provider's version loads, "
    + "Java code without Scala-version-specific calls; this build runs the same loads in "
    + "StatefulOperatorsIT and CheckpointOnS3IT")
class RerunAfterRewindIT {
  private static final int KEYS = 60;
  private static final long CHILD_TIMEOUT_S = 600;
  private static SparkS3Harness h;
  private static Path logs;

  @BeforeAll
  static void start() throws IOException {
    h = new SparkS3Harness(2);
    logs = Files.createDirectories(Path.of("target", "rerun-it-logs"));
  }

  @AfterAll
  static void stop() throws IOException {
    if (h != null) {
      h.close();
    }
  }

  /** Batch b: key kj appears 1 + (j + b) % 3 times, and not at all when (j + b) % 4 == 0. */
  private static void writeBatch(Path in, int b) throws IOException {
    StringBuilder sb = new StringBuilder();
    for (int j = 0; j < KEYS; j++) {
      if ((j + b) % 4 == 0) {
        continue;
      }
      for (int n = 0; n <= (j + b) % 3; n++) {
        sb.append("{\"key\":\"k").append(j).append("\"}\n");
      }
    }
    BatchFiles.write(in, b, sb);
  }

  private static Map<String, String> formatConf(int format) {
    return format == 2
        ? Map.of("spark.sql.streaming.stateStore.checkpointFormatVersion", "2") : Map.of();
  }

  /**
   * Runs the query in this JVM's session to the end of its input; rethrows its failure.
   *
   * @return the query run's id (Spark's {@code StreamingQuery.runId})
   */
  private static UUID runHere(String provider, String checkpoint, Path in, Path out,
      Path localDir, int format) throws Exception {
    SparkSession s = h.spark.newSession();
    s.conf().set("spark.sql.streaming.stateStore.providerClass", provider);
    s.conf().set("spark.sql.streaming.noDataMicroBatches.enabled", "false");
    s.conf().set("spark.sql.streaming.stateStore.strata.localDir", localDir.toString());
    (provider.equals(SparkS3Harness.PROVIDER) ? formatConf(format) : Map.<String, String>of())
        .forEach((k, v) -> s.conf().set(k, v));
    StreamingQuery q = CrashDriver.start(s, checkpoint, in, out, 0);
    q.awaitTermination();
    if (q.exception().isDefined()) {
      throw q.exception().get();
    }
    return q.runId();
  }

  /** Runs the query in a new driver JVM (local mode) with Strata on {@code localDir}. */
  private static void runInNewDriver(String checkpoint, Path in, Path out, Path localDir,
      int format, String name) throws Exception {
    List<String> args = new ArrayList<>(List.of(h.s3.endpoint().toString(), checkpoint,
        in.toString(), out.toString(), localDir.toString(), "none", "0"));
    formatConf(format).forEach((k, v) -> args.add(k + "=" + v));
    Path log = logs.resolve(name + ".log");
    int code;
    try (ChildJvm child = ChildJvm.start(CrashDriver.class, log, args.toArray(new String[0]))) {
      code = child.await(CHILD_TIMEOUT_S);
    }
    assertEquals(0, code, "the new driver ran the query to the end; log " + log);
  }

  /** The directory holding a checkpoint's files: S3Proxy's data directory, or a file: URI. */
  private static Path checkpointDir(String checkpoint) {
    if (checkpoint.startsWith("s3a://")) {
      String prefix = checkpoint.substring(("s3a://" + SparkS3Harness.BUCKET + "/").length());
      return h.s3.dataDir().resolve(SparkS3Harness.BUCKET).resolve(prefix);
    }
    return Paths.get(URI.create(checkpoint));
  }

  /** Deletes {@code offsets/<b>} and {@code commits/<b>} (and Hadoop's .crc files) of batches. */
  private static void rewind(String checkpoint, int... batches) throws IOException {
    Path dir = checkpointDir(checkpoint);
    for (String log : new String[] {"offsets", "commits"}) {
      for (int b : batches) {
        Path f = dir.resolve(log).resolve(Integer.toString(b));
        assertTrue(Files.deleteIfExists(f), "deleted " + f);
        Files.deleteIfExists(dir.resolve(log).resolve("." + b + ".crc"));
      }
    }
  }

  /**
   * {@code strata rewind <checkpoint> --to-batch <toBatch> --force} (the query stopped seconds
   * ago, so it still looks alive), the tools jar in a child JVM; the rewind must succeed and
   * leave {@code toBatch - 1} the newest batch in both logs.
   */
  private static void toolRewind(String checkpoint, int toBatch) throws Exception {
    String out = tool("rewind", checkpoint, "--to-batch", Integer.toString(toBatch), "--force");
    assertEquals(toBatch - 1, newestCommitted(checkpoint), out);
  }

  /**
   * {@code java -jar strata-tools-<version>.jar args... --conf-file <the S3 settings>}; it must
   * exit 0.
   *
   * @return what it printed
   */
  private static String tool(String... args) throws Exception {
    return h.tool(0, args);
  }

  /** The greatest batch id in {@code commits/}. */
  private static int newestCommitted(String checkpoint) throws IOException {
    try (Stream<Path> s = Files.list(checkpointDir(checkpoint).resolve("commits"))) {
      return s.map(p -> p.getFileName().toString()).filter(n -> n.matches("[0-9]+"))
          .mapToInt(Integer::parseInt).max().orElseThrow();
    }
  }

  /** Deletes the recorded output of batches about to be re-run (a re-run may not reach them). */
  private static void forget(Path out, int... batches) throws IOException {
    for (int b : batches) {
      Files.deleteIfExists(out.resolve("batch-" + b + ".txt"));
    }
  }

  /**
   * Where one test's query runs: its input, both checkpoints and both outputs, and the id of
   * Strata's first query run.
   */
  private record Setup(Path base, Path in, String baseline, Path outBase, String strata,
      Path outStrata, UUID firstRun) { }

  /**
   * Writes 10 batch files and runs the query to their end with the HDFS provider and with Strata
   * (local state in {@code base/local-1}); both outputs must be equal.
   *
   */
  private static Setup firstRun(String name, int format) throws Exception {
    Path base = Files.createDirectories(h.work.resolve(name + "-" + UUID.randomUUID()));
    Path in = Files.createDirectories(base.resolve("in"));
    for (int b = 0; b < 10; b++) {
      writeBatch(in, b);
    }
    String baseline = h.fileCheckpoint(name);
    Path outBase = base.resolve("out-hdfs");
    String strata = h.s3Checkpoint(name);
    Path outStrata = base.resolve("out-strata");
    runHere(SparkS3Harness.HDFS_PROVIDER, baseline, in, outBase, base.resolve("unused"), 1);
    UUID run = runHere(SparkS3Harness.PROVIDER, strata, in, outStrata, base.resolve("local-1"),
        format);
    assertEquals(outputs(outBase), outputs(outStrata), name + ": the first run");
    return new Setup(base, in, baseline, outBase, strata, outStrata, run);
  }

  private enum Restart { NEW_DRIVER_WIPED, SAME_SESSION_KEPT }

  /**
   * 10 batches, the last two rewound, {@code added} files added, a restart; a restart with one
   * file more (its batch loads the version the re-run committed); a rewind of the newest batch
   * with one file more and a restart (a third run re-commits). Outputs compared with the HDFS
   * provider's after every restart.
   */
  private void rewindAndCompare(String name, int format, Restart restart, int added)
      throws Exception {
    Setup setup = firstRun(name, format);
    Path base = setup.base();
    Path in = setup.in();
    String baseline = setup.baseline();
    Path outBase = setup.outBase();
    String strata = setup.strata();
    Path outStrata = setup.outStrata();
    Path local = base.resolve("local-1");
    assertEquals(10, outputs(outStrata).size());
    List<String> batch8Before = outputs(outStrata).get(8L);

    // 1: rewind batches 8 and 9 (plus {@code added} files); 2: one file more, no rewind, so the
    // next batch loads the version the re-run committed; 3: rewind the newest batch, one file more.
    for (int round = 1; round <= 3; round++) {
      int next = 10 + added + round - 2;
      if (round == 1) {
        rewind(baseline, 8, 9);
        toolRewind(strata, 8);
        forget(outBase, 8, 9);
        forget(outStrata, 8, 9);
        for (int b = 10; b < 10 + added; b++) {
          writeBatch(in, b);
        }
      } else {
        if (round == 3) {
          int newest = newestCommitted(baseline);
          assertEquals(newest, newestCommitted(strata));
          rewind(baseline, newest);
          toolRewind(strata, newest);
          forget(outBase, newest);
          forget(outStrata, newest);
        }
        writeBatch(in, next);
      }
      int before = newestCommitted(strata);
      runHere(SparkS3Harness.HDFS_PROVIDER, baseline, in, outBase, base.resolve("unused"), 1);
      if (restart == Restart.NEW_DRIVER_WIPED) {
        runInNewDriver(strata, in, outStrata, base.resolve("local-r" + round), format,
            name + "-r" + round);
      } else {
        runHere(SparkS3Harness.PROVIDER, strata, in, outStrata, local, format);
      }
      assertEquals(outputs(outBase), outputs(outStrata),
          name + ": every batch after restart " + round + " equals the HDFS provider's");
      assertTrue(newestCommitted(strata) > before, "restart " + round + " ran a batch");
    }
    assertNotEquals(batch8Before, outputs(outStrata).get(8L),
        "the re-run of batch 8 covered more input than the first run's (so a lost re-commit "
            + "would have shown)");
  }

  /**
   * A new driver JVM costs three driver starts per run. Checkpoint format 2 in new drivers was
   * right before query runs existed, so it runs on one line (4.1); format 1 runs on 3.5 (its own
   * Scala and restart path) and 4.1. On 4.0 and 4.2 the same-session rewinds run in both formats:
   * what a new driver adds (a cold restore from S3 after the rewind) is line-independent core
   * code that CrashIT and CheckpointOnS3IT run on every line.
   */
  private static void format2NewDriversOnlyOn41(int format) {
    format2NeedsSpark4(format);
    java.util.Optional<String> line = io.strata.testkit.SparkLineCondition.currentLine();
    org.junit.jupiter.api.Assumptions.assumeTrue(line.map("4.1"::equals).orElse(true)
        || (format == 1 && line.map("3.5"::equals).orElse(false)),
        "rewinds in new driver JVMs run on Spark 4.1 (both formats) and 3.5 (format 1) only");
  }

  /**
   * The same-session rewinds run on 3.5 (format 1), 4.0 and 4.2 (both formats), not on 4.1 (CI
   * time): 4.1's provider shares 4.2's code (src/spark-shared/4.1-and-later), and 4.1 runs the
   * rewinds in new driver JVMs, the zombie cases and the savepoint's copy.
   */
  private static void sameSessionNotOn41(int format) {
    format2NeedsSpark4(format);
    org.junit.jupiter.api.Assumptions.assumeFalse(io.strata.testkit.SparkLineCondition
        .currentLine().map("4.1"::equals).orElse(false), "same-session rewinds run on 3.5, "
            + "4.0 and 4.2 (CI time)");
  }

  /** Spark 3.5 has checkpoint format 1 only (it ignores the setting). */
  private static void format2NeedsSpark4(int format) {
    org.junit.jupiter.api.Assumptions.assumeTrue(format == 1
        || !io.strata.testkit.SparkLineCondition.currentLine().map("3.5"::equals).orElse(false),
        "Spark 3.5 has no checkpoint format 2");
  }

  @ParameterizedTest(name = "checkpoint format {0}")
  @ValueSource(ints = {1, 2})
  void rewindRestartedInANewDriverOnWipedLocalDirs(int format) throws Exception {
    format2NewDriversOnlyOn41(format);
    java.util.Optional<String> line = io.strata.testkit.SparkLineCondition.currentLine();
    org.junit.jupiter.api.Assumptions.assumeFalse(format == 1 && line.map("4.1"::equals)
        .orElse(false), "format 1's rewind in a new driver runs on 3.5 (CI time); 4.1 runs "
            + "format 2's and the zombie case in both formats");
    rewindAndCompare("rewind-new-driver-f" + format, format, Restart.NEW_DRIVER_WIPED, 0);
  }

  @ParameterizedTest(name = "checkpoint format {0}")
  @ValueSource(ints = {1, 2})
  void rewindRestartedInTheSameSessionWithLocalStateKept(int format) throws Exception {
    sameSessionNotOn41(format);
    rewindAndCompare("rewind-same-session-f" + format, format, Restart.SAME_SESSION_KEPT, 0);
  }

  @ParameterizedTest(name = "checkpoint format {0}")
  @ValueSource(ints = {1, 2})
  void aReRunWhoseInputDiffersFromTheFirstRun(int format) throws Exception {
    sameSessionNotOn41(format);
    rewindAndCompare("rewind-more-input-f" + format, format, Restart.SAME_SESSION_KEPT, 2);
  }

  /**
   * Issue 44: a savepoint outlives retention, and a copy of it resumes exactly. Batches 0 to 5
   * run with both providers; Strata's checkpoint gets {@code strata savepoint create --batch 5};
   * 12 more batches run with {@code minBatchesToRetain} 3 and maintenance every second, so Spark
   * purges its logs of batch 5 and garbage collection (the job's rounds, then {@code strata gc
   * --apply} with the same retention) runs, keeping version 6, which the savepoint holds; {@code strata copy --savepoint} makes a new checkpoint, and the
   * query started on it re-runs batches 6 to 17, each equal to the HDFS provider's run that
   * stopped after batch 5 and resumed on the same input.
   */
  @org.junit.jupiter.api.Test
  void aCopyOfASavepointResumesAsTheSourceWouldAfterRetentionPassedIt() throws Exception {
    org.junit.jupiter.api.Assumptions.assumeTrue(io.strata.testkit.SparkLineCondition
        .currentLine().map("4.1"::equals).orElse(true), "the tool is Spark-free: one line");
    Path base = Files.createDirectories(h.work.resolve("savepoint-" + UUID.randomUUID()));
    Path in = Files.createDirectories(base.resolve("in"));
    for (int b = 0; b < 6; b++) {
      writeBatch(in, b);
    }
    String baseline = h.fileCheckpoint("savepoint-hdfs");
    String strata = h.s3Checkpoint("savepoint-src");
    String copy = h.s3Checkpoint("savepoint-copy");
    Path outBase = base.resolve("out-hdfs");
    Path outStrata = base.resolve("out-strata");
    Path outCopy = base.resolve("out-copy");
    runHere(SparkS3Harness.HDFS_PROVIDER, baseline, in, outBase, base.resolve("unused"), 1);
    runHere(SparkS3Harness.PROVIDER, strata, in, outStrata, base.resolve("local-1"), 1);
    assertEquals(outputs(outBase), outputs(outStrata), "batches 0 to 5");
    tool("savepoint", "create", strata, "--batch", "5", "--name", "five");

    for (int b = 6; b < 18; b++) {
      writeBatch(in, b);
    }
    runHere(SparkS3Harness.HDFS_PROVIDER, baseline, in, outBase, base.resolve("unused"), 1);
    SparkSession s = h.spark.newSession();
    s.conf().set("spark.sql.streaming.stateStore.providerClass", SparkS3Harness.PROVIDER);
    s.conf().set("spark.sql.streaming.noDataMicroBatches.enabled", "false");
    s.conf().set("spark.sql.streaming.stateStore.strata.localDir",
        base.resolve("local-1").toString());
    s.conf().set("spark.sql.streaming.minBatchesToRetain", "3");
    s.conf().set("spark.sql.streaming.stateStore.maintenanceInterval", "1s");
    StreamingQuery q = CrashDriver.start(s, strata, in, outStrata, 300);
    q.awaitTermination();
    assertFalse(q.exception().isDefined(), () -> String.valueOf(q.exception()));
    Path store = checkpointDir(strata).resolve("state/0/0");
    try (Stream<Path> files = Files.list(checkpointDir(strata).resolve("offsets"))) {
      assertFalse(files.anyMatch(f -> f.getFileName().toString().equals("5")),
          "Spark purged offsets/5");
    }
    // The job's own rounds ran at its maintenance (every second) if the machine let them, and an
    // offline round with the same code and retention follows. What they can collect depends on
    // the base snapshots the job's maintenance took (deltas stay named until one covers them), so
    // only the hold is asserted here; that holds keep what collection would otherwise delete is
    // asserted without timing in SavepointCommandTest and ReachabilityTest.
    tool("gc", strata, "--apply", "--force", "--conf",
        "spark.sql.streaming.minBatchesToRetain=3");
    try (Stream<Path> files = Files.walk(store.resolve("v"))) {
      List<Long> versions = files.filter(Files::isRegularFile).map(f -> io.strata.format
          .StoreLayout.versionOf(store.relativize(f).toString())).distinct().sorted().toList();
      assertTrue(versions.contains(6L), "the savepoint's version 6 stays: " + versions);
    }

    tool("copy", strata, copy, "--savepoint", "five");
    runInNewDriver(copy, in, outCopy, base.resolve("local-copy"), 1, "savepoint-copy");
    java.util.TreeMap<Long, List<String>> expected = new java.util.TreeMap<>(
        outputs(outBase).tailMap(6L));
    assertEquals(expected, outputs(outCopy),
        "batches 6 to 17 from the copy equal the HDFS provider's resumed run");
  }

  /** The aggregation's state key ({@code key}) and value ({@code count} buffer) schemas. */
  private static final StructType STATE_KEY = new StructType().add("key", DataTypes.StringType);
  private static final StructType STATE_VALUE =
      new StructType().add("count", DataTypes.LongType);

  /**
   * A provider of partition 0 of the aggregation's store as a task of query run {@code runId}
   * would open it on another executor (its own local directory), with the session's S3 settings.
   */
  private static StrataStateStoreProvider zombieProvider(String checkpoint, UUID runId,
      Path localDir) {
    SQLConf sql = h.spark.sessionState().conf().clone();
    sql.setConfString("spark.sql.streaming.stateStore.strata.localDir", localDir.toString());
    Configuration hadoop = h.spark.sessionState().newHadoopConf();
    hadoop.set(StrataProviderBase.RUN_ID_KEY, runId.toString());
    StrataStateStoreProvider p = new StrataStateStoreProvider();
    StoreApi.init(p, new StateStoreId(checkpoint + "/state", 0, 0,
        StateStoreId.DEFAULT_STORE_NAME()), STATE_KEY, STATE_VALUE, sql, hadoop);
    return p;
  }

  /** Removes every key of {@code s} (a commit that, if it won, would empty the partition). */
  private static void removeAll(StateStore s) {
    List<UnsafeRow> keys = new ArrayList<>();
    scala.collection.Iterator<UnsafeRowPair> it = StoreApi.iterator(s);
    while (it.hasNext()) {
      keys.add(it.next().key().copy());
    }
    assertFalse(keys.isEmpty(), "the zombie's version holds keys");
    for (UnsafeRow k : keys) {
      StoreApi.remove(s, k);
    }
  }

  /**
   * Zombies of an older query run: two tasks of the first run, on executors that never learnt
   * of the restart, load versions 8 and 10 of partition 0 before it (warm local databases), then,
   * after the new run re-ran batches 8 and 9 and ran batch 10 and on (versions 9 to 11 and on), delete every
   * key of the partition and commit versions 9 and 11. Neither commit may replace what the new
   * run committed: in format 1, the commit of version 11 (a later run's object is in place) fails
   * as fenced and the commit of version 9 finds its own run's superseded object and is lost; in
   * format 2 each writes an attempt no checkpoint id names. A restart in a new driver JVM on
   * wiped local dirs then gives every batch exactly as the HDFS provider does.
   */
  @ParameterizedTest(name = "checkpoint format {0}")
  @ValueSource(ints = {1, 2})
  void aZombieOfTheOlderRunCommitsAfterTheNewRunCommittedTheSameAndLaterVersions(int format)
      throws Exception {
    format2NewDriversOnlyOn41(format);
    String name = "zombie-f" + format;
    Setup setup = firstRun(name, format);
    UUID first = setup.firstRun();
    Path base = setup.base();
    Path in = setup.in();
    String baseline = setup.baseline();
    Path outBase = setup.outBase();
    String strata = setup.strata();
    Path outStrata = setup.outStrata();

    StrataStateStoreProvider zombie9 = zombieProvider(strata, first, base.resolve("zombie-9"));
    StrataStateStoreProvider zombie11 = zombieProvider(strata, first, base.resolve("zombie-11"));
    try {
      StateStore at8 = SparkApi.getStore(zombie9, 8);
      StateStore at10 = SparkApi.getStore(zombie11, 10);

      rewind(baseline, 8, 9);
      toolRewind(strata, 8);
      forget(outBase, 8, 9);
      forget(outStrata, 8, 9);
      // The re-run of batch 8 takes files 8 to 10 (the file source plans anew), 9 takes 11 and
      // 10 takes 12: the new run reaches version 11, which the first run never committed.
      for (int b = 10; b <= 12; b++) {
        writeBatch(in, b);
      }
      runHere(SparkS3Harness.HDFS_PROVIDER, baseline, in, outBase, base.resolve("unused"), 1);
      UUID second = runHere(SparkS3Harness.PROVIDER, strata, in, outStrata,
          base.resolve("local-2"), format);
      assertNotEquals(first, second);
      assertEquals(outputs(outBase), outputs(outStrata), name + ": the re-run");
      assertEquals(newestCommitted(baseline), newestCommitted(strata));
      assertTrue(newestCommitted(strata) >= 10,
          "the new run committed batch 10 (version 11), which the first run never did");

      removeAll(at8);
      removeAll(at10);
      if (format == 1) {
        Exception fenced = org.junit.jupiter.api.Assertions.assertThrows(Exception.class,
            at10::commit, "the zombie's commit of version 11 over the new run's is refused");
        assertTrue(String.valueOf(fenced.getCause()).contains("superseded by a later run"),
            String.valueOf(fenced.getCause()));
        at10.abort();
        try {
          at8.commit(); // finds the first run's own superseded version 9: lost, not replaced
        } catch (Exception lost) {
          at8.abort();
        }
      } else {
        at8.commit();
        at10.commit();
      }
    } finally {
      zombie9.close();
      zombie11.close();
    }

    writeBatch(in, 13);
    runHere(SparkS3Harness.HDFS_PROVIDER, baseline, in, outBase, base.resolve("unused"), 1);
    runInNewDriver(strata, in, outStrata, base.resolve("local-3"), format, name + "-r3");
    assertEquals(outputs(outBase), outputs(outStrata),
        name + ": after the zombies' commits, every batch equals the HDFS provider's");
    assertEquals(newestCommitted(baseline), newestCommitted(strata));
  }
}
