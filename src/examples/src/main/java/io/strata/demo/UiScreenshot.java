// SPDX-License-Identifier: Apache-2.0
package io.strata.demo;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

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
    Map<String, String> o = ScreenshotQuery.options(args,
        mapOf("--out", null, "--seconds", "45", "--chromium", "chromium"));
    Path out = Paths.get(o.get("--out")).toAbsolutePath();
    try (ScreenshotQuery run = ScreenshotQuery.start("strata-ui", Map.of(
        "spark.sql.streaming.ui.enabledCustomMetricList",
        "strataS3Requests,strataUploadMs,strataBytesUploaded"))) {
      Thread.sleep(TimeUnit.SECONDS.toMillis(Integer.parseInt(o.get("--seconds"))));
      run.requireRunning();
      String url = run.spark.sparkContext().uiWebUrl().get() + "/StreamingQuery/statistics/?id="
          + run.query.runId();
      System.out.println("Streaming query page: " + url);
      screenshot(o.get("--chromium"), url, out);
    }
    System.out.println("Wrote " + out);
  }

  /** An ordered map of {@code k1, v1, k2, v2, ...}; values may be null. */
  static Map<String, String> mapOf(String... kv) {
    Map<String, String> m = new java.util.LinkedHashMap<>();
    for (int i = 0; i < kv.length; i += 2) {
      m.put(kv[i], kv[i + 1]);
    }
    return m;
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
