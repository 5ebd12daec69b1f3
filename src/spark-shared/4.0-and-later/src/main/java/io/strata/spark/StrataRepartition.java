// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.Partitioner;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.streaming.state.StateStoreConf;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.util.SerializableConfiguration;

/**
 * Offline state repartitioning of a stopped query's Strata checkpoint (issue 44): after it, the
 * query resumes with a new number of state partitions ({@code spark.sql.shuffle.partitions},
 * which Spark otherwise fixes for a stateful query's life, SPARK-19873). Spark 4.2 has a runner
 * for this ({@code StreamingCheckpointManager.repartition}) that accepts Spark's RocksDB
 * provider only; this job does the same for Strata on Spark 4.0, 4.1 and 4.2, as Spark's runner
 * does it:
 *
 * <ol>
 *   <li>the newest committed batch {@code N} is read from the offset and commit logs; the query
 *       must be stopped (its newest log entry older than {@code --idle-minutes}, or {@code
 *       --force}), its state kept by Strata, and every stateful operator one whose keys
 *       {@link StatePlacement} can place: streaming aggregations, {@code dropDuplicates}, {@code
 *       flatMapGroupsWithState}, session windows, stream-stream joins (join state formats 1
 *       and 2), {@code transformWithState} (every column family), and the operators without a
 *       grouping key (a global aggregation, a streaming limit), whose state stays in
 *       partition 0. Others are refused by name;
 *   <li>each operator's state of batch {@code N} (version {@code N + 1} of every old partition,
 *       restored by Strata, {@link StateRead}) is shuffled by its key into the new count of
 *       partitions (Murmur3 of the key's partition-key fields with seed 42, modulo {@code M}: the
 *       placement the query's own shuffle gives each key) and written into every new partition as version
 *       {@code N + 2} of nothing else ({@link StateRewrite}), under a run id of its own. Spark's
 *       state data source gives the schemas and the operators ({@code state-metadata}), so the
 *       session needs a Hadoop file system for the checkpoint's scheme (S3A, or Strata's
 *       read-only {@code StrataS3FileSystem});
 *   <li>{@code commits/N+1} is written (batch {@code N}'s commit, with the new checkpoint ids
 *       under checkpoint format 2), then {@code offsets/N+1}, claimed before step 2 with a
 *       marker Spark cannot read ({@link #PENDING}), becomes batch {@code N}'s entry with
 *       {@code spark.sql.shuffle.partitions} set to {@code M}, in one PUT over the marker.
 *       Batch {@code N + 1} reads no new input; the query's next batch, {@code N + 2}, runs with
 *       {@code M} partitions on the rewritten state.
 * </ol>
 *
 * <p>The job claims {@code offsets/N+1} with its marker before it writes any state: a query or
 * another run of the job that wrote {@code offsets/N+1} first wins, and this run writes
 * nothing. While the marker is there, a query started on the checkpoint fails at once, on every
 * line, with a message naming this job and the count; the marker goes only after the commit, so
 * no query ever sees the new count without the rewritten state (Spark 4.0 and 4.1 would run
 * such a batch on the old layout). A run that fails after the claim leaves the marker: running
 * the job again with the same {@code --partitions} finishes the repartition (before the commit,
 * the state is written again under a new run, which supersedes the failed run's, as Spark's
 * runner retries a failed repartition batch; after it, only the marker is replaced). A commit
 * write whose answer was lost is read back.
 *
 * <p>Old partitions at or above {@code M} keep their objects (nothing loads them again);
 * {@code strata gc} leaves them, and the checkpoint's history below {@code N + 1} keeps the old
 * count, so a rewind across the repartition must restore the old count too.
 */
