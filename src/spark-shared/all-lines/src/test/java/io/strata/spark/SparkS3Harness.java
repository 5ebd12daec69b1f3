// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import io.strata.checkpoint.StrataCheckpointFileManager;
import io.strata.testkit.S3ProxyServer;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.Map;
import java.util.UUID;
import java.util.stream.Stream;
import org.apache.spark.sql.SparkSession;

/**
 * A real S3-compatible server (S3Proxy in a child JVM on loopback) plus a local-mode Spark
 * session whose Strata settings point at it: the state through Strata's provider, Spark's own
 * checkpoint files through Strata's checkpoint file manager, and no Hadoop FileSystem for S3
 * (S3A is configured to a class that does not exist). One per test class.
 */
final class SparkS3Harness implements AutoCloseable {
  static final String PROVIDER = StrataStateStoreProvider.class.getName();
  static final String HDFS_PROVIDER =
      "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider";
  static final String ROCKSDB_PROVIDER =
      "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider";
  static final String BUCKET = "strata-it";
  /** A class name that does not exist, set as Hadoop's S3 FileSystem so none is ever used. */
  static final String NO_HADOOP_S3 = "strata.test.NoHadoopFileSystemForS3InThisTest";

  final Path work;
  final Path localDir;
  /** This JVM's S3 server, shared by every harness in it (see {@link #sharedServer()}). */
  final S3ProxyServer s3;
  final SparkSession spark;

  /**
   * The S3 server of every harness in this JVM (a failsafe fork runs many test classes one after
   * another): started by the first harness with {@link #BUCKET} created, stopped when the JVM
   * exits, so each test class pays for its Spark session but not for a server start. Harnesses
   * stay apart by their checkpoints' prefixes ({@link #s3Checkpoint} names each with a UUID).
   */
  private static S3ProxyServer shared;

  static synchronized S3ProxyServer sharedServer() throws IOException {
    if (shared == null) {
      Path dir = Files.createTempDirectory("strata-it-s3-");
      S3ProxyServer server = S3ProxyServer.start(dir, Map.of());
      server.createBucket(BUCKET);
      Runtime.getRuntime().addShutdownHook(new Thread(() -> {
        try {
          server.close();
          deleteRecursively(dir);
        } catch (IOException | RuntimeException bestEffort) {
          // the JVM is exiting; the temporary directory is the OS's to clear
        }
      }, "strata-it-s3-stop"));
      shared = server;
    }
    return shared;
  }

  SparkS3Harness(int shufflePartitions) throws IOException {
    this(shufflePartitions, "local[2]");
  }

  /**
   * As {@link #SparkS3Harness(int)} with another Spark master, for example {@code local[2, 4]}
   * (two threads, a failed task tried up to four times; plain {@code local[2]} never retries).
   */
  SparkS3Harness(int shufflePartitions, String master) throws IOException {
    ContextStopCause.install();
    work = Files.createTempDirectory("strata-it-");
    localDir = work.resolve("strata-local");
    s3 = sharedServer();
    String endpoint = s3.endpoint().toString();
    spark = SparkSession.builder()
        .master(master)
        .appName("strata-it")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.local.dir", work.resolve("spark-local").toString())
        .config("spark.sql.shuffle.partitions", Integer.toString(shufflePartitions))
        .config("spark.sql.streaming.stateStore.maintenanceInterval", "2s")
        // Spark's RocksDB provider as a baseline: a changelog per commit, not a snapshot (cheaper)
        .config("spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled", "true")
        .config("spark.sql.streaming.stateStore.strata.s3.endpoint", endpoint)
        .config("spark.sql.streaming.stateStore.strata.s3.region", "us-east-1")
        .config("spark.sql.streaming.stateStore.strata.s3.pathStyleAccess", "true")
        .config("spark.sql.streaming.stateStore.strata.s3.accessKeyId", S3ProxyServer.ACCESS_KEY)
        .config("spark.sql.streaming.stateStore.strata.s3.secretAccessKey",
            S3ProxyServer.SECRET_KEY)
        .config("spark.sql.streaming.stateStore.strata.localDir", localDir.toString())
        .config("spark.sql.streaming.stateStore.strata.snapshotInterval", "3")
        // Spark's own checkpoint files (offsets, commits, metadata, schemas) through Strata too.
        .config(StrataCheckpointFileManager.SPARK_CONF, StrataCheckpointFileManager.class.getName())
        // No Hadoop FileSystem for S3 at all: any use of one fails at once, naming this guard.
        .config("spark.hadoop.fs.s3a.impl", NO_HADOOP_S3)
        .config("spark.hadoop.fs.s3.impl", NO_HADOOP_S3)
        .config("spark.hadoop.fs.AbstractFileSystem.s3a.impl", NO_HADOOP_S3)
        .config("spark.hadoop.fs.AbstractFileSystem.s3.impl", NO_HADOOP_S3)
        .getOrCreate();
    spark.sparkContext().setLogLevel("WARN");
  }

