// SPDX-License-Identifier: Apache-2.0
package io.strata.demo;

import static org.apache.spark.sql.functions.col;

import io.strata.testkit.S3ProxyServer;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.Trigger;

/**
 * Takes the screenshot of Spark's Structured Streaming tab that README.md shows: a
 * stateful query (a count per key over Spark's rate source, Strata's provider and checkpoint
 * file manager on a local S3Proxy) runs with {@code spark.sql.streaming.ui.enabledCustomMetricList}
 * naming three of Strata's metrics; after {@code --seconds} of batches, headless Chromium (the
 * Debian package {@code chromium}) renders the query's statistics page to a PNG.
 *
 * <p>Run it with {@code mvn -B -q -Pui-screenshot -DskipTests verify} from the project root
 * (options in the property {@code ui.args}: {@code --out PNG}, {@code --seconds N}, {@code
 * --chromium PATH}).
 */
public final class UiScreenshot {
  private UiScreenshot() { }

  /**
   * Entry point.
   *
   * @param args {@code --out PNG} (required), {@code --seconds N} (default 45), {@code
   *     --chromium PATH} (default {@code chromium})
   * @throws Exception if the query fails or Chromium exits non-zero or writes no file
   */
  public static void main(String[] args) throws Exception {
    Path out = null;
    int seconds = 45;
    String chromium = "chromium";
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--out" -> out = Paths.get(args[++i]).toAbsolutePath();
        case "--seconds" -> seconds = Integer.parseInt(args[++i]);
        case "--chromium" -> chromium = args[++i];
        default -> throw new IllegalArgumentException("Unknown option " + args[i]
            + "; expected --out PNG, --seconds N, --chromium PATH");
      }
    }
    if (out == null) {
      throw new IllegalArgumentException("--out PNG is required");
    }
    Path work = Files.createTempDirectory("strata-ui-");
    try (S3ProxyServer s3 = S3ProxyServer.start(work.resolve("s3"), Map.of())) {
      s3.createBucket("strata-ui");
      String strata = CheckpointTarget.STRATA;
      SparkSession spark = SparkSession.builder()
          .master("local[2]")
          .appName("strata-streaming-ui")
          .config("spark.ui.enabled", "true")
          .config("spark.ui.port", "0")
          .config("spark.driver.bindAddress", "127.0.0.1")
          .config("spark.driver.host", "127.0.0.1")
          .config("spark.local.dir", work.resolve("spark-local").toString())
          .config("spark.sql.shuffle.partitions", "4")
          .config("spark.sql.streaming.stateStore.providerClass",
              "io.strata.spark.StrataStateStoreProvider")
          .config("spark.sql.streaming.ui.enabledCustomMetricList",
              "strataS3Requests,strataUploadMs,strataBytesUploaded")
          .config(CheckpointTarget.CHECKPOINT_FILE_MANAGER,
              CheckpointTarget.STRATA_CHECKPOINT_FILE_MANAGER)
          .config(strata + "s3.endpoint", s3.endpoint().toString())
          .config(strata + "s3.pathStyleAccess", "true")
          .config(strata + "s3.accessKeyId", S3ProxyServer.ACCESS_KEY)
          .config(strata + "s3.secretAccessKey", S3ProxyServer.SECRET_KEY)
          .config(strata + "localDir", work.resolve("strata-local").toString())
          .getOrCreate();
      spark.sparkContext().setLogLevel("WARN");
      try {
        StreamingQuery q = spark.readStream().format("rate").option("rowsPerSecond", 20000)
            .load()
            .groupBy(col("value").mod(50000).as("key")).count()
            .writeStream().queryName("counts_per_key").outputMode("update").format("noop")
            .option("checkpointLocation", "s3a://strata-ui/counts")
            .trigger(Trigger.ProcessingTime("1 second"))
            .start();
        Thread.sleep(TimeUnit.SECONDS.toMillis(seconds));
        if (q.exception().isDefined()) {
          throw q.exception().get();
        }
        String url = spark.sparkContext().uiWebUrl().get() + "/StreamingQuery/statistics/?id="
            + q.runId();
        System.out.println("Streaming query page: " + url);
        screenshot(chromium, url, out);
        // Stopping interrupts the batch in flight, whose aborted tasks Spark logs at ERROR.
        spark.sparkContext().setLogLevel("OFF");
        q.stop();
      } finally {
        spark.stop();
      }
    }
    System.out.println("Wrote " + out);
  }

  /** Renders {@code url} to {@code png} with headless Chromium, letting its scripts run. */
  static void screenshot(String chromium, String url, Path png)
      throws IOException, InterruptedException {
    screenshot(chromium, url, png, "1280,3400");
  }

  /**
   * Renders {@code url} to {@code png} with headless Chromium in a window of {@code size}
   * ({@code width,height} in pixels), letting its scripts run for 15 s of virtual time.
   */
  static void screenshot(String chromium, String url, Path png, String size)
      throws IOException, InterruptedException {
    Files.createDirectories(png.getParent());
    Files.deleteIfExists(png);
    List<String> cmd = new ArrayList<>(List.of(chromium, "--headless", "--no-sandbox",
        "--disable-gpu", "--hide-scrollbars", "--window-size=" + size,
        "--virtual-time-budget=15000", "--screenshot=" + png, url));
    Process p = new ProcessBuilder(cmd).inheritIO().start();
    if (!p.waitFor(120, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      throw new IOException("Chromium did not finish in 120 s: " + cmd);
    }
    if (p.exitValue() != 0 || !Files.isRegularFile(png)) {
      throw new IOException("Chromium exited with " + p.exitValue() + " and wrote "
          + (Files.isRegularFile(png) ? png : "nothing") + ": " + cmd
          + " (install it with: apt-get install chromium)");
    }
  }
}