public final class StrataRepartition {
  static final String SHUFFLE_PARTITIONS = "spark.sql.shuffle.partitions";
  static final String PROVIDER_CLASS = "spark.sql.streaming.stateStore.providerClass";
  static final String FORMAT_VERSION = "spark.sql.streaming.stateStore.checkpointFormatVersion";
  static final String STRICT_DISTRIBUTION =
      "spark.sql.streaming.statefulOperator.useStrictDistribution";
  /**
   * The first line of the marker the job claims {@code offsets/N+1} with before it writes any
   * state, followed by the new count. Spark cannot read it (not a log version), so a query
   * started before the job finished fails at once with this text in its message ("Log file was
   * malformed ... from v-strata-repartition-pending-..."), on every line.
   */
  static final String PENDING = "v-strata-repartition-pending-run-io.strata.spark."
      + "StrataRepartition-again-with---partitions-";
  static final String USAGE = "Usage: spark-submit --class io.strata.spark.StrataRepartition "
      + "<runtime jar> <checkpoint> --partitions <M> [--dry-run] [--force] "
      + "[--idle-minutes <minutes, default 10>] [--file-sink <output path of a file sink>]...";
  private static final ObjectMapper JSON = new ObjectMapper();

  private StrataRepartition() { }

  /**
   * What to do.
   *
   * @param checkpoint the query's checkpoint location
   * @param partitions the new number of state partitions, 1 to 100,000
   * @param dryRun check and print the plan, write nothing
   * @param force run although the query looks alive
   * @param idleMinutes how long ago the newest log entry must be written for the query to look
   *     stopped, in minutes
   * @param fileSinks the output directories of the query's file sinks ({@code --file-sink},
   *     repeatable), whose sink logs get the repartition batch as an empty batch
   */
  public record Options(String checkpoint, int partitions, boolean dryRun, boolean force,
      long idleMinutes, List<String> fileSinks) {
    /**
     * Parses the command line.
     *
     * @throws IllegalArgumentException naming the bad or missing argument
     */
    public static Options parse(String... args) {
      String checkpoint = null;
      Integer partitions = null;
      boolean dryRun = false;
      boolean force = false;
      long idle = 10;
      List<String> sinks = new ArrayList<>();
      for (int i = 0; i < args.length; i++) {
        String a = args[i];
        switch (a) {
          case "--dry-run" -> dryRun = true;
          case "--file-sink" -> {
            if (i + 1 >= args.length) {
              throw new IllegalArgumentException(a + " needs a value");
            }
            sinks.add(args[++i]);
          }
          case "--force" -> force = true;
          case "--partitions", "--idle-minutes" -> {
            if (i + 1 >= args.length) {
              throw new IllegalArgumentException(a + " needs a value");
            }
            String v = args[++i];
            long n;
            try {
              n = Long.parseLong(v);
            } catch (NumberFormatException e) {
              throw new IllegalArgumentException("Invalid " + a + " '" + v + "': expected a "
                  + "whole number");
            }
            if (a.equals("--partitions")) {
              if (n < 1 || n > 100_000) {
                throw new IllegalArgumentException("Invalid --partitions " + n
                    + ": expected 1 to 100000");
              }
              partitions = (int) n;
            } else {
              if (n < 0 || n > 1_000_000) {
                throw new IllegalArgumentException("Invalid --idle-minutes " + n
                    + ": expected 0 to 1000000");
              }
              idle = n;
            }
          }
          default -> {
            if (a.startsWith("-") || checkpoint != null) {
              throw new IllegalArgumentException("Unknown argument '" + a + "'");
            }
            checkpoint = a;
          }
        }
      }
      if (checkpoint == null) {
        throw new IllegalArgumentException("Missing the checkpoint location");
      }
      if (partitions == null) {
        throw new IllegalArgumentException("Missing --partitions");
      }
      return new Options(checkpoint, partitions, dryRun, force, idle, List.copyOf(sinks));
    }
  }

  /** How far an earlier run of the job got (see {@link #run(SparkSession, Options)}). */
  private enum Stage {
    /** Nothing of a repartition in the logs. */
    FRESH,
    /** {@code offsets/N+1} is this job's marker ({@link #PENDING}), without its commit. */
    MARKED,
    /** {@code commits/N+1} is written and {@code offsets/N+1} is still the marker. */
    COMMITTED
  }

  /**
   * What the job reads and writes for one store, all found before its claim.
   *
   * @param oldIds per old partition, the checkpoint id of the version read (format 2), or null
   */
  private record StorePlan(Store store, StatePlacement placement, String[] oldIds) { }

