// SPDX-License-Identifier: Apache-2.0
package io.strata.demo;

import static org.apache.spark.sql.functions.col;

import io.strata.testkit.S3ProxyServer;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.Trigger;

/**
 * The query both screenshots show ({@link UiScreenshot}, {@link PrometheusScreenshot}): a count
 * per key over Spark's rate source (20,000 rows a second, 50,000 keys, 4 partitions, one batch a
 * second), with Strata's provider and checkpoint file manager on a local S3Proxy, in a {@code
 * local[2]} session with Spark's UI on a free loopback port. Closing it stops the query, the
 * session and the server.
 */
final class ScreenshotQuery implements AutoCloseable {
  final SparkSession spark;
  final StreamingQuery query;
  private final S3ProxyServer s3;

  private ScreenshotQuery(S3ProxyServer s3, SparkSession spark, StreamingQuery query) {
    this.s3 = s3;
    this.spark = spark;
    this.query = query;
  }

  /**
   * Starts the query.
   *
   * @param name the application's and the bucket's name
   * @param extra settings of the session beyond the common ones
   * @return the running query
   * @throws IOException if the server cannot start
   */
  static ScreenshotQuery start(String name, Map<String, String> extra) throws IOException {
    Path work = Files.createTempDirectory(name + "-");
    S3ProxyServer s3 = S3ProxyServer.start(work.resolve("s3"), Map.of());
    try {
      s3.createBucket(name);
      String strata = CheckpointTarget.STRATA;
      SparkSession.Builder b = SparkSession.builder()
          .master("local[2]")
          .appName(name)
          .config("spark.ui.enabled", "true")
          .config("spark.ui.port", "0")
          .config("spark.driver.bindAddress", "127.0.0.1")
          .config("spark.driver.host", "127.0.0.1")
          .config("spark.local.dir", work.resolve("spark-local").toString())
          .config("spark.sql.shuffle.partitions", "4")
          .config("spark.sql.streaming.stateStore.providerClass",
              "io.strata.spark.StrataStateStoreProvider")
          .config(CheckpointTarget.CHECKPOINT_FILE_MANAGER,
              CheckpointTarget.STRATA_CHECKPOINT_FILE_MANAGER)
          .config(strata + "s3.endpoint", s3.endpoint().toString())
          .config(strata + "s3.pathStyleAccess", "true")
          .config(strata + "s3.accessKeyId", S3ProxyServer.ACCESS_KEY)
          .config(strata + "s3.secretAccessKey", S3ProxyServer.SECRET_KEY)
          .config(strata + "localDir", work.resolve("strata-local").toString());
      extra.forEach(b::config);
      SparkSession spark = b.getOrCreate();
      spark.sparkContext().setLogLevel("WARN");
      StreamingQuery q = spark.readStream().format("rate").option("rowsPerSecond", 20000)
          .load()
          .groupBy(col("value").mod(50000).as("key")).count()
          .writeStream().queryName("counts_per_key").outputMode("update").format("noop")
          .option("checkpointLocation", "s3a://" + name + "/counts")
          .trigger(Trigger.ProcessingTime("1 second"))
          .start();
      return new ScreenshotQuery(s3, spark, q);
    } catch (Exception e) {
      s3.close();
      if (e instanceof RuntimeException r) {
        throw r;
      }
      throw new IOException("Cannot start the query " + name, e);
    }
  }

  /** Fails with the query's exception if it stopped with one. */
  void requireRunning() throws Exception {
    if (query.exception().isDefined()) {
      throw query.exception().get();
    }
  }

  @Override
  public void close() {
    // Stopping interrupts the batch in flight, whose aborted tasks Spark logs at ERROR.
    spark.sparkContext().setLogLevel("OFF");
    try {
      query.stop();
    } catch (Exception e) {
      // stopping anyway
    } finally {
      spark.stop();
      s3.close();
    }
  }
}