  /**
   * Runs {@code body} with S3A configured for this session's S3 server, for the few Spark
   * features that need a Hadoop {@code FileSystem} on the checkpoint (Spark's state data source
   * qualifies the checkpoint path with one), then removes it again. The file system is not
   * cached (Hadoop's {@code fs.s3a.impl.disable.cache}), so no later query can reach S3 through
   * it by accident.
   */
  <T> T withS3A(java.util.function.Supplier<T> body) {
    Map<String, String> conf = new java.util.LinkedHashMap<>();
    conf.put("fs.s3a.impl", "org.apache.hadoop.fs.s3a.S3AFileSystem");
    conf.put("fs.AbstractFileSystem.s3a.impl", "org.apache.hadoop.fs.s3a.S3A");
    conf.put("fs.s3a.impl.disable.cache", "true");
    conf.put("fs.s3a.endpoint", s3.endpoint().toString());
    conf.put("fs.s3a.endpoint.region", "us-east-1");
    conf.put("fs.s3a.path.style.access", "true");
    conf.put("fs.s3a.connection.ssl.enabled", "false");
    conf.put("fs.s3a.access.key", S3ProxyServer.ACCESS_KEY);
    conf.put("fs.s3a.secret.key", S3ProxyServer.SECRET_KEY);
    conf.put("fs.s3a.aws.credentials.provider",
        "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider");
    conf.put("fs.s3a.change.detection.version.required", "false");
    conf.forEach((k, v) -> spark.conf().set(k, v));
    try {
      return body.get();
    } finally {
      conf.keySet().forEach(k -> spark.conf().unset(k));
    }
  }

  /**
   * Runs {@code body} with Strata's read-only {@code StrataS3FileSystem} as Hadoop's {@code s3a}
   * file system (and no S3A: hadoop-aws is never used), as a user without hadoop-aws reads a
   * Strata checkpoint with Spark's state data source (docs/operations.md).
   */
  <T> T withStrataFileSystem(java.util.function.Supplier<T> body) {
    Map<String, String> conf = new java.util.LinkedHashMap<>();
    conf.put("fs.s3a.impl", "io.strata.checkpoint.StrataS3FileSystem");
    conf.put("fs.s3a.impl.disable.cache", "true");
    conf.forEach((k, v) -> spark.conf().set(k, v));
    try {
      return body.get();
    } finally {
      conf.keySet().forEach(k -> spark.conf().unset(k));
    }
  }

  /** A fresh S3 checkpoint location for one query. */
  String s3Checkpoint(String name) {
    return "s3a://" + BUCKET + "/" + name + "-" + UUID.randomUUID();
  }

  /** A fresh local checkpoint location (for the baseline provider). */
  String fileCheckpoint(String name) throws IOException {
    return Files.createDirectories(work.resolve("ckpt").resolve(name + "-" + UUID.randomUUID()))
        .toUri().toString();
  }

  /**
   * Simulates losing every executor disk: deletes Strata's local directories. The next query run
   * gets new provider instances (Spark keys them by run id), which must restore from S3 alone.
   * (Spark's {@code StateStore.stop()} would also unload the old ones, but in 4.1 it can wait
   * 300 s on a running maintenance task, so the old instances are left to Spark's maintenance.)
   */
  void wipeLocalState() throws IOException {
    if (!Files.exists(localDir)) {
      return;
    }
    // Move it away atomically (old instances' maintenance may still write into it), then delete.
    Path gone = work.resolve("wiped-" + UUID.randomUUID());
    Files.move(localDir, gone);
    try {
      deleteRecursively(gone);
    } catch (IOException stillBeingWritten) {
      // best effort: nothing under the old path is reachable by the new run
    }
  }

  /**
   * Runs the {@code strata} tool jar (system property {@code strata.tools.jar}) in its own JVM
   * with {@code args}, then {@code --conf-file} naming this harness's S3 server and keys, and
   * asserts its exit code (within 120 s).
   *
   * @return what it printed, stdout and stderr together
   */
  String tool(int exit, String... args) throws IOException, InterruptedException {
    Path conf = work.resolve("strata-tool.conf");
    String p = "spark.sql.streaming.stateStore.strata.";
    Files.writeString(conf, String.join("\n", p + "s3.endpoint " + s3.endpoint(),
        p + "s3.region us-east-1", p + "s3.pathStyleAccess true",
        p + "s3.accessKeyId " + S3ProxyServer.ACCESS_KEY,
        p + "s3.secretAccessKey " + S3ProxyServer.SECRET_KEY, ""));
    Path out = Files.createTempFile(work, args[0], ".txt");
    java.util.List<String> cmd = new java.util.ArrayList<>(java.util.List.of(
        Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-Xmx256m",
        "-XX:TieredStopAtLevel=1", "-jar", System.getProperty("strata.tools.jar")));
    cmd.addAll(java.util.List.of(args));
    cmd.addAll(java.util.List.of("--conf-file", conf.toString()));
    Process proc = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(out.toFile())
        .start();
    if (!proc.waitFor(120, java.util.concurrent.TimeUnit.SECONDS)) {
      proc.destroyForcibly();
      throw new AssertionError("strata " + String.join(" ", args) + " did not end in 120 s: "
          + Files.readString(out));
    }
    String printed = Files.readString(out);
    if (proc.exitValue() != exit) {
      throw new AssertionError("strata " + String.join(" ", args) + " exited with "
          + proc.exitValue() + ", expected " + exit + ": " + printed);
    }
    return printed;
  }

  static void deleteRecursively(Path p) throws IOException {
    if (!Files.exists(p)) {
      return;
    }
    try (Stream<Path> s = Files.walk(p)) {
      for (Path x : s.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(x);
      }
    }
  }

  @Override
  public void close() throws IOException {
    try {
      SparkApi.unloadStateStores();
      spark.stop();
    } finally {
      try {
        deleteRecursively(work);
      } catch (IOException stillBeingWritten) {
        // best effort
      }
    }
  }
}