  /** A stateful operator's store to rewrite (from the checkpoint's operator metadata). */
  public record Store(long operatorId, String operatorName, String storeName) { }

  /**
   * What a run did or, with {@code --dry-run}, would do.
   *
   * @param readBatch the batch whose state was read ({@code N})
   * @param newBatch the repartition batch ({@code N + 1})
   * @param from the old number of partitions
   * @param to the new number
   * @param stores the rewritten stores
   * @param rows state rows written, over every store
   * @param written false for a dry run
   */
  public record Result(long readBatch, long newBatch, int from, int to, List<Store> stores,
      long rows, boolean written) {
    /** One line per fact, for the console. */
    public String summary() {
      StringBuilder sb = new StringBuilder();
      sb.append(written ? "Repartitioned" : "Would repartition (dry run)").append(" the state of "
          + "batch ").append(readBatch).append(" from ").append(from).append(" to ").append(to)
          .append(" partitions as batch ").append(newBatch).append('\n');
      for (Store s : stores) {
        sb.append("  operator ").append(s.operatorId()).append(" (").append(s.operatorName())
            .append("), store ").append(s.storeName()).append('\n');
      }
      if (written) {
        sb.append("  ").append(rows).append(" state rows written (keys, of every store and "
            + "column family); the query's next batch runs "
            + "with ").append(to).append(" partitions\n");
      }
      return sb.toString();
    }
  }

  /**
   * A refusal (exit code 4 from {@link #main}): before the job's claim the checkpoint is left as
   * it was; after it (a race lost while replacing its marker, or a commit that appeared), see
   * the message.
   */
  public static final class Refused extends RuntimeException {
    private static final long serialVersionUID = 1L;

    Refused(String message) {
      super(message);
    }
  }

  /**
   * The {@code spark-submit --class} entry point: runs {@link #run} on the session spark-submit
   * configured (Strata's settings, a Hadoop file system for the checkpoint's scheme) and prints
   * its summary. Exit codes as the {@code strata} tool's: 0 done (or {@code --help}), 2 a bad
   * command line, 4 a refusal (its message on stderr, nothing written); any other failure ends
   * with its exception (spark-submit exits non-zero).
   */
  public static void main(String[] args) throws IOException {
    if (java.util.Arrays.asList(args).contains("--help")) {
      System.out.println(USAGE);
      return;
    }
    Options options;
    try {
      options = Options.parse(args);
    } catch (IllegalArgumentException e) {
      System.err.println("strata repartition: " + e.getMessage());
      System.err.println(USAGE);
      System.exit(2);
      return;
    }
    SparkSession spark = SparkSession.builder().appName("strata-repartition").getOrCreate();
    int exit = 0;
    try {
      System.out.print(run(spark, options).summary());
    } catch (Refused e) {
      System.err.println("strata repartition: " + e.getMessage());
      exit = 4;
    } finally {
      spark.stop();
    }
    if (exit != 0) {
      System.exit(exit);
    }
  }

  /**
   * Repartitions {@code options.checkpoint()} (see the class comment for the steps).
   *
   * @param spark a session with Strata's settings and a Hadoop file system for the checkpoint's
   *     scheme (Spark's state data source qualifies the path with one); its checkpoint format
   *     setting is the checkpoint's while the job runs, and its own again afterwards
   * @return what it did
   * @throws Refused if the checkpoint cannot be repartitioned as asked (a message naming the
   *     reason, the file or operator and what is expected); nothing was written
   * @throws IOException if reading or writing the logs fails
   */
  public static Result run(SparkSession spark, Options options) throws IOException {
    org.apache.spark.sql.classic.SparkSession session =
        (org.apache.spark.sql.classic.SparkSession) spark;
    // Spark's streaming query manager registers the state store coordinator on the driver,
    // which the stores report their commits to (in a job that starts no query it would not exist,
    // and every new partition's report would WARN).
    spark.streams();
    Configuration hadoop = session.sessionState().newHadoopConf();
    // The job sets the session's checkpoint format to the checkpoint's (below); the caller's
    // session gets its own setting back.
    scala.Option<String> format = spark.conf().getOption(FORMAT_VERSION);
    try (CheckpointLogs logs = new CheckpointLogs(options.checkpoint(), hadoop)) {
      return run(spark, session, options, hadoop, logs);
    } finally {
      if (format.isDefined()) {
        spark.conf().set(FORMAT_VERSION, format.get());
      } else {
        spark.conf().unset(FORMAT_VERSION);
      }
    }
  }

