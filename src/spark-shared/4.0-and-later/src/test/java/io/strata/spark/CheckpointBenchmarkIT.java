// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.testkit.ChildJvm;
import io.strata.testkit.OnlyOnSparkLines;
import io.strata.testkit.S3ProxyServer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

/**
 * Driver-side checkpoint requests and time per steady batch, Strata's checkpoint file manager
 * next to Spark's set-ups on Hadoop S3A, in one run against one S3Proxy with S3-like latency
 * (PUT 80 ms, GET 40, HEAD 20, LIST 40, DELETE 20, COPY 80 before each call). Each set-up runs
 * in its own driver JVM ({@link CheckpointBenchmark}). Off by default (minutes); run with
 *
 * <pre>
 * mvn -B -o verify -Dtest=NoSuchTest -Dsurefire.failIfNoSpecifiedTests=false \
 *     -Dit.test=CheckpointBenchmarkIT -Dstrata.bench=true
 * </pre>
 *
 * <p>The S3A set-ups need Spark's spark-hadoop-cloud jar for the abortable-stream manager; it is
 * taken from the local Maven repository ({@code strata.bench.hadoopCloudJar} overrides; 4.1.3 is
 * not published, 4.1.2 is binary compatible for this class).
 */
@OnlyOnSparkLines(value = {"4.1"},
    reason = "a benchmark smoke test")
@EnabledIfSystemProperty(named = "strata.bench", matches = "true")
class CheckpointBenchmarkIT {
  private static final int WARMUP = 3;
  private static final int MEASURED = 10;

  @Test
  void driverCheckpointRequestsAndTimePerSteadyBatch() throws Exception {
    Path work = Files.createTempDirectory("strata-ckpt-bench");
    Path logs = Files.createDirectories(Path.of("target", "checkpoint-bench"));
    Path result = logs.resolve("result.txt");
    Files.deleteIfExists(result);
    String hadoopCloud = System.getProperty("strata.bench.hadoopCloudJar",
        Paths.get(System.getProperty("user.home"), ".m2", "repository", "org", "apache", "spark",
            "spark-hadoop-cloud_2.13", "4.1.2", "spark-hadoop-cloud_2.13-4.1.2.jar").toString());
    assertTrue(Files.isRegularFile(Path.of(hadoopCloud)), "spark-hadoop-cloud jar " + hadoopCloud);
    Map<String, String> latency = new LinkedHashMap<>();
    String l = "s3proxy.latency-blobstore.";
    latency.put(l + "put.latency", "80");
    latency.put(l + "get.latency", "40");
    latency.put(l + "metadata.latency", "20");
    latency.put(l + "list.latency", "40");
    latency.put(l + "remove.latency", "20");
    latency.put(l + "copy.latency", "80");
    try (S3ProxyServer s3 = S3ProxyServer.start(work.resolve("s3"), latency)) {
      s3.createBucket("bench");
      for (String setup : List.of("strata", "s3a-abortable", "s3a-default")) {
        try (ChildJvm child = ChildJvm.start(ChildJvm.fullClasspath(hadoopCloud),
            CheckpointBenchmark.class, logs.resolve(setup + ".log"),
            s3.endpoint().toString(), "bench", setup, work.resolve(setup).toString(),
            Integer.toString(WARMUP), Integer.toString(MEASURED), result.toString())) {
          assertEquals(0, child.await(1800), setup + ": see " + child.log);
        }
      }
    }
    System.out.println("set-up | requests/batch | by kind | walCommit ms | commitOffsets ms"
        + " | latestOffset ms | triggerExecution ms | ...");
    Files.readAllLines(result).forEach(System.out::println);
  }
}
