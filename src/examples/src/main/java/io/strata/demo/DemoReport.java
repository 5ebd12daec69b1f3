// SPDX-License-Identifier: Apache-2.0
package io.strata.demo;

import io.strata.report.SvgChart;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeSet;
import java.util.function.ToLongFunction;

/**
 * The demo's report: per batch of each query, the median per-partition commit time and the S3
 * requests of its state stores, in phase 1 and after the restore (phase 2, a new session on
 * wiped local state), as two SVG line charts and an HTML page showing them with the run's
 * summary. Written next to the text output, in {@code <work-dir>/report/}, replacing the last
 * run's.
 */
final class DemoReport {
  static final String COMMIT_PLOT = "commit-p50.svg";
  static final String REQUESTS_PLOT = "s3-requests.svg";
  static final String PAGE = "report.html";

  private DemoReport() { }

  /**
   * Writes the report.
   *
   * @param dir the report directory; created, its three files replaced
   * @param phase1 query name to phase 1's totals
   * @param phase2 query name to phase 2's totals (after the restore)
   * @param summary the run's text summary, shown on the page
   * @return the page's path
   * @throws IOException if a file cannot be written
   */
  static Path write(Path dir, Map<String, BatchReporter.QueryTotals> phase1,
      Map<String, BatchReporter.QueryTotals> phase2, String summary) throws IOException {
    Files.createDirectories(dir);
    TreeSet<Long> ids = new TreeSet<>();
    for (Map<String, BatchReporter.QueryTotals> phase : List.of(phase1, phase2)) {
      phase.values().forEach(t -> t.perBatch.forEach(b -> ids.add(b.batchId())));
    }
    List<Long> batchIds = new ArrayList<>(ids);
    List<String> x = batchIds.stream().map(String::valueOf).toList();
    Files.writeString(dir.resolve(COMMIT_PLOT), SvgChart.lines(
        "Commit p50 per batch (per partition)", "batch", "ms", x,
        series(phase1, phase2, batchIds, BatchReporter.Batch::commitP50Ms), false),
        StandardCharsets.UTF_8);
    Files.writeString(dir.resolve(REQUESTS_PLOT), SvgChart.lines(
        "S3 requests per batch (state stores)", "batch", "requests", x,
        series(phase1, phase2, batchIds, BatchReporter.Batch::s3Requests), false),
        StandardCharsets.UTF_8);
    StringBuilder html = new StringBuilder();
    html.append("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">")
        .append("<title>Strata flights demo</title></head>")
        .append("<body style=\"font-family:sans-serif\">\n")
        .append("<h1>Strata flights demo</h1>\n")
        .append("<p>Phase 1 runs the queries over part of the input and stops; the local state ")
        .append("is wiped; phase 2 restores every store from the checkpoint and finishes the ")
        .append("input. Phase 2's first batch of each query includes its restore, which shows ")
        .append("in its S3 requests; the commit times cover commit() alone.</p>\n")
        .append("<img src=\"").append(COMMIT_PLOT).append("\" alt=\"commit p50 per batch\">\n")
        .append("<img src=\"").append(REQUESTS_PLOT).append("\" alt=\"S3 requests per batch\">\n")
        .append(table(phase1, phase2))
        .append("<pre>").append(escape(summary)).append("</pre>\n</body></html>\n");
    Path page = dir.resolve(PAGE);
    Files.writeString(page, html.toString(), StandardCharsets.UTF_8);
    return page;
  }

  /** Per query and phase: batches, commit p50 and max, S3 requests, the first batch's p50. */
  private static String table(Map<String, BatchReporter.QueryTotals> phase1,
      Map<String, BatchReporter.QueryTotals> phase2) {
    StringBuilder sb = new StringBuilder("<table border=\"1\" cellpadding=\"4\" "
        + "style=\"border-collapse:collapse\">\n<tr><th>query</th><th>phase</th><th>batches</th>"
        + "<th>commit p50</th><th>commit max</th><th>first batch's commit p50</th>"
        + "<th>S3 requests</th></tr>\n");
    for (String name : phase1.keySet()) {
      row(sb, name, "1", phase1.get(name));
      if (phase2.containsKey(name)) {
        row(sb, name, "2 (after the restore)", phase2.get(name));
      }
    }
    return sb.append("</table>\n").toString();
  }

  private static void row(StringBuilder sb, String name, String phase,
      BatchReporter.QueryTotals t) {
    long first = t.perBatch.isEmpty() ? -1 : t.perBatch.get(0).commitP50Ms();
    sb.append(String.format(Locale.ROOT, "<tr><td>%s</td><td>%s</td><td>%d</td><td>%s</td>"
        + "<td>%s</td><td>%s</td><td>%s</td></tr>%n", escape(name), phase, t.batches,
        BatchReporter.ms(BatchReporter.percentile(t.commitMs, 50)).strip(),
        BatchReporter.ms(BatchReporter.percentile(t.commitMs, 100)).strip(),
        first < 0 ? "n/a" : first + " ms",
        t.s3Reported ? String.format(Locale.ROOT, "%,d", t.s3Requests) : "n/a"));
  }

  /** One series per query and phase, aligned on {@code batchIds}; null where none. */
  private static Map<String, List<Double>> series(Map<String, BatchReporter.QueryTotals> phase1,
      Map<String, BatchReporter.QueryTotals> phase2, List<Long> batchIds,
      ToLongFunction<BatchReporter.Batch> value) {
    Map<String, List<Double>> out = new LinkedHashMap<>();
    for (String name : phase1.keySet()) {
      out.put(name + ", phase 1", aligned(phase1.get(name), batchIds, value));
      if (phase2.containsKey(name)) {
        out.put(name + ", after restore", aligned(phase2.get(name), batchIds, value));
      }
    }
    return out;
  }

  private static List<Double> aligned(BatchReporter.QueryTotals t, List<Long> batchIds,
      ToLongFunction<BatchReporter.Batch> value) {
    Map<Long, Double> byId = new LinkedHashMap<>();
    for (BatchReporter.Batch b : t.perBatch) {
      long v = value.applyAsLong(b);
      byId.put(b.batchId(), v < 0 ? null : (double) v);
    }
    List<Double> out = new ArrayList<>();
    for (long id : batchIds) {
      out.add(byId.get(id));
    }
    return out;
  }

  private static String escape(String s) {
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;");
  }

  /** The report's location as the demo prints it. */
  static String describe(Path page) {
    return String.format(Locale.ROOT, "Report (plots of commit p50 and S3 requests per batch, "
        + "before and after the restore): %s", page.toAbsolutePath());
  }
}
