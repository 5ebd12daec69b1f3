// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import io.strata.checkpoint.StrataCheckpointFileManager;
import io.strata.testkit.S3ProxyServer;
import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.StreamingQueryProgress;
import org.apache.spark.sql.streaming.Trigger;

/**
 * One set-up of the checkpoint-file benchmark, in its own driver JVM: the {@link
 * CheckpointDriver} query (file source, one file per batch, count and sum per key, Strata's
 * state store) on S3Proxy through a {@link CountingProxy}, stepped one batch at a time. Counts
 * the requests of Spark's checkpoint files (everything but the state store's own objects) per
 * steady batch and the batch phases that write them. Set-ups: {@code strata} (Strata's
 * checkpoint file manager), {@code s3a-abortable} (Hadoop S3A with Spark's
 * AbortableStreamBasedCheckpointFileManager from spark-hadoop-cloud, Spark's advice for S3),
 * {@code s3a-default} (S3A with Spark's default FileContext manager: write and rename).
 *
 * <p>Arguments: {@code endpoint bucket setup work warmup measured resultFile}. Appends one line
 * to the result file: {@code setup requests/batch kinds walCommit commitOffsets latestOffset
 * triggerExecution} (milliseconds, averages over the measured batches).
 */
public final class CheckpointBenchmark {
  private CheckpointBenchmark() { }

  public static void main(String[] args) throws Exception {
    URI endpoint = URI.create(args[0]);
    String bucket = args[1];
    String setup = args[2];
    Path work = Paths.get(args[3]);
    int warmup = Integer.parseInt(args[4]);
    int measured = Integer.parseInt(args[5]);
    Path result = Paths.get(args[6]);
    try (CountingProxy proxy = new CountingProxy(endpoint)) {
      String ep = proxy.endpoint().toString();
      SparkSession.Builder b = SparkSession.builder().master("local[2]").appName("bench-" + setup);
      Map<String, String> conf = CheckpointDriver.sparkConf(ep, work);
      conf.remove(StrataCheckpointFileManager.SPARK_CONF);
      switch (setup) {
        case "strata" -> conf.put(StrataCheckpointFileManager.SPARK_CONF,
            StrataCheckpointFileManager.class.getName());
        case "s3a-abortable" -> {
          conf.putAll(s3a(ep));
          conf.put(StrataCheckpointFileManager.SPARK_CONF,
              "org.apache.spark.internal.io.cloud.AbortableStreamBasedCheckpointFileManager");
        }
        case "s3a-default" -> conf.putAll(s3a(ep));
        default -> throw new IllegalArgumentException("unknown set-up " + setup);
      }
      conf.forEach(b::config);
      SparkSession spark = b.getOrCreate();
      spark.sparkContext().setLogLevel("WARN");
      String ckpt = "s3a://" + bucket + "/bench-" + setup + "-" + UUID.randomUUID();
      Path in = Files.createDirectories(work.resolve("in"));
      StreamingQuery q = CheckpointDriver.start(spark, ckpt, in, work.resolve("out"),
          Trigger.ProcessingTime(100), setup, -1);
      while (q.isActive() && q.lastProgress() == null) {
        Thread.sleep(20);
      }
      Map<String, Long> kinds = new TreeMap<>();
      long total = 0;
      List<String> example = new ArrayList<>();
      for (int batch = 0; batch < warmup + measured; batch++) {
        int from = proxy.requests().size();
        writeBatch(in, batch);
        q.processAllAvailable();
        if (batch < warmup) {
          continue;
        }
        for (CountingProxy.Request r : proxy.requests().subList(from, proxy.requests().size())) {
          if (CountingProxy.isStateStoreKey(r.key())) {
            continue;
          }
          total++;
          kinds.merge(r.kind(), 1L, Long::sum);
          if (batch == warmup) {
            example.add(r.kind() + " " + r.key().replaceFirst("^bench-[^/]*/", ""));
          }
        }
      }
      long wal = 0;
      long commit = 0;
      long latest = 0;
      long trigger = 0;
      int n = 0;
      for (StreamingQueryProgress p : q.recentProgress()) {
        if (p.numInputRows() > 0 && p.batchId() >= warmup) {
          wal += p.durationMs().getOrDefault("walCommit", 0L);
          commit += p.durationMs().getOrDefault("commitOffsets", 0L);
          latest += p.durationMs().getOrDefault("latestOffset", 0L);
          trigger += p.durationMs().getOrDefault("triggerExecution", 0L);
          n++;
        }
      }
      q.stop();
      spark.stop();
      StringBuilder k = new StringBuilder();
      kinds.forEach((kind, c) -> k.append(kind).append('=')
          .append(String.format(Locale.ROOT, "%.1f", c / (double) measured)).append(' '));
      String line = String.format(Locale.ROOT,
          "%s | %.1f | %s| %d | %d | %d | %d | %d batches (%d with progress) | batch %d: %s%n",
          setup, total / (double) measured, k, wal / Math.max(1, n), commit / Math.max(1, n),
          latest / Math.max(1, n), trigger / Math.max(1, n), measured, n, warmup, example);
      Files.writeString(result, line, StandardCharsets.UTF_8,
          java.nio.file.StandardOpenOption.CREATE, java.nio.file.StandardOpenOption.APPEND);
      System.out.print(line);
    }
    System.exit(0);
  }

  /** Hadoop S3A on the proxy (the settings S3Proxy needs, see the S3Proxy notes). */
  private static Map<String, String> s3a(String endpoint) {
    Map<String, String> c = new TreeMap<>();
    c.put("spark.hadoop.fs.s3a.endpoint", endpoint);
    c.put("spark.hadoop.fs.s3a.endpoint.region", "us-east-1");
    c.put("spark.hadoop.fs.s3a.path.style.access", "true");
    c.put("spark.hadoop.fs.s3a.connection.ssl.enabled", "false");
    c.put("spark.hadoop.fs.s3a.access.key", S3ProxyServer.ACCESS_KEY);
    c.put("spark.hadoop.fs.s3a.secret.key", S3ProxyServer.SECRET_KEY);
    c.put("spark.hadoop.fs.s3a.aws.credentials.provider",
        "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider");
    c.put("spark.hadoop.fs.s3a.change.detection.version.required", "false");
    return c;
  }

  private static void writeBatch(Path in, int b) throws IOException {
    StringBuilder sb = new StringBuilder();
    for (int j = 0; j < 30; j++) {
      sb.append(String.format("{\"key\":\"k%02d\",\"value\":%d}%n", (b * 7 + j * 5) % 12,
          b * 100 + j));
    }
    Path tmp = in.resolve(String.format(".part-%03d.tmp", b));
    Files.writeString(tmp, sb.toString(), StandardCharsets.UTF_8);
    Files.setLastModifiedTime(tmp, FileTime.fromMillis(1_700_000_000_000L + b * 1000L));
    Files.move(tmp, in.resolve(String.format("part-%03d.json", b)));
  }
}