  /** {@link #run(SparkSession, Options)} with the session's Hadoop configuration and logs. */
  private static Result run(SparkSession spark, org.apache.spark.sql.classic.SparkSession session,
      Options options, Configuration hadoop, CheckpointLogs logs) throws IOException {
    String checkpoint = options.checkpoint();
    int to = options.partitions();
    long[] commit = logs.newest("commits");
    long[] offset = logs.newest("offsets");
    if (commit == null || offset == null) {
      throw new Refused(checkpoint + " has no committed batch (commits/ is empty or missing): "
          + "there is no state to repartition");
    }
    long n = commit[0];
    // Where an earlier run of this job stopped: nothing written (FRESH), its marker claimed
    // offsets/N+1 (MARKED), or commits/N+1 is written and the marker not yet replaced
    // (COMMITTED); see the class comment.
    Stage stage = Stage.FRESH;
    String lastText = offset[0] >= n ? logs.read("offsets", offset[0]) : null;
    boolean marked = lastText != null && lastText.startsWith(PENDING);
    if (marked && offset[0] == n && n > 0) {
      stage = Stage.COMMITTED;
      n = n - 1; // the batch whose state was read
    } else if (marked && offset[0] == n + 1) {
      stage = Stage.MARKED;
    }
    if (stage != Stage.FRESH) {
      String pending = lastText.substring(PENDING.length()).trim();
      if (!Integer.toString(to).equals(pending)) {
        throw new Refused(checkpoint + ": offsets/" + offset[0] + " is an unfinished "
            + "repartition to " + pending + " partitions: run this job again with "
            + "--partitions " + pending + " to finish it");
      }
    }
    boolean resume = stage != Stage.FRESH;
    long newest = Math.max(commit[1], offset[1]);
    long idleMs = options.idleMinutes() * 60_000L;
    long ago = System.currentTimeMillis() - newest;
    if (!options.force() && ago < idleMs) {
      throw new Refused(checkpoint + (stage != Stage.FRESH ? ": a run of this job claimed "
          + "offsets/" + offset[0] + " " + Math.max(0, ago / 1000) + " s ago (less than "
          + "--idle-minutes " + options.idleMinutes() + "); if that run is no longer running, "
          + "pass --force" : ": the query looks alive (its newest offset or commit entry was "
          + "written " + Math.max(0, ago / 1000) + " s ago, less than --idle-minutes "
          + options.idleMinutes() + "); stop it first, or pass --force if it is stopped"));
    }
    if (stage == Stage.FRESH && offset[0] > n) {
      throw new Refused(checkpoint + ": offsets/" + offset[0] + " has no commit (the newest "
          + "is commits/" + n + "): batch " + offset[0] + " did not finish. Finish it: start "
          + "the query once with Trigger.AvailableNow() (it runs the planned batch and the "
          + "input then available, and stops), or, if the query writes no file sink (whose "
          + "output of that batch would stay), take it back with strata rewind " + checkpoint
          + " --to-batch " + offset[0] + " --force (its input is planned again); then run "
          + "this job");
    }
    String offsetsText = logs.read("offsets", n);
    Map<String, String> conf = offsetsConf(offsetsText, n);
    String provider = conf.get(PROVIDER_CLASS);
    if (!StrataStateStoreProvider.class.getName().equals(provider)) {
      throw new Refused(checkpoint + ": its state is kept by " + provider + " (offsets/" + n
          + ", " + PROVIDER_CLASS + "), not by " + StrataStateStoreProvider.class.getName()
          + "; this job repartitions Strata checkpoints only");
    }
    int from = Integer.parseInt(conf.getOrDefault(SHUFFLE_PARTITIONS, "-1"));
    if (stage == Stage.COMMITTED) {
      // The state and the commit are written: only the marker's replacement and the sinks remain.
      for (String sink : options.fileSinks()) {
        FileSinkLogs.check(spark, sink, n, true);
      }
      if (options.dryRun()) {
        return new Result(n, n + 1, from, to, List.of(), 0, false);
      }
      return finish(spark, options, logs, n, withPartitions(offsetsText, n, to), from, List.of(),
          0);
    }
    if (from == to && !resume) {
      String before = options.fileSinks().isEmpty() || n == 0 ? null
          : offsetsConf(logs.read("offsets", n - 1), n - 1).get(SHUFFLE_PARTITIONS);
      if (before != null && !before.equals(Integer.toString(to))) {
        // Batch N is a finished repartition: a run that died before its sinks' logs got the
        // batch is finished by adding them now (each checked first).
        for (String sink : options.fileSinks()) {
          FileSinkLogs.check(spark, sink, n - 1, true);
        }
        for (String sink : options.fileSinks()) {
          if (!options.dryRun()) {
            FileSinkLogs.addEmptyBatch(spark, sink, n);
          }
        }
        return new Result(n - 1, n, Integer.parseInt(before), to, List.of(), 0,
            !options.dryRun());
      }
      throw new Refused(checkpoint + " already has " + to + " partitions (offsets/" + n + ")");
    }
    if ("false".equalsIgnoreCase(conf.get(STRICT_DISTRIBUTION))) {
      // Before Spark 3.3 (or with this internal setting off) a stateful operator may reuse an
      // earlier shuffle on fewer columns than its state key: placing the state by the key would
      // not match where the query looks for it.
      throw new Refused(checkpoint + ": offsets/" + n + " records " + STRICT_DISTRIBUTION
          + "=false (a query started before Spark 3.3, or with that setting off): its stateful "
          + "operators may be placed by another shuffle than their state key, which this job "
          + "cannot reproduce");
    }
    // Checkpoint format 2 shows in the commit (its state store checkpoint ids; the offset log
    // does not record the setting): Spark's readers below need the session to say so too.
    String commitText = logs.read("commits", n);
    boolean ids = hasCheckpointIds(commitText, n);
    spark.conf().set(FORMAT_VERSION, ids ? "2" : "1");
    List<Store> stores;
    List<StorePlan> plans = new ArrayList<>();
    try {
      stores = stores(spark, checkpoint);
      for (Store s : stores) {
        // The schemas only (no rows are read through the state data source; see StateRead).
        StatePlacement placement = StoreSchemas.placement(spark, checkpoint, s, n, conf);
        plans.add(new StorePlan(s, placement,
            ids ? oldIds(commitText, n, s, placement.singlePartition() ? 1 : from,
                placement.storeIndex()) : null));
      }
      for (String sink : options.fileSinks()) {
        FileSinkLogs.check(spark, sink, n, resume);
      }
    } catch (Refused e) {
      throw e;
    } catch (Exception e) { // Spark's readers throw Hadoop's IOException undeclared
      Throwable root = e;
      while (root.getCause() != null && root.getCause() != root) {
        root = root.getCause();
      }
      if (root instanceof org.apache.hadoop.fs.UnsupportedFileSystemException) {
        String scheme = new org.apache.hadoop.fs.Path(checkpoint).toUri().getScheme();
        throw new Refused(checkpoint + ": Spark's state data source, which this job reads the "
            + "operators and schemas with, needs a Hadoop file system for \"" + scheme + "\" ("
            + root.getMessage() + "): set spark.hadoop.fs." + scheme + ".impl="
            + "io.strata.checkpoint.StrataS3FileSystem (Strata's read-only one), or S3A's");
      }
      if (e instanceof IOException io) {
        throw io;
      }
      throw e instanceof RuntimeException r ? r : new IllegalStateException(e);
    }
    long newBatch = n + 1;
    if (options.dryRun()) {
      return new Result(n, newBatch, from, to, stores, 0, false);
    }

    // Claim the batch first: a query (or another run of this job) that writes offsets/N+1 first
    // wins, and this run writes no state; once the marker is there, no query starts on the
    // checkpoint (Spark cannot read the marker) until a run of this job replaces it.
    if (stage == Stage.FRESH && !logs.create("offsets", newBatch, PENDING + to + "\n")) {
      throw new Refused(checkpoint + ": offsets/" + newBatch + " appeared while the job ran: "
          + "another run of the query or of this job writes this checkpoint; nothing written");
    }
    SQLConf sql = session.sessionState().conf().clone();
    conf.forEach(sql::setConfString);
    sql.setConfString(SHUFFLE_PARTITIONS, Integer.toString(to));
    sql.setConfString(FORMAT_VERSION, ids ? "2" : "1");
    StateStoreConf storeConf = new StateStoreConf(sql, Scala.map(Map.of()));
    Configuration writeConf = new Configuration(hadoop);
    writeConf.set(StrataProviderBase.RUN_ID_KEY, UUID.randomUUID().toString());
    SerializableConfiguration shipped = new SerializableConfiguration(writeConf);
    // Operator id to, per new partition, the checkpoint id of each of its stores.
    Map<Long, String[][]> checkpointIds = new TreeMap<>();
    long rows = 0;
    JavaSparkContext sc = JavaSparkContext.fromSparkContext(spark.sparkContext());
    for (StorePlan plan : plans) {
      Store s = plan.store();
      StatePlacement placement = plan.placement();
      // An operator without grouping key keeps its state in partition 0 whatever the count.
      int oldCount = placement.singlePartition() ? 1 : from;
      int newCount = placement.singlePartition() ? 1 : to;
      List<Integer> oldPartitions = new ArrayList<>();
      for (int p = 0; p < oldCount; p++) {
        oldPartitions.add(p);
      }
      String stateRoot = checkpoint + "/state";
      StateRead read = new StateRead(stateRoot, s.operatorId(), s.storeName(), placement,
          storeConf, shipped, n + 1, plan.oldIds(), newCount);
      StateRewrite rewrite = new StateRewrite(stateRoot, s.operatorId(), s.storeName(),
          placement, storeConf, shipped, newBatch);
      List<String> written = sc.parallelize(oldPartitions, oldCount).flatMapToPair(read)
          .partitionBy(new ExactPartitioner(newCount)).mapPartitionsWithIndex(rewrite, false)
          .collect();
      String[] byPartition = new String[newCount];
      for (String line : written) {
        String[] f = line.split(",", -1);
        byPartition[Integer.parseInt(f[0])] = f[2];
        rows += Long.parseLong(f[1]);
      }
      for (int p = 0; p < newCount; p++) {
        if (byPartition[p] == null) {
          throw new IllegalStateException("operator " + s.operatorId() + " store "
              + s.storeName() + ": partition " + p + " of " + newCount + " was not written (the "
              + "shuffle gave " + written.size() + " partitions); the logs are unchanged");
        }
      }
      long storesOfOperator = stores.stream().filter(o -> o.operatorId() == s.operatorId())
          .count();
      String[][] ofOperator = checkpointIds.computeIfAbsent(s.operatorId(),
          op -> new String[newCount][(int) storesOfOperator]);
      for (int p = 0; p < newCount; p++) {
        ofOperator[p][placement.storeIndex()] = byPartition[p];
      }
    }

    // Then the logs: the commit first, while the marker still keeps every query off the
    // checkpoint; then the marker becomes the batch's offsets entry with the new count, in one
    // PUT (a query that saw the new offsets without their commit would run batch N+1 with the
    // new count on the old layout: Spark 4.0 and 4.1 do not detect an unfinished repartition).
    String now = logs.read("offsets", newBatch);
    if (now == null || !now.startsWith(PENDING)) {
      throw new Refused(checkpoint + ": offsets/" + newBatch + " is no longer this job's "
          + "marker: another run of the query or of this job writes this checkpoint");
    }
    String commitNew = withIds(commitText, n, ids ? checkpointIds : null);
    boolean committed;
    try {
      committed = logs.create("commits", newBatch, commitNew);
    } catch (IOException | RuntimeException e) {
      // A write whose answer was lost may have been applied: then go on. If the commit is
      // absent the marker stays, and the query cannot start until a run of this job finishes.
      String found;
      try {
        found = logs.read("commits", newBatch);
      } catch (IOException | RuntimeException unread) {
        e.addSuppressed(unread);
        throw e;
      }
      if (!commitNew.equals(found)) {
        throw e;
      }
      committed = true;
    }
    if (!committed && !commitNew.equals(logs.read("commits", newBatch))) {
      throw new Refused(checkpoint + ": commits/" + newBatch + " appeared while the job ran: "
          + "another run of this job writes this checkpoint; run it again with --partitions "
          + to + " once that run has stopped");
    }
    return finish(spark, options, logs, n, withPartitions(offsetsText, n, to), from, stores,
        rows);
  }

