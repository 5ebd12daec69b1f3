// SPDX-License-Identifier: Apache-2.0
package io.strata.demo;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

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
@Command(name = "UiScreenshot", description = "Screenshots Spark's Structured Streaming tab.")
public final class UiScreenshot implements Callable<Integer> {
  @Option(names = "--out", paramLabel = "PNG", required = true, description = "Where to write.")
  Path out;

  @Option(names = "--seconds", paramLabel = "N", description = "Batches to run first, s.")
  int seconds = 45;

  @Option(names = "--chromium", paramLabel = "PATH", description = "Chromium's binary.")
  String chromium = "chromium";

  private UiScreenshot() { }

  /**
   * Entry point.
   *
   * @param args {@code --out PNG} (required), {@code --seconds N} (default 45), {@code
   *     --chromium PATH} (default {@code chromium}); exits non-zero if the query fails or
   *     Chromium exits non-zero or writes no file
   */
  public static void main(String[] args) {
    System.exit(new CommandLine(new UiScreenshot()).execute(args));
  }

  @Override
  public Integer call() throws Exception {
    Path png = out.toAbsolutePath();
    try (ScreenshotQuery run = ScreenshotQuery.start("strata-ui", Map.of(
        "spark.sql.streaming.ui.enabledCustomMetricList",
        "strataS3Requests,strataUploadMs,strataBytesUploaded"))) {
      Thread.sleep(TimeUnit.SECONDS.toMillis(seconds));
      run.requireRunning();
      String url = run.spark.sparkContext().uiWebUrl().get() + "/StreamingQuery/statistics/?id="
          + run.query.runId();
      System.out.println("Streaming query page: " + url);
      screenshot(chromium, url, png);
    }
    System.out.println("Wrote " + png);
    return 0;
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
