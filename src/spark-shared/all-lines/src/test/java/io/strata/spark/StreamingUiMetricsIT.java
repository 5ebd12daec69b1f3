// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.checkpoint.StrataCheckpointFileManager;
import io.strata.testkit.S3ProxyServer;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.Trigger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Issue 17: Strata's custom metrics are charted in Spark's own Structured Streaming UI. A
 * session with the UI on and {@code spark.sql.streaming.ui.enabledCustomMetricList} naming two
 * of Strata's metrics runs a stateful query on S3Proxy; the test fetches the query's statistics
 * page from the running UI ({@code /StreamingQuery/statistics/?id=<runId>}) and finds the charts
 * Spark draws for those metrics ("Aggregated Custom Metric strataS3Requests") with Strata's
 * descriptions as their tooltips. README.md ("Metrics", "In Spark's UI") shows the page and
 * the command that takes its screenshot.
 */
class StreamingUiMetricsIT {
  private static final String STRATA = "spark.sql.streaming.stateStore.strata.";
  private static final String BUCKET = "strata-ui";
  private static Path work;
  private static S3ProxyServer s3;
  private static SparkSession spark;

  @BeforeAll
  static void start() throws IOException {
    work = Files.createTempDirectory("strata-ui-it-");
    s3 = S3ProxyServer.start(work.resolve("s3"), Map.of());
    s3.createBucket(BUCKET);
    spark = SparkSession.builder()
        .master("local[2]")
        .appName("strata-ui-it")
        .config("spark.ui.enabled", "true")
        .config("spark.ui.port", "0")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.local.dir", work.resolve("spark-local").toString())
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.streaming.stateStore.providerClass", SparkS3Harness.PROVIDER)
        // A static SQL conf: set when the session is built.
        .config("spark.sql.streaming.ui.enabledCustomMetricList",
            "strataS3Requests,strataUploadMs")
        .config(StrataCheckpointFileManager.SPARK_CONF, StrataCheckpointFileManager.class.getName())
        .config(STRATA + "s3.endpoint", s3.endpoint().toString())
        .config(STRATA + "s3.pathStyleAccess", "true")
        .config(STRATA + "s3.accessKeyId", S3ProxyServer.ACCESS_KEY)
        .config(STRATA + "s3.secretAccessKey", S3ProxyServer.SECRET_KEY)
        .config(STRATA + "localDir", work.resolve("strata-local").toString())
        .getOrCreate();
    spark.sparkContext().setLogLevel("WARN");
  }

  @AfterAll
  static void stop() throws IOException {
    if (spark != null) {
      spark.stop();
    }
    if (s3 != null) {
      s3.close();
    }
    SparkS3Harness.deleteRecursively(work);
  }

  @Test
  @Timeout(180)
  void theStreamingTabChartsStratasMetricsOfARunningQuery() throws Exception {
    Path in = Files.createDirectories(work.resolve("in"));
    for (int b = 0; b < 3; b++) {
      StringBuilder sb = new StringBuilder();
      for (int j = 0; j < 20; j++) {
        sb.append("{\"key\":\"k").append((j * (b + 1)) % 13).append("\"}\n");
      }
      BatchFiles.write(in, b, sb);
    }
    StreamingQuery q = CrashDriver.start(spark, "s3a://" + BUCKET + "/ui-query", in,
        work.resolve("out"), 0, Trigger.ProcessingTime("200 milliseconds"));
    try {
      q.processAllAvailable();
      String ui = spark.sparkContext().uiWebUrl().get();
      HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
      HttpResponse<String> page = http.send(HttpRequest.newBuilder(
          URI.create(ui + "/StreamingQuery/statistics/?id=" + q.runId())).build(),
          HttpResponse.BodyHandlers.ofString());
      assertEquals(200, page.statusCode(), page.body());
      String html = page.body();
      assertTrue(html.contains("Aggregated Custom Metric strataS3Requests"),
          "the chart of strataS3Requests: " + excerpt(html));
      assertTrue(html.contains("Aggregated Custom Metric strataUploadMs"),
          "the chart of strataUploadMs: " + excerpt(html));
      assertTrue(html.contains("Strata: S3 requests sent during the batch"),
          "Strata's description as the chart's tooltip");
      HttpResponse<String> list = http.send(HttpRequest.newBuilder(
          URI.create(ui + "/StreamingQuery/")).build(), HttpResponse.BodyHandlers.ofString());
      assertTrue(list.body().contains(q.runId().toString()), "the query is listed");
    } finally {
      q.stop();
    }
  }

  private static String excerpt(String html) {
    int i = html.indexOf("Aggregated");
    return i < 0 ? "(no aggregated metrics; " + html.length() + " chars)"
        : html.substring(i, Math.min(html.length(), i + 400));
  }
}