  /**
   * The last step: {@code commits/N+1} is written, and {@code offsets/N+1}, this job's marker,
   * becomes the repartition batch's entry (one PUT over the marker: only a run of this job with
   * the same count writes {@code offsets/N+1} while the marker is there, and it writes the same
   * text); then the file sinks' logs get the batch.
   */
  private static Result finish(SparkSession spark, Options options, CheckpointLogs logs, long n,
      String entry, int from, List<Store> stores, long rows) throws IOException {
    logs.replace("offsets", n + 1, entry);
    addSinkBatches(spark, options, n + 1);
    return new Result(n, n + 1, from, options.partitions(), stores, rows, true);
  }

  /**
   * Adds the committed repartition batch to every {@code --file-sink}'s log: Spark's file sink
   * log needs every batch id up to the newest (its readers and its compaction fail on a gap),
   * and the batch runs no sink. Only after the commit: an entry for a batch the query may still
   * run would make its sink skip that batch's output. A run that dies before this step leaves a
   * gap Spark reports loudly; the job run again with {@code --file-sink} adds it.
   */
  private static void addSinkBatches(SparkSession spark, Options options, long batch) {
    for (String sink : options.fileSinks()) {
      FileSinkLogs.addEmptyBatch(spark, sink, batch);
    }
  }

