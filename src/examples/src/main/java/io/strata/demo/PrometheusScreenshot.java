// SPDX-License-Identifier: Apache-2.0
package io.strata.demo;

import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Takes the screenshot of a Prometheus dashboard that README.md shows (issue 46): Strata's
 * {@code strata} metrics source exported by Spark's own Prometheus servlet and scraped by a real
 * Prometheus server. A stateful query (a count per key over Spark's rate source, Strata's
 * provider and checkpoint file manager on a local S3Proxy, one batch a second) runs in a Spark
 * session whose only metrics settings are README's two {@code PrometheusServlet} lines and a
 * metrics namespace; Prometheus (the Debian package {@code prometheus}) scrapes the driver's
 * {@code /metrics/prometheus} every 2 s; after {@code --seconds}, headless Chromium renders
 * Prometheus's graph page of the request rates per second of the state stores and of the
 * checkpoint files to a PNG.
 *
 * <p>Run it with {@code mvn -B -q -Pprometheus-screenshot -DskipTests verify} from the project
 * root (options in the property {@code prometheus.args}: {@code --out PNG}, {@code --seconds N},
 * {@code --prometheus PATH}, {@code --chromium PATH}).
 */
@Command(name = "PrometheusScreenshot",
    description = "Screenshots Prometheus graphing Strata's metrics source.")
public final class PrometheusScreenshot implements Callable<Integer> {
  /** Spark's metrics namespace here: metric names start {@code metrics_strata_demo_driver_}. */
  static final String NAMESPACE = "strata_demo";

  @Option(names = "--out", paramLabel = "PNG", required = true, description = "Where to write.")
  Path out;

  @Option(names = "--seconds", paramLabel = "N", description = "Scraping to run first, s.")
  int seconds = 120;

  @Option(names = "--prometheus", paramLabel = "PATH", description = "Prometheus' binary.")
  String prometheus = "prometheus";

  @Option(names = "--chromium", paramLabel = "PATH", description = "Chromium's binary.")
  String chromium = "chromium";

  private PrometheusScreenshot() { }

  /**
   * Entry point.
   *
   * @param args {@code --out PNG} (required), {@code --seconds N} (default 120), {@code
   *     --prometheus PATH} (default {@code prometheus}), {@code --chromium PATH} (default
   *     {@code chromium}); exits non-zero if the query fails, Prometheus never scrapes Strata's
   *     source, or Chromium exits non-zero or writes no file
   */
  public static void main(String[] args) {
    System.exit(new CommandLine(new PrometheusScreenshot()).execute(args));
  }

  @Override
  public Integer call() throws Exception {
    Path png = out.toAbsolutePath();
    // README's Prometheus set-up (section "Metrics"), and a namespace for stable names.
    try (ScreenshotQuery run = ScreenshotQuery.start("strata-prometheus", Map.of(
        "spark.metrics.conf.*.sink.prometheusServlet.class",
        "org.apache.spark.metrics.sink.PrometheusServlet",
        "spark.metrics.conf.*.sink.prometheusServlet.path", "/metrics/prometheus",
        "spark.metrics.namespace", NAMESPACE))) {
      URI driver = URI.create(run.spark.sparkContext().uiWebUrl().get());
      int port = freePort();
      Path work = Files.createTempDirectory("strata-prometheus-server-");
      Process server = startPrometheus(prometheus, work, driver, port);
      try {
        Thread.sleep(TimeUnit.SECONDS.toMillis(seconds));
        run.requireRunning();
        requireScraped(port,
            "metrics_" + NAMESPACE + "_driver_strata_stateStore_requests_total_Value");
        String url = "http://127.0.0.1:" + port + "/graph?"
            + panel(0, perSecond("(stateStore|checkpointFiles)_requests_(put|get|head|list|delete)"))
            + "&" + panel(1, perSecond("(stateStore|checkpointFiles)_bytesSent"));
        System.out.println("Prometheus graph page: " + url);
        UiScreenshot.screenshot(chromium, url, png, "1400,1900");
      } finally {
        server.destroy();
        server.waitFor(10, TimeUnit.SECONDS);
      }
    }
    System.out.println("Wrote " + png);
    return 0;
  }

  /**
   * The rate per second over 20 s of each of Strata's gauges whose name (after the source's
   * prefix) matches {@code gauges}, one line each, labelled {@code gauge} with that name
   * (rate() drops metric names, so the label is set first, in a subquery).
   */
  static String perSecond(String gauges) {
    String prefix = "metrics_" + NAMESPACE + "_driver_strata_";
    return "rate(label_replace({__name__=~\"" + prefix + gauges + "_Value\"}, \"gauge\", \"$1\", "
        + "\"__name__\", \"" + prefix + "(.*)_Value\")[20s:2s])";
  }

  /** One graph panel of Prometheus's page for {@code expr}, over the last {@code 2m}. */
  private static String panel(int i, String expr) {
    return "g" + i + ".expr=" + URLEncoder.encode(expr, StandardCharsets.UTF_8) + "&g" + i
        + ".tab=0&g" + i + ".range_input=" + "2m";
  }

  /** Starts Prometheus scraping {@code driver}'s servlet every 2 s, serving on {@code port}. */
  private static Process startPrometheus(String binary, Path work, URI driver, int port)
      throws IOException {
    Path config = work.resolve("prometheus.yml");
    Files.writeString(config, String.join("\n",
        "global:",
        "  scrape_interval: 2s",
        "scrape_configs:",
        "  - job_name: spark-driver",
        "    metrics_path: /metrics/prometheus",
        "    static_configs:",
        "      - targets: ['" + driver.getHost() + ":" + driver.getPort() + "']",
        ""));
    List<String> cmd = List.of(binary, "--config.file=" + config,
        "--storage.tsdb.path=" + work.resolve("prometheus-data"),
        "--web.listen-address=127.0.0.1:" + port);
    try {
      return new ProcessBuilder(cmd).redirectErrorStream(true)
          .redirectOutput(work.resolve("prometheus.log").toFile()).start();
    } catch (IOException e) {
      throw new IOException("Cannot start " + binary + " (install it with: apt-get install "
          + "prometheus, or pass --prometheus PATH)", e);
    }
  }

  /** Fails unless Prometheus holds samples of {@code metric} (it scraped Strata's source). */
  private static void requireScraped(int port, String metric)
      throws IOException, InterruptedException {
    HttpResponse<String> r = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
        URI.create("http://127.0.0.1:" + port + "/api/v1/query?query="
            + URLEncoder.encode(metric, StandardCharsets.UTF_8))).build(),
        HttpResponse.BodyHandlers.ofString());
    if (r.statusCode() != 200 || !r.body().contains(metric)) {
      throw new IOException("Prometheus has no samples of " + metric + ": " + r.body());
    }
  }

  private static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    }
  }
}
