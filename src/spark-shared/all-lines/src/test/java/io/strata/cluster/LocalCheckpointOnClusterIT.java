// SPDX-License-Identifier: Apache-2.0
package io.strata.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.testkit.OnlyOnSparkLines;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.StreamingQueryException;
import org.apache.spark.sql.streaming.Trigger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A {@code file:} checkpoint with a cluster master, on Spark's {@code local-cluster[2,1,1024]}:
 * a master and two workers inside this JVM, each worker launching a real executor JVM (from an
 * assembled {@link SparkHome}; our code reaches them as the application jar, the runtime jar,
 * as in {@link StandaloneClusterIT}). The executors are separate JVMs with their own local
 * directories, so this is a cluster for the rule of {@code LocalLocationRule}, and the check runs
 * where it matters: in the provider's {@code init} on the executors, with the master the
 * executors received from the driver.
 *
 * <ol>
 *   <li>{@code dropDuplicates("id").groupBy("key").count()} on a {@code file:} checkpoint
 *       fails at its first batch with Strata's error, naming the location, the master and the
 *       setting to change.
 *   <li>The same query with {@code fileCheckpoint.shared=true} (true here: every executor runs
 *       on this host, so the directory is the same for all) runs to the end with the right
 *       counts.
 * </ol>
 *
 * <p>Why local-cluster and not a standalone cluster: its master and workers are threads of this
 * JVM, so only the two executor JVMs start (tens of seconds). Its workers find {@code
 * SPARK_HOME} through the system properties {@code spark.testing} and {@code spark.test.home}
 * (Spark's {@code Worker} reads them instead of the environment variable when testing), which
 * this test sets for the life of its session only.
 */
@OnlyOnSparkLines(value = {"4.1"},
    reason = "two executor JVMs on local-cluster: about 2 minutes a line; the rule it checks is "
        + "version-neutral and LocalLocationRuleTest checks it on every line")
class LocalCheckpointOnClusterIT {
  private static final String MASTER = "local-cluster[2,1,1024]";
  private static final String SHARED =
      "spark.sql.streaming.stateStore.strata.fileCheckpoint.shared";
  private static final Path OUT = Path.of("target", "local-cluster-it");
  private static final int FILES = 3;

  @Test
  @Timeout(value = 8, unit = TimeUnit.MINUTES)
  void fileCheckpointFailsOnAClusterUnlessDeclaredShared() throws Exception {
    SparkHome home = SparkHome.assemble(OUT.resolve("spark-home").toAbsolutePath());
    // Spark's launcher needs the Scala version: SPARK_SCALA_VERSION (an environment variable,
    // which this JVM cannot set for its own workers) or this build directory.
    Files.createDirectories(home.dir().resolve("launcher/target/scala-" + SparkHome.SCALA_VERSION));
    Path scratch = Files.createTempDirectory("strata-local-cluster-it-");
    StreamInput input = new StreamInput(scratch.resolve("input"));
    input.writeFiles(FILES);

    String testing = System.getProperty("spark.testing");
    String testHome = System.getProperty("spark.test.home");
    System.setProperty("spark.testing", "true");
    System.setProperty("spark.test.home", home.dir().toString());
    SparkSession spark = SparkSession.builder()
        .master(MASTER)
        .appName("LocalCheckpointOnClusterIT")
        .config("spark.jars", appJar().toString())
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.ui.enabled", "false")
        .config("spark.task.maxFailures", "1") // one attempt: the error is not transient
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.streaming.stateStore.providerClass",
            "io.strata.spark.StrataStateStoreProvider")
        .config("spark.sql.streaming.checkpointFileManagerClass",
            "io.strata.checkpoint.StrataCheckpointFileManager")
        .getOrCreate();
    try {
      String refused = scratch.resolve("ckpt-refused").toUri().toString();
      StreamingQueryException e = assertThrows(StreamingQueryException.class,
          () -> run(spark, input, refused));
      String text = causes(e);
      for (String part : new String[] {"STATE_STORE_UNSUPPORTED_OPERATION",
          "Cannot use the local state location file:" + scratch.resolve("ckpt-refused"),
          "with master " + MASTER, SHARED + "=true", "(NFS)"}) {
        assertTrue(text.contains(part), "'" + part + "' in: " + text);
      }
      assertTrue(text.contains(" executor "), "the check ran on an executor: " + text);

      spark.conf().set(SHARED, "true");
      String shared = scratch.resolve("ckpt-shared").toUri().toString();
      assertEquals(input.expectedCounts(), run(spark, input, shared));
    } finally {
      spark.stop();
      restore("spark.testing", testing);
      restore("spark.test.home", testHome);
      SparkHome.deleteRecursively(scratch);
    }
  }

  /**
   * Runs {@code dropDuplicates("id").groupBy("key").count()} over every input file (two
   * stateful operators, two partitions each); the final counts by key.
   */
  private static Map<String, Long> run(SparkSession spark, StreamInput input, String checkpoint)
      throws Exception {
    String table = "counts_" + Math.abs(checkpoint.hashCode());
    StreamingQuery q = spark.readStream().schema(StreamInput.SCHEMA)
        .option("maxFilesPerTrigger", 1)
        .json(input.dir().toString())
        .dropDuplicates("id")
        .groupBy("key").count()
        .writeStream()
        .outputMode(OutputMode.Complete())
        .format("memory").queryName(table)
        .option("checkpointLocation", checkpoint)
        .trigger(Trigger.AvailableNow())
        .start();
    try {
      q.awaitTermination(TimeUnit.MINUTES.toMillis(4));
      if (q.exception().isDefined()) {
        throw q.exception().get();
      }
    } finally {
      q.stop();
    }
    Map<String, Long> counts = new TreeMap<>();
    for (Row r : spark.table(table).collectAsList()) {
      counts.put(r.getString(0), r.getLong(1));
    }
    return counts;
  }

  /** The messages of {@code t} and its causes, one a line. */
  private static String causes(Throwable t) {
    StringBuilder sb = new StringBuilder();
    for (Throwable c = t; c != null; c = c.getCause()) {
      sb.append(c).append('\n');
    }
    return sb.toString();
  }

  private static void restore(String key, String value) {
    if (value == null) {
      System.clearProperty(key);
    } else {
      System.setProperty(key, value);
    }
  }

  private static Path appJar() {
    String p = System.getProperty("strata.cluster.appJar");
    assertTrue(p != null && !p.isBlank(), "system property strata.cluster.appJar is set (the"
        + " pom's failsafe configuration sets it; run through 'mvn verify')");
    Path jar = Path.of(p).toAbsolutePath();
    assertTrue(Files.isRegularFile(jar), "the application jar exists: " + jar);
    return jar;
  }
}