  /**
   * The checkpoint's stateful operators and their stores, from Spark's {@code state-metadata}
   * source (the operator metadata under {@code state/<op>/_metadata}).
   *
   * @throws Refused if there is none, or an operator or store is not one {@link StatePlacement}
   *     places
   */
  static List<Store> stores(SparkSession spark, String checkpoint) {
    List<Store> stores = new ArrayList<>();
    for (Row r : spark.read().format("state-metadata").load(checkpoint).collectAsList()) {
      Store s = new Store(((Number) r.getAs("operatorId")).longValue(), r.getAs("operatorName"),
          r.getAs("stateStoreName"));
      StatePlacement.check(checkpoint, s);
      stores.add(s);
    }
    if (stores.isEmpty()) {
      throw new Refused(checkpoint + " has no operator metadata (state/<operator>/_metadata): "
          + "no stateful operator to repartition, or a query started before Spark 3.5");
    }
    stores.sort(java.util.Comparator.comparingLong(Store::operatorId)
        .thenComparing(Store::storeName));
    return stores;
  }

  /** The lines of a log entry: the version line, the JSON metadata line, the rest. */
  private static String[] lines(String text, String what) {
    String[] lines = text.split("\n", 3);
    if (lines.length < 2 || !lines[0].matches("v[0-9]+") || !lines[1].startsWith("{")) {
      throw new Refused(what + " is not an entry of Spark's log (a version line, then JSON "
          + "metadata): " + text.substring(0, Math.min(80, text.length())));
    }
    return lines;
  }

  /** The SQL settings an {@code offsets/<batch>} entry records. */
  static Map<String, String> offsetsConf(String text, long batch) throws IOException {
    if (text == null) {
      throw new Refused("offsets/" + batch + " is missing");
    }
    JsonNode conf = JSON.readTree(lines(text, "offsets/" + batch)[1]).get("conf");
    Map<String, String> out = new LinkedHashMap<>();
    if (conf != null) {
      for (Iterator<Map.Entry<String, JsonNode>> it = conf.fields(); it.hasNext(); ) {
        Map.Entry<String, JsonNode> e = it.next();
        out.put(e.getKey(), e.getValue().asText());
      }
    }
    return out;
  }

  /** {@code offsets/<batch>}'s text with {@code spark.sql.shuffle.partitions} set to {@code m}. */
  static String withPartitions(String text, long batch, int m) throws IOException {
    String[] lines = lines(text, "offsets/" + batch);
    ObjectNode meta = (ObjectNode) JSON.readTree(lines[1]);
    JsonNode conf = meta.get("conf");
    if (!(conf instanceof ObjectNode c)) {
      throw new Refused("offsets/" + batch + " records no SQL settings (its metadata has no "
          + "conf): written by a Spark before 2.4");
    }
    c.put(SHUFFLE_PARTITIONS, Integer.toString(m));
    return lines[0] + "\n" + JSON.writeValueAsString(meta)
        + (lines.length > 2 ? "\n" + lines[2] : "");
  }

  /**
   * Store {@code s}'s checkpoint ids of batch {@code batch}'s versions, one per partition
   * (checkpoint format 2), from {@code commits/<batch>}'s {@code stateUniqueIds} (operator id to,
   * per partition, one id per store of the operator).
   *
   * @param storeIndex the store's place in a partition's ids ({@link StatePlacement#storeIndex})
   * @throws Refused if the commit does not name one for each of {@code count} partitions
   */
  static String[] oldIds(String text, long batch, Store s, int count, int storeIndex)
      throws IOException {
    JsonNode op = JSON.readTree(lines(text, "commits/" + batch)[1]).path("stateUniqueIds")
        .path(Long.toString(s.operatorId()));
    if (!op.isArray() || op.size() != count) {
      throw new Refused("commits/" + batch + " names no checkpoint id for each of the " + count
          + " partitions of operator " + s.operatorId() + " (stateUniqueIds): " + op);
    }
    String[] out = new String[count];
    for (int p = 0; p < count; p++) {
      out[p] = op.get(p).path(storeIndex).asText(null);
      if (out[p] == null) {
        throw new Refused("commits/" + batch + " names no checkpoint id for store "
            + s.storeName() + " of operator " + s.operatorId() + " in partition " + p
            + " (stateUniqueIds): " + op.get(p));
      }
    }
    return out;
  }

  /** Partition {@code k} for key {@code k}: rows arrive already tagged with their partition. */
  static final class ExactPartitioner extends Partitioner {
    private static final long serialVersionUID = 1L;
    private final int count;

    ExactPartitioner(int count) {
      this.count = count;
    }

    @Override
    public int numPartitions() {
      return count;
    }

    @Override
    public int getPartition(Object key) {
      return (Integer) key;
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof ExactPartitioner e && e.count == count;
    }

    @Override
    public int hashCode() {
      return count;
    }
  }

  /** Whether {@code commits/<batch>} records state store checkpoint ids (checkpoint format 2). */
  static boolean hasCheckpointIds(String text, long batch) throws IOException {
    if (text == null) {
      throw new Refused("commits/" + batch + " is missing");
    }
    JsonNode ids = JSON.readTree(lines(text, "commits/" + batch)[1]).get("stateUniqueIds");
    return ids != null && !ids.isNull();
  }

  /**
   * {@code commits/<batch>}'s text for the repartition batch: the same watermark and fields,
   * and under checkpoint format 2 {@code stateUniqueIds} replaced by the rewritten stores' ids
   * (operator id to, per partition, one id per store in {@link StatePlacement#storeIndex}
   * order).
   *
   * @param ids null under checkpoint format 1
   */
  static String withIds(String text, long batch, Map<Long, String[][]> ids)
      throws IOException {
    if (text == null) {
      throw new Refused("commits/" + batch + " is missing");
    }
    String[] lines = lines(text, "commits/" + batch);
    ObjectNode meta = (ObjectNode) JSON.readTree(lines[1]);
    if (ids != null) {
      ObjectNode byOperator = meta.putObject("stateUniqueIds");
      ids.forEach((op, partitions) -> {
        ArrayNode a = byOperator.putArray(Long.toString(op));
        for (String[] partition : partitions) {
          ArrayNode storeIds = a.addArray();
          for (String id : partition) {
            storeIds.add(id);
          }
        }
      });
    }
    return lines[0] + "\n" + JSON.writeValueAsString(meta);
  }
}
