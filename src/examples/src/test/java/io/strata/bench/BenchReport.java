// SPDX-License-Identifier: Apache-2.0
package io.strata.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.strata.report.SvgChart;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeSet;
import java.util.function.Function;

/**
 * Generates the results part of {@code docs/benchmarks.md} and its plots from the results files,
 * so that no number in the document is typed by hand: {@code --e2e} (written by {@link
 * E2EBenchmark}), {@code --jmh} (JMH's JSON from {@code jmh/}, with an optional {@code
 * <name>-meta.json} next to it). Each generated block of the document sits between
 * {@code <!-- BEGIN generated:NAME -->} and {@code <!-- END generated:NAME -->}; text outside
 * the markers is kept. Plots are SVG files written to {@code --plots}.
 *
 * <p>Usage: {@code BenchReport --e2e <file>[,<file>...] --jmh <file> --doc
 * <docs/benchmarks.md> --plots <dir>}. Several end-to-end files (runs split over invocations)
 * are merged: their runs are concatenated, the meta data is the first file's with every
 * file's arguments and code commits (in file order, each once), the earliest start, the latest
 * end and the highest load averages. A missing results file yields a block saying so. Exits 2
 * if the document lacks a marker.
 */
public final class BenchReport {
  private static final ObjectMapper JSON = new ObjectMapper();
  static final List<String> BLOCKS = List.of("e2e-meta", "e2e-headline", "e2e-commit",
      "e2e-requests", "e2e-restore", "e2e-runs", "e2e-targets", "e2e-not-ahead", "jmh",
      "jmh-put");
  /** Set-ups whose commit Strata should beat by 10x (the "default set-ups"). */
  private static final List<String> DEFAULT_SETUPS = List.of("rocksdb-default",
      "rocksdb-changelog-default", "hdfs-default");
  private static final String PEER = "rocksdb-changelog-tuned";

  private final JsonNode e2e;
  private final List<JsonNode> runs = new ArrayList<>();
  private final JsonNode jmh;
  private final JsonNode jmhMeta;
  /** JMH's JSON of {@code PutBenchmark} ({@code jmh-put.json} beside the JMH file), or null. */
  private JsonNode jmhPut;
  private JsonNode jmhPutMeta;
  private final Path plots;
  private final String plotsRel;

  private BenchReport(JsonNode e2e, JsonNode jmh, JsonNode jmhMeta, Path plots, String plotsRel) {
    this.e2e = e2e;
    this.jmh = jmh;
    this.jmhMeta = jmhMeta;
    this.plots = plots;
    this.plotsRel = plotsRel;
    if (e2e != null) {
      for (JsonNode r : e2e.path("runs")) {
        if (!r.has("error")) {
          runs.add(r);
        }
      }
    }
  }

  /** Entry point; see the class comment. */
  public static void main(String[] args) throws IOException {
    Map<String, String> a = new HashMap<>();
    for (int i = 0; i + 1 < args.length; i += 2) {
      a.put(args[i], args[i + 1]);
    }
    for (String k : List.of("--e2e", "--jmh", "--doc", "--plots")) {
      if (!a.containsKey(k)) {
        System.err.println("BenchReport: missing " + k
            + "; usage: --e2e <file> --jmh <file> --doc <markdown> --plots <dir>");
        System.exit(2);
      }
    }
    try {
      List<Path> e2e = new ArrayList<>();
      for (String f : a.get("--e2e").split(",")) {
        e2e.add(Paths.get(f.trim()));
      }
      if (e2e.stream().noneMatch(Files::exists)) {
        // E.g. after -Dbench.args=--help, which runs nothing: never blank the committed page.
        System.out.println("BenchReport: none of the results files " + e2e + " exists; "
            + a.get("--doc") + " left as it is");
        return;
      }
      write(e2e, Paths.get(a.get("--jmh")), Paths.get(a.get("--doc")),
          Paths.get(a.get("--plots")));
    } catch (IllegalArgumentException e) {
      System.err.println("BenchReport: " + e.getMessage());
      System.exit(2);
    }
    System.out.println("BenchReport: wrote " + a.get("--doc") + " and plots in "
        + a.get("--plots"));
  }

  /**
   * Rewrites the generated blocks of {@code doc} from the results files and writes the plots
   * into {@code plots} (created if missing); image links in {@code doc} are relative to it.
   *
   * @param e2e end-to-end results files ({@link E2EBenchmark}); missing ones are skipped
   * @param jmh JMH's JSON results; may be missing. Its sidecar {@code <name>-meta.json} is read
   *     when present
   * @throws IllegalArgumentException if {@code doc} lacks a block's markers
   * @throws IOException if a file cannot be read or written
   */
  static void write(List<Path> e2e, Path jmh, Path doc, Path plots) throws IOException {
    Files.createDirectories(plots);
    Path jmhMeta = jmh.resolveSibling(jmh.getFileName().toString()
        .replaceAll("\\.json$", "") + "-meta.json");
    String rel = doc.toAbsolutePath().getParent().relativize(plots.toAbsolutePath()).toString();
    List<JsonNode> docs = new ArrayList<>();
    for (Path p : e2e) {
      JsonNode d = read(p);
      if (d != null) {
        docs.add(d);
      }
    }
    BenchReport r = new BenchReport(merge(docs), read(jmh), read(jmhMeta), plots,
        rel.isEmpty() ? "." : rel);
    r.jmhPut = read(jmh.resolveSibling("jmh-put.json"));
    r.jmhPutMeta = read(jmh.resolveSibling("jmh-put-meta.json"));
    String text = Files.readString(doc, StandardCharsets.UTF_8);
    Files.writeString(doc, r.render(text), StandardCharsets.UTF_8);
  }

  /** One results document from several; null for none. See the class comment. */
  static JsonNode merge(List<JsonNode> docs) {
    if (docs.isEmpty()) {
      return null;
    }
    if (docs.size() == 1) {
      return docs.get(0);
    }
    com.fasterxml.jackson.databind.node.ObjectNode out = JSON.createObjectNode();
    com.fasterxml.jackson.databind.node.ObjectNode meta = docs.get(0).path("meta").deepCopy();
    com.fasterxml.jackson.databind.node.ArrayNode runs = out.putArray("runs");
    List<String> args = new ArrayList<>();
    java.util.LinkedHashSet<String> commits = new java.util.LinkedHashSet<>();
    for (JsonNode d : docs) {
      JsonNode m = d.path("meta");
      args.add(m.path("arguments").asText());
      commits.add(m.path("gitCommit").asText());
      if (m.path("startedAt").asText().compareTo(meta.path("startedAt").asText()) < 0) {
        meta.put("startedAt", m.path("startedAt").asText());
      }
      if (m.path("finishedAt").asText().compareTo(meta.path("finishedAt").asText()) > 0) {
        meta.put("finishedAt", m.path("finishedAt").asText());
      }
      for (String k : List.of("loadAvgStart", "loadAvgEnd")) {
        meta.put(k, Math.max(meta.path(k).asDouble(), m.path(k).asDouble()));
      }
      if (!m.path("profile").asText().equals(meta.path("profile").asText())) {
        meta.put("profile", meta.path("profile").asText() + "+" + m.path("profile").asText());
      }
      d.path("runs").forEach(runs::add);
      JsonNode lat = m.path("latencyProfilesMs");
      lat.properties().forEach(e -> ((com.fasterxml.jackson.databind.node.ObjectNode)
          meta.path("latencyProfilesMs")).set(e.getKey(), e.getValue()));
    }
    meta.put("arguments", String.join(" | ", args));
    meta.put("gitCommit", String.join("`, `", commits));
    out.set("meta", meta);
    return out;
  }

  private static JsonNode read(Path p) throws IOException {
    return Files.isRegularFile(p) ? JSON.readTree(p.toFile()) : null;
  }

  /**
   * Replaces every generated block of {@code doc}; writes the plots.
   *
   * @throws IllegalArgumentException naming a block whose markers are missing
   */
  String render(String doc) throws IOException {
    Map<String, String> blocks = new LinkedHashMap<>();
    blocks.put("e2e-meta", e2eMeta());
    blocks.put("e2e-headline", headline());
    blocks.put("e2e-commit", commitTables());
    blocks.put("e2e-requests", requestTables());
    blocks.put("e2e-driver", driverTables());
    blocks.put("e2e-restore", restoreTables());
    blocks.put("e2e-runs", runsTables());
    blocks.put("e2e-targets", targets());
    blocks.put("e2e-not-ahead", notAhead());
    blocks.put("e2e-strata-split", strataSplit());
    blocks.put("jmh", jmhTables());
    blocks.put("jmh-put", putTable());
    String out = doc;
    for (Map.Entry<String, String> b : blocks.entrySet()) {
      String begin = "<!-- BEGIN generated:" + b.getKey() + " -->";
      String end = "<!-- END generated:" + b.getKey() + " -->";
      int i = out.indexOf(begin);
      int j = out.indexOf(end);
      if (i < 0 || j < i) {
        throw new IllegalArgumentException("the document has no block " + begin + " ... " + end);
      }
      out = out.substring(0, i + begin.length()) + "\n" + b.getValue().strip() + "\n"
          + out.substring(j);
    }
    return out;
  }

  // ---------------------------------------------------------------- end-to-end

  private String e2eMeta() {
    if (e2e == null) {
      return "_No end-to-end results yet: run the command above._";
    }
    JsonNode m = e2e.path("meta");
    StringBuilder sb = new StringBuilder();
    String profile = m.path("profile").asText();
    if (profile.startsWith("quick")) {
      sb.append("> **Quick run.** These results come from the `--quick` profile (small state, "
          + "few batches). They show that the benchmark works and the shape of the results; "
          + "they are not the comparison at 1 M and 10 M keys, which needs the full run.\n\n");
    }
    double cores = m.path("cores").asDouble();
    double loadStart = m.path("loadAvgStart").asDouble();
    double loadEnd = m.path("loadAvgEnd").asDouble();
    if (Math.max(loadStart, loadEnd) > cores) {
      sb.append(String.format(Locale.ROOT, "> **Loaded machine.** The 1-minute load average "
          + "was %.1f at the start and %.1f at the end, on %d cores (it counts the benchmark's "
          + "own Spark and S3Proxy JVMs as well as anything else running): runs competed for "
          + "the CPU, so absolute times are inflated and noisy. Request counts do not depend on "
          + "load.%n%n", loadStart, loadEnd, (int) cores));
    }
    sb.append("| | |\n|---|---|\n");
    row(sb, "profile", "`" + profile + "`");
    row(sb, "arguments", "`" + m.path("arguments").asText() + "`");
    row(sb, "started / finished", m.path("startedAt").asText() + " / "
        + m.path("finishedAt").asText());
    row(sb, "code", "git `" + m.path("gitCommit").asText() + "`");
    row(sb, "machine", String.format(Locale.ROOT, "%d cores, %.0f GiB RAM, %s",
        (int) cores, m.path("memoryBytes").asDouble() / (1L << 30), m.path("os").asText()));
    row(sb, "software", m.path("java").asText() + ", Spark " + m.path("spark").asText() + ", "
        + m.path("s3Server").asText());
    row(sb, "load average (1 min)", String.format(Locale.ROOT, "%.1f at start, %.1f at end",
        loadStart, loadEnd));
    StringBuilder lat = new StringBuilder();
    m.path("latencyProfilesMs").properties().forEach(e -> {
      lat.append(lat.length() == 0 ? "" : "; ").append('`').append(e.getKey()).append("`: ");
      List<String> parts = new ArrayList<>();
      e.getValue().properties().forEach(k -> parts.add(k.getKey() + " "
          + k.getValue().asLong() + " ms"));
      lat.append(String.join(", ", parts));
    });
    row(sb, "added latency per request", lat.toString());
    row(sb, "runs", runs.size() + " succeeded, " + (e2e.path("runs").size() - runs.size())
        + " failed");
    for (JsonNode r : e2e.path("runs")) {
      if (r.has("error")) {
        sb.append("\nFailed: `").append(specName(r)).append("`: ")
            .append(r.path("error").asText().replace("\n", " ")).append('\n');
      }
    }
    if (!runs.isEmpty()) {
      JsonNode s = runs.get(0).path("spec");
      sb.append(String.format(Locale.ROOT, "%nEach run: %d shuffle partitions, Spark "
          + "`local[%d]`, load batches of %,d keys, then %d warm-up and %d measured batches of "
          + "%,d keys, then a restore on wiped local state. Times are per partition (one state "
          + "store's `commit()`, from each task's `time to commit changes`) or per batch (Spark's "
          + "`triggerExecution`).%n", s.path("partitions").asInt(), s.path("cores").asInt(),
          s.path("loadBatchKeys").asLong(), s.path("warmupBatches").asInt(),
          s.path("steadyBatches").asInt(), s.path("batchKeys").asLong()));
      sb.append("\nWall time of each run (its own JVM: start Spark, load, steady batches, "
          + "restore), seconds:\n\n| run | ");
      List<String> setups = setups();
      sb.append(String.join(" | ", setups)).append(" |\n|---|")
          .append("---|".repeat(setups.size())).append('\n');
      Map<String, Map<String, String>> rows = new LinkedHashMap<>();
      for (JsonNode r : runs) {
        JsonNode x = r.path("spec");
        String key = x.path("plan").asText() + " " + x.path("workload").asText() + " "
            + keys(x.path("stateKeys").asLong()) + ", " + x.path("partitions").asInt()
            + " partitions, `" + x.path("latency").asText() + "`";
        // A second run of the same spec and set-up (another results file) gets a row of its
        // own; every other table uses the first, as find() picks it.
        String setup = x.path("setup").asText();
        String row = key;
        for (int again = 2; rows.containsKey(row) && rows.get(row).containsKey(setup); again++) {
          row = key + " (run " + again + " of this spec)";
        }
        rows.computeIfAbsent(row, k -> new LinkedHashMap<>())
            .put(setup, r.path("runSeconds").asText());
      }
      rows.forEach((k, v) -> {
        sb.append("| ").append(k).append(" |");
        for (String setup : setups) {
          sb.append(' ').append(v.getOrDefault(setup, "")).append(" |");
        }
        sb.append('\n');
      });
    }
    return sb.toString();
  }

  private String headline() throws IOException {
    if (runs.isEmpty()) {
      return "_No end-to-end results yet._";
    }
    StringBuilder sb = new StringBuilder();
    sb.append("Ratios are the peer's number divided by Strata's, from the same run (above 1: "
        + "Strata is faster or needs fewer requests). Commit: p50 per partition. Task: p50 of "
        + "the stateful task per partition (load, update, commit). Requests: "
        + "state-store S3 requests per partition per batch, at the largest size the peer ran. "
        + "Restore: time the restore batch "
        + "added.\n\n");
    for (String latency : latencies()) {
      for (String workload : workloads()) {
        List<Long> sizes = sizes("main", workload, latency);
        if (sizes.isEmpty() || find("main", "strata", workload, sizes.get(0), latency) == null) {
          continue;
        }
        sb.append("**").append(workload).append(", latency `").append(latency).append("`**\n\n");
        sb.append("| peer |");
        for (long n : sizes) {
          sb.append(" commit ").append(keys(n)).append(" |");
        }
        for (long n : sizes) {
          sb.append(" task ").append(keys(n)).append(" |");
        }
        sb.append(" requests |");
        for (long n : sizes) {
          sb.append(" restore ").append(keys(n)).append(" |");
        }
        sb.append('\n').append("|---|").append("---|".repeat(3 * sizes.size() + 1)).append('\n');
        for (String setup : setups()) {
          if (setup.startsWith("strata") || sizes.stream()
              .noneMatch(n -> find("main", setup, workload, n, latency) != null)) {
            continue;
          }
          sb.append("| ").append(setup).append(" |");
          for (long n : sizes) {
            sb.append(' ').append(ratio(setup, workload, n, latency,
                r -> commitP50(r))).append(" |");
          }
          for (long n : sizes) {
            sb.append(' ').append(ratio(setup, workload, n, latency,
                r -> taskP50(r))).append(" |");
          }
          long largest = sizes.get(sizes.size() - 1);
          for (long n : sizes) {
            if (find("main", setup, workload, n, latency) != null) {
              largest = n; // the largest size this peer ran at
            }
          }
          sb.append(' ').append(ratio(setup, workload, largest, latency,
              r -> r.path("summary").path("stateRequestsPerPartitionCommit").path("total")
                  .asDouble())).append(" |");
          for (long n : sizes) {
            sb.append(' ').append(ratio(setup, workload, n, latency,
                r -> r.path("summary").path("restore").path("estimateMs").asDouble()))
                .append(" |");
          }
          sb.append('\n');
        }
        sb.append('\n');
      }
    }
    return sb.toString();
  }

  private String ratio(String setup, String workload, long n, String latency,
      Function<JsonNode, Double> metric) {
    JsonNode peer = find("main", setup, workload, n, latency);
    JsonNode strata = find("main", "strata", workload, n, latency);
    if (peer == null || strata == null) {
      return "–";
    }
    double p = metric.apply(peer);
    double s = metric.apply(strata);
    if (p < 0 || s < 0) {
      return "–";
    }
    if (s == 0) {
      return p == 0 ? "1.0×" : "∞";
    }
    return String.format(Locale.ROOT, "%.1f×", p / s);
  }

  private String commitTables() throws IOException {
    if (runs.isEmpty()) {
      return "_No end-to-end results yet._";
    }
    StringBuilder sb = new StringBuilder();
    for (String latency : latencies()) {
      for (String workload : workloads()) {
        List<Long> sizes = sizes("main", workload, latency);
        if (sizes.isEmpty()) {
          continue;
        }
        sb.append("**Commit per partition, ms (p50 / p95 / max), ").append(workload)
            .append(", latency `").append(latency).append("`**\n\n");
        table(sb, sizes, "main", workload, latency, r -> {
          JsonNode c = r.path("summary").path("commitMsPerPartition");
          return c.path("p50").asLong() + " / " + c.path("p95").asLong() + " / "
              + c.path("max").asLong();
        });
        sb.append("**Stateful task per partition, ms (p50 / p95): the whole task that loads "
            + "the store, updates it and commits, ").append(workload).append(", latency `")
            .append(latency).append("`**\n\n");
        table(sb, sizes, "main", workload, latency, r -> {
          JsonNode c = r.path("summary").path("statefulTaskMs");
          return c.isMissingNode() ? "–" : c.path("p50").asLong() + " / " + c.path("p95").asLong();
        });
        sb.append("**Batch duration p50, ms, and bytes uploaded per batch (state), ")
            .append(workload).append(", latency `").append(latency).append("`**\n\n");
        table(sb, sizes, "main", workload, latency, r -> {
          JsonNode s = r.path("summary");
          return s.path("batchMs").path("p50").asLong() + " ms · "
              + bytes(s.path("bytesUpPerBatch").path("state").asLong());
        });
        sb.append("**Load phase (all load batches), s, ").append(workload)
            .append(", latency `").append(latency).append("`**\n\n");
        table(sb, sizes, "main", workload, latency, r -> String.format(Locale.ROOT, "%.1f",
            r.path("summary").path("loadMs").asDouble() / 1000));
        Map<String, List<Double>> series = new LinkedHashMap<>();
        for (String setup : setups()) {
          List<Double> v = new ArrayList<>();
          for (long n : sizes) {
            JsonNode r = find("main", setup, workload, n, latency);
            v.add(r == null ? null : commitP50(r));
          }
          series.put(setup, v);
        }
        String file = "commit-p50-" + workload + "-" + latency + ".svg";
        plot(file, SvgChart.lines("Commit p50 per partition (" + workload + ", latency "
            + latency + ")", "keys in state", "ms (log scale)", sizes.stream()
            .map(BenchReport::keys).toList(), series, true));
        sb.append("![commit p50 vs state size](").append(plotsRel).append('/').append(file)
            .append(")\n\n");
      }
    }
    return sb.toString();
  }

  private String requestTables() throws IOException {
    if (runs.isEmpty()) {
      return "_No end-to-end results yet._";
    }
    StringBuilder sb = new StringBuilder();
    List<String[]> views = new ArrayList<>();
    for (String latency : latencies()) {
      List<Long> sizes = sizes("main", "agg", latency);
      if (!sizes.isEmpty()) {
        views.add(new String[] {"main", latency, Long.toString(sizes.get(sizes.size() - 1))});
      }
    }
    for (JsonNode r : runs) {
      JsonNode s = r.path("spec");
      if (s.path("plan").asText().equals("requests")) {
        views.add(new String[] {"requests", s.path("latency").asText(),
            Long.toString(s.path("stateKeys").asLong())});
        break;
      }
    }
    for (String[] v : views) {
      String plan = v[0];
      String latency = v[1];
      long n = Long.parseLong(v[2]);
      JsonNode any = null;
      for (String setup : setups()) {
        any = any != null ? any : find(plan, setup, "agg", n, latency);
      }
      if (any == null) {
        continue;
      }
      int partitions = any.path("spec").path("partitions").asInt();
      sb.append("**S3 requests per batch, agg at ").append(keys(n)).append(" keys, ")
          .append(partitions).append(" partitions, latency `").append(latency)
          .append("`**: state-store requests per partition per batch by kind, their total per "
              + "batch, and every request per batch including Spark's own offset, commit and "
              + "source logs.\n\n");
      sb.append("| set-up |");
      for (S3Kind k : S3Kind.values()) {
        sb.append(' ').append(k).append(" |");
      }
      sb.append(" state per partition | state per batch | all per batch |\n|---|")
          .append("---|".repeat(S3Kind.values().length + 3)).append('\n');
      Map<String, List<Double>> series = new LinkedHashMap<>();
      for (S3Kind k : S3Kind.values()) {
        series.put(k.name(), new ArrayList<>());
      }
      List<String> names = new ArrayList<>();
      for (String setup : setups()) {
        JsonNode r = find(plan, setup, "agg", n, latency);
        if (r == null) {
          continue;
        }
        names.add(setup);
        JsonNode pp = r.path("summary").path("stateRequestsPerPartitionCommit");
        JsonNode pb = r.path("summary").path("requestsPerBatch");
        sb.append("| ").append(setup).append(" |");
        for (S3Kind k : S3Kind.values()) {
          sb.append(' ').append(num(pp.path(k.name()).asDouble())).append(" |");
          series.get(k.name()).add(pp.path(k.name()).asDouble());
        }
        sb.append(" **").append(num(pp.path("total").asDouble())).append("** | ")
            .append(num(pb.path("state").path("total").asDouble())).append(" | ")
            .append(num(pb.path("all").path("total").asDouble())).append(" |\n");
      }
      sb.append('\n');
      String file = "requests-" + plan + "-" + latency + ".svg";
      plot(file, SvgChart.bars("State-store S3 requests per partition per batch ("
          + keys(n) + " keys, " + partitions + " partitions)", "set-up", "requests", names,
          series, true));
      sb.append("![S3 requests per batch](").append(plotsRel).append('/').append(file)
          .append(")\n\n");
    }
    return sb.toString();
  }

  /**
   * Spark's own checkpoint files per steady batch (the gateway's "other" scope: offsets,
   * commits, source logs; written by the driver), by set-up, at the largest agg size of each
   * latency profile: requests by kind and the driver's time in Spark's {@code walCommit}
   * (offset log) and {@code commitOffsets} (commit log) phases, p50 over the steady batches.
   */
  private String driverTables() {
    if (runs.isEmpty()) {
      return "_No end-to-end results yet._";
    }
    StringBuilder sb = new StringBuilder();
    for (String latency : latencies()) {
      List<Long> sizes = sizes("main", "agg", latency);
      if (sizes.isEmpty()) {
        continue;
      }
      long n = sizes.get(sizes.size() - 1);
      sb.append("**Spark's own checkpoint files per batch, agg at ").append(keys(n))
          .append(" keys, latency `").append(latency).append("`**: the driver's requests for ")
          .append("`offsets/`, `commits/` and `sources/` (everything outside `state/`) per ")
          .append("steady batch by kind, and the p50 of Spark's `walCommit` (offset log ")
          .append("write) and `commitOffsets` (commit log write) durations.\n\n");
      sb.append("| set-up | Spark's checkpoint file manager |");
      for (S3Kind k : S3Kind.values()) {
        sb.append(' ').append(k).append(" |");
      }
      sb.append(" total | walCommit p50 ms | commitOffsets p50 ms |\n|---|---|")
          .append("---|".repeat(S3Kind.values().length + 3)).append('\n');
      for (String setup : setups()) {
        JsonNode r = find("main", setup, "agg", n, latency);
        if (r == null) {
          continue;
        }
        JsonNode other = r.path("summary").path("requestsPerBatch").path("other");
        sb.append("| ").append(setup).append(" | ").append(managerOf(setup)).append(" |");
        for (S3Kind k : S3Kind.values()) {
          sb.append(' ').append(num(round2(other.path(k.name()).asDouble()))).append(" |");
        }
        sb.append(" **").append(num(round2(other.path("total").asDouble()))).append("** | ")
            .append(num(steadyP50(r, "walCommit"))).append(" | ")
            .append(num(steadyP50(r, "commitOffsets"))).append(" |\n");
      }
      sb.append('\n');
    }
    return sb.toString();
  }

  /**
   * Where a Strata commit's time and bytes go: Strata's own per-batch metrics ({@code
   * strataDeltaBuildMs}, {@code strataUploadMs}, {@code strataIngestMs}, {@code
   * strataCommitOwnMicros} and the version object's bytes by part, summed over the operator's
   * partitions) averaged over the steady batches and divided by the partitions, next to the p50
   * of {@code commit()} per partition, for every Strata run ("—" for results measured before
   * the metric existed).
   */
  private String strataSplit() {
    StringBuilder sb = new StringBuilder();
    sb.append("| run | build SST delta, ms | PUT version object, ms | ingest locally, ms | "
        + "Strata's own time before the PUT, µs | version object, bytes: SST data / filter / "
        + "index / table metadata / manifest | commit p50, ms |\n"
        + "|---|---|---|---|---|---|---|\n");
    int rows = 0;
    Map<String, Integer> seen = new HashMap<>();
    for (JsonNode r : runs) {
      JsonNode x = r.path("spec");
      if (!x.path("setup").asText().startsWith("strata") || !x.path("plan").asText()
          .equals("main")) {
        continue;
      }
      double build = 0;
      double upload = 0;
      double ingest = 0;
      double own = 0;
      String[] partNames = {"strataCommitSstDataBytes", "strataCommitSstFilterBytes",
          "strataCommitSstIndexBytes", "strataCommitSstMetaBytes", "strataCommitManifestBytes"};
      double[] parts = new double[partNames.length];
      boolean hasParts = false;
      int n = 0;
      for (JsonNode b : r.path("batches")) {
        if (b.path("phase").asText().equals("steady")) {
          JsonNode c = b.path("customMetrics");
          build += c.path("strataDeltaBuildMs").asDouble();
          upload += c.path("strataUploadMs").asDouble();
          ingest += c.path("strataIngestMs").asDouble();
          own += c.path("strataCommitOwnMicros").asDouble();
          hasParts |= c.has("strataCommitManifestBytes");
          for (int i = 0; i < parts.length; i++) {
            parts[i] += c.path(partNames[i]).asDouble();
          }
          n++;
        }
      }
      if (n == 0) {
        continue;
      }
      double div = (double) n * x.path("partitions").asInt();
      String name = specName(r);
      int again = seen.merge(name, 1, Integer::sum);
      StringBuilder byPart = new StringBuilder();
      for (int i = 0; i < parts.length; i++) {
        byPart.append(i == 0 ? "" : " / ").append(num(Math.round(parts[i] / div)));
      }
      sb.append(String.format(Locale.ROOT, "| %s | %.1f | %.1f | %.1f | %s | %s | %s |%n",
          again == 1 ? name : name + " (run " + again + " of this spec)",
          build / div, upload / div, ingest / div,
          hasParts ? String.format(Locale.ROOT, "%.0f", own / div) : "—",
          hasParts ? byPart : "—", num(commitP50(r))));
      rows++;
    }
    return rows == 0 ? "_No Strata runs in the results._" : sb.toString();
  }

  private static String managerOf(String setup) {
    ProviderSetup p = ProviderSetup.of(setup);
    if (p == ProviderSetup.STRATA_CHECKPOINT) {
      return "Strata's (create-only PUT)";
    }
    return p.tuned() ? "abortable stream (tuned)" : "file context, rename (default)";
  }

  private static double round2(double v) {
    return Math.round(v * 100) / 100.0;
  }

  /** p50 of a Spark duration ({@code durations.<name>}) over the steady batches, ms. */
  private static double steadyP50(JsonNode r, String name) {
    List<Double> v = new ArrayList<>();
    for (JsonNode b : r.path("batches")) {
      if (b.path("phase").asText().equals("steady") && b.path("durations").has(name)) {
        v.add(b.path("durations").path(name).asDouble());
      }
    }
    if (v.isEmpty()) {
      return -1;
    }
    v.sort(null);
    return v.get((v.size() - 1) / 2);
  }

  private String restoreTables() throws IOException {
    if (runs.isEmpty()) {
      return "_No end-to-end results yet._";
    }
    StringBuilder sb = new StringBuilder();
    for (String latency : latencies()) {
      for (String workload : workloads()) {
        List<Long> sizes = sizes("main", workload, latency);
        if (sizes.isEmpty()) {
          continue;
        }
        sb.append("**Restore on wiped local state, ms: time added to the first batch "
            + "(restore batch's `addBatch` minus a steady batch's p50), and in brackets that "
            + "batch's `triggerExecution`; ").append(workload).append(", latency `")
            .append(latency).append("`**\n\n");
        table(sb, sizes, "main", workload, latency, r -> {
          JsonNode x = r.path("summary").path("restore");
          return x.path("estimateMs").asLong() + " (" + x.path("batchMs").asLong() + ")";
        });
        Map<String, List<Double>> series = new LinkedHashMap<>();
        for (String setup : setups()) {
          List<Double> v = new ArrayList<>();
          for (long n : sizes) {
            JsonNode r = find("main", setup, workload, n, latency);
            v.add(r == null ? null
                : r.path("summary").path("restore").path("estimateMs").asDouble());
          }
          series.put(setup, v);
        }
        for (String setup : setups()) {
          if (!setup.startsWith("strata")) {
            continue;
          }
          List<String> parts = new ArrayList<>();
          for (long n : sizes) {
            JsonNode r = find("main", setup, workload, n, latency);
            if (r == null) {
              continue;
            }
            for (JsonNode b : r.path("batches")) {
              if (b.path("phase").asText().equals("restore")) {
                JsonNode c = b.path("customMetrics");
                int p = Math.max(1, r.path("spec").path("partitions").asInt());
                parts.add(String.format(Locale.ROOT, "%s keys: %.1f deltas after the base "
                    + "snapshot per partition, %s restored, restore time per partition %.0f ms",
                    keys(n), c.path("strataDeltaChainLength").asDouble() / p,
                    bytes(c.path("strataRestoreBytes").asLong()),
                    c.path("strataRestoreMs").asDouble() / p));
              }
            }
          }
          if (!parts.isEmpty()) {
            sb.append("`").append(setup).append("` restore (Strata's metrics, mean per "
                + "partition): ").append(String.join("; ", parts)).append(".\n\n");
          }
          List<String> rates = new ArrayList<>();
          for (long n : sizes) {
            JsonNode r = find("main", setup, workload, n, latency);
            JsonNode c = r == null ? null : r.path("getCeiling");
            if (c == null || c.isMissingNode()) {
              continue;
            }
            double rate = restoreRate(r);
            rates.add(String.format(Locale.ROOT, "%s keys: %.0f MiB/s against %.0f MiB/s "
                + "(%.0f %%; %d ranged GETs of at most %s over %d objects, %s, %d at a time, "
                + "best of %s ms)", keys(n), rate, c.path("mibPerS").asDouble(),
                100 * rate / Math.max(1e-9, c.path("mibPerS").asDouble()),
                c.path("ranges").asInt(), bytes(c.path("rangeBytes").asLong()),
                c.path("objects").asInt(), bytes(c.path("bytes").asLong()),
                c.path("streams").asInt(), c.path("triesMs").toString()) + byStore(rate, c));
          }
          if (!rates.isEmpty()) {
            sb.append("`").append(setup).append("` download rate against the ceiling: bytes "
                + "restored over the stores' download time (`strataRestoreDownloadMs`: the "
                + "GETs and their checksum verification, summed over stores, divided by the "
                + "stores restoring at once) against plain parallel ranged GETs of the same "
                + "objects through the same gateway once the run's queries stopped: ")
                .append(String.join("; ", rates)).append(".\n\n");
          }
          List<String> alone = new ArrayList<>();
          for (long n : sizes) {
            JsonNode r = findWith("restoreAlone", "main", setup, workload, n, latency);
            JsonNode a = r == null ? null : r.path("restoreAlone");
            if (a == null || a.isMissingNode()) {
              continue;
            }
            alone.add(aloneRate(n, a));
          }
          if (!alone.isEmpty()) {
            sb.append("`").append(setup).append("` restore path alone (the same stores "
                + "restored again by `SyncedStore.load`, read-only, as many at once as in the "
                + "query, once its queries stopped, so no Spark task shares the cores; the best "
                + "try, every try in brackets) against the ceiling of the objects those restores "
                + "read, its tries alternating with the restore's: ")
                .append(String.join("; ", alone)).append(".\n\n");
          }
        }
        String file = "restore-" + workload + "-" + latency + ".svg";
        plot(file, SvgChart.bars("Restore time added to the first batch (" + workload
            + ", latency " + latency + ")", "keys in state", "ms", sizes.stream()
            .map(BenchReport::keys).toList(), series, false));
        sb.append("![restore time](").append(plotsRel).append('/').append(file)
            .append(")\n\n");
      }
    }
    return sb.toString();
  }

  /** One size's restore-alone rate against its own ceiling, as a sentence fragment. */
  private static String aloneRate(long n, JsonNode a) {
    JsonNode c = a.path("getCeiling");
    double best = a.path("bestMibPerS").asDouble();
    double ceiling = c.path("mibPerS").asDouble();
    JsonNode t = a.path("tries").path(0);
    List<String> rates = new ArrayList<>();
    a.path("tries").forEach(x -> rates.add(String.format(Locale.ROOT, "%.0f",
        x.path("mibPerS").asDouble())));
    return String.format(Locale.ROOT, "%s keys: %.0f MiB/s (tries %s) against %.0f MiB/s (%.0f "
        + "%%; %d stores, %d at a time, %d files, %s, %d deltas replayed; ceiling %d GETs, best "
        + "of %s ms)", keys(n), best, String.join(", ", rates), ceiling,
        100 * best / Math.max(1e-9, ceiling), a.path("stores").asInt(),
        a.path("concurrent").asInt(), t.path("files").asLong(), bytes(t.path("bytes").asLong()),
        t.path("deltas").asLong(), c.path("ranges").asInt(), c.path("triesMs").toString())
        + byStore(best, c);
  }

  /**
   * The ceiling's {@code byStore} tries (the same GETs grouped as a query's restores issue them)
   * as a sentence fragment: their rate, its share of the flat ceiling, and {@code rate}'s share
   * of it; empty for results without them.
   */
  private static String byStore(double rate, JsonNode ceiling) {
    JsonNode g = ceiling.path("byStore");
    if (g.isMissingNode()) {
      return "";
    }
    double flat = ceiling.path("mibPerS").asDouble();
    double grouped = g.path("mibPerS").asDouble();
    return String.format(Locale.ROOT, "; the same GETs grouped by store, %d streams per store, "
        + "%d stores at once, %d stores: %.0f MiB/s, %.0f %% of the ceiling, best of %s ms; "
        + "the restore reached %.0f %% of that", g.path("threadsPerStore").asInt(),
        g.path("concurrentStores").asInt(), g.path("stores").asInt(), grouped,
        100 * grouped / Math.max(1e-9, flat), g.path("triesMs").toString(),
        100 * rate / Math.max(1e-9, grouped));
  }

  /**
   * A Strata run's restore download rate, MiB/s: bytes restored over the stores' download time
   * ({@code strataRestoreBytes} / ({@code strataRestoreDownloadMs} / the stores restoring at
   * once, {@code min(cores, partitions)})); runs without that metric use {@code strataRestoreMs}.
   */
  private static double restoreRate(JsonNode r) {
    JsonNode c = r.path("summary").path("restore").path("customMetrics");
    int parallel = Math.max(1, Math.min(r.path("spec").path("cores").asInt(),
        r.path("spec").path("partitions").asInt()));
    // The download time where the run has it (strataRestoreDownloadMs), else the whole restore.
    long msSum = (c.has("strataRestoreDownloadMs") ? c.path("strataRestoreDownloadMs")
        : c.path("strataRestoreMs")).asLong();
    return msSum <= 0 ? 0 : RestoreAlone.rate(c.path("strataRestoreBytes").asLong(), msSum,
        parallel);
  }

  /**
   * Restore cost against the number of runs (issue 15): for the {@code runs} plan, each
   * one-batch run's restore time (its batch's {@code addBatch} minus a steady batch's p50) and
   * state GET requests, per set-up, as a table and two line plots; then what restoring 1 TB
   * over 20 executors would take, from the measured per-stream ceiling.
   */
  private String runsTables() throws IOException {
    List<JsonNode> rs = new ArrayList<>();
    for (JsonNode r : runs) {
      if (r.path("spec").path("plan").asText().equals("runs")) {
        rs.add(r);
      }
    }
    StringBuilder sb = new StringBuilder();
    if (rs.isEmpty()) {
      sb.append("_No one-batch-run results yet._\n\n");
    } else {
      JsonNode spec0 = rs.get(0).path("spec");
      int n = spec0.path("runs").asInt();
      sb.append(String.format(Locale.ROOT, "**Restore cost against the number of one-batch "
          + "runs: agg at %s keys, %d partitions, latency `%s`, maintenance never running; per "
          + "run, time the restore added (ms) / state GET requests of the run's batch; for "
          + "Strata also, in brackets, the deltas after the base per store of the version the "
          + "run committed (it cycles up to `snapshotInterval`, 20 by default; the GETs also "
          + "follow the base snapshot's file count, which RocksDB's compactions keep bounded)**%n%n",
          keys(spec0.path("stateKeys").asLong()), spec0.path("partitions").asInt(),
          spec0.path("latency").asText()));
      sb.append("| run |");
      for (JsonNode r : rs) {
        sb.append(" `").append(r.path("spec").path("setup").asText()).append("` |");
      }
      sb.append("\n|---|").append("---|".repeat(rs.size())).append('\n');
      Map<String, List<Double>> times = new LinkedHashMap<>();
      Map<String, List<Double>> gets = new LinkedHashMap<>();
      List<String> x = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        x.add(Integer.toString(i + 1));
      }
      for (JsonNode r : rs) {
        List<Double> t = new ArrayList<>();
        List<Double> g = new ArrayList<>();
        for (JsonNode one : r.path("summary").path("runs")) {
          t.add(one.path("estimateMs").asDouble());
          g.add(one.path("stateRequests").path("GET").asDouble());
        }
        times.put(r.path("spec").path("setup").asText(), t);
        gets.put(r.path("spec").path("setup").asText(), g);
      }
      for (int i = 0; i < n; i++) {
        sb.append("| ").append(i + 1).append(" |");
        for (JsonNode r : rs) {
          String id = r.path("spec").path("setup").asText();
          List<Double> t = times.get(id);
          List<Double> g = gets.get(id);
          JsonNode c = r.path("summary").path("runs").path(i).path("customMetrics");
          String chain = c.has("strataDeltaChainLength") ? String.format(Locale.ROOT, " (%.0f)",
              c.path("strataDeltaChainLength").asDouble()
                  / Math.max(1, r.path("spec").path("partitions").asInt())) : "";
          sb.append(i < t.size() ? String.format(Locale.ROOT, " %.0f / %.0f%s |", t.get(i),
              g.get(i), chain) : " – |");
        }
        sb.append('\n');
      }
      sb.append('\n');
      for (JsonNode r : rs) {
        JsonNode c = r.path("getCeiling");
        if (!c.isMissingNode()) {
          double rate = restoreRate(r);
          sb.append(String.format(Locale.ROOT, "`%s`, run 1 (the same restore as a `main` run's): "
              + "download rate %.0f MiB/s against a parallel ranged-GET ceiling of %.0f MiB/s "
              + "(%.0f %%; %d GETs of at most %s over %d objects, %s, %d at a time, tries %s "
              + "ms).%n%n", r.path("spec").path("setup").asText(), rate,
              c.path("mibPerS").asDouble(), 100 * rate / Math.max(1e-9,
                  c.path("mibPerS").asDouble()), c.path("ranges").asInt(),
              bytes(c.path("rangeBytes").asLong()), c.path("objects").asInt(),
              bytes(c.path("bytes").asLong()), c.path("streams").asInt(),
              c.path("triesMs").toString()));
        }
      }
      plot("runs-restore-ms.svg", SvgChart.lines("Restore time added per one-batch run",
          "run", "ms", x, times, false));
      plot("runs-restore-gets.svg", SvgChart.lines("State GET requests per one-batch run",
          "run", "GET requests", x, gets, false));
      sb.append("![restore time per run](").append(plotsRel).append("/runs-restore-ms.svg)\n\n");
      sb.append("![GET requests per run](").append(plotsRel)
          .append("/runs-restore-gets.svg)\n\n");
    }
    sb.append(terabyte());
    return sb.toString();
  }

  /** What 1 TB over 20 executors would take, from the largest Strata run's measured figures. */
  private String terabyte() {
    JsonNode best = null;
    for (JsonNode r : runs) {
      if (!r.path("spec").path("plan").asText().equals("requests")
          && r.path("spec").path("setup").asText().equals("strata") && r.has("getCeiling")
          && (best == null || r.path("spec").path("stateKeys").asLong()
              > best.path("spec").path("stateKeys").asLong())) {
        best = r;
      }
    }
    if (best == null) {
      return "_No ceiling measured yet, so no estimate for 1 TB._\n";
    }
    JsonNode c = best.path("getCeiling");
    int streams = c.path("streams").asInt();
    int parallel = Math.max(1, Math.min(best.path("spec").path("cores").asInt(),
        best.path("spec").path("partitions").asInt()));
    double perStream = c.path("mibPerSPerStream").asDouble();
    double strataPerStore = restoreRate(best) / parallel;
    double efficiency = restoreRate(best) / Math.max(1e-9, c.path("mibPerS").asDouble());
    double perExecutorMiB = 1024.0 * 1024.0 / 20; // 1 TiB over 20 executors, MiB
    int slots = 4;
    double nic = 10e9 / 8 / (1024 * 1024); // a 10 Gbit/s network interface, MiB/s
    double perExecRate = slots * E2ERun.TRANSFER_THREADS * perStream * efficiency;
    return String.format(Locale.ROOT, "**1 TB of state over 20 executors** (an estimate, not a "
        + "measurement), from the measured figures of the largest run (agg at %s keys, `%s`): the ranged-GET ceiling was %.1f "
        + "MiB/s per stream (%d streams, %.0f MiB/s), and Strata's restore reached %.0f %% of "
        + "it, %.0f MiB/s per store with its %d transfer threads. Each executor restores "
        + "about 51 GiB (1 TiB / 20). With %d task slots per executor restoring at once (%d "
        + "streams) at these per-stream figures and this share of the ceiling, an executor "
        + "restores %.0f MiB/s, so the restore takes about %.0f s, all 20 executors in "
        + "parallel. Whatever the per-stream rate, a 10 Gbit/s network interface (%.0f MiB/s) "
        + "bounds it below by %.0f s. On S3 itself the per-stream rate of a GET, not this "
        + "server's, decides, and S3 serves at least 5,500 GETs per second per prefix; a "
        + "store's restore is the base snapshot's files plus at most `snapshotInterval` + 2 "
        + "deltas whatever the job's rhythm (the one-batch runs above).%n",
        keys(best.path("spec").path("stateKeys").asLong()), best.path("spec").path("latency")
            .asText(), perStream, streams, c.path("mibPerS").asDouble(), 100 * efficiency,
        strataPerStore, E2ERun.TRANSFER_THREADS, slots, slots * E2ERun.TRANSFER_THREADS,
        perExecRate, perExecutorMiB / perExecRate, nic, perExecutorMiB / nic);
  }

  /** The goals, each checked against the results. */
  private String targets() {
    if (runs.isEmpty()) {
      return "_No end-to-end results yet._";
    }
    StringBuilder sb = new StringBuilder();
    sb.append("| goal | latency | result | met |\n|---|---|---|---|\n");
    for (String latency : latencies()) {
      List<Long> sizes = sizes("main", "agg", latency);
      if (sizes.isEmpty() || find("main", "strata", "agg", sizes.get(0), latency) == null) {
        continue;
      }
      long lo = sizes.get(0);
      long hi = sizes.get(sizes.size() - 1);
      JsonNode sLo = find("main", "strata", "agg", lo, latency);
      JsonNode sHi = find("main", "strata", "agg", hi, latency);
      if (sHi != null && lo != hi) {
        double r = commitP50(sHi) / Math.max(1, commitP50(sLo));
        sb.append(String.format(Locale.ROOT, "| Strata commit p50 at %s keys within 1.2× of "
            + "its p50 at %s | `%s` | %.0f ms vs %.0f ms: %.2f× | %s |%n", keys(hi), keys(lo),
            latency, commitP50(sHi), commitP50(sLo), r, r <= 1.2 ? "yes" : "**no**"));
      }
      for (long n : sizes) {
        JsonNode s = find("main", "strata", "agg", n, latency);
        JsonNode peer = find("main", PEER, "agg", n, latency);
        if (s != null && peer != null) {
          sb.append(String.format(Locale.ROOT, "| commit p50 no slower than %s, %s keys | "
              + "`%s` | %.0f ms vs %.0f ms | %s |%n", PEER, keys(n), latency, commitP50(s),
              commitP50(peer), commitP50(s) <= commitP50(peer) ? "yes" : "**no**"));
        }
        for (String d : DEFAULT_SETUPS) {
          JsonNode x = find("main", d, "agg", n, latency);
          if (s != null && x != null) {
            double r = commitP50(x) / Math.max(1, commitP50(s));
            sb.append(String.format(Locale.ROOT, "| commit p50 ≥ 10× faster than %s, %s keys "
                + "| `%s` | %.0f ms vs %.0f ms: %.1f× | %s |%n", d, keys(n), latency,
                commitP50(s), commitP50(x), r, r >= 10 ? "yes" : "**no**"));
          }
        }
      }
      if (sHi != null) {
        JsonNode pp = sHi.path("summary").path("stateRequestsPerPartitionCommit");
        JsonNode vp = sHi.path("summary").path("versionObjectPutsPerPartitionCommit");
        // The commit path: one version-object PUT per partition per commit; the rest of the
        // state requests in the steady window are background snapshots and GC.
        double commitPath = vp.isMissingNode() ? pp.path("total").asDouble() : vp.asDouble();
        boolean one = commitPath <= 1.0 && pp.path("HEAD").asDouble() == 0
            && pp.path("COPY").asDouble() == 0;
        JsonNode peer = find("main", PEER, "agg", hi, latency);
        sb.append(String.format(Locale.ROOT, "| 1 S3 request per partition per commit, 0 HEAD,"
            + " 0 COPY (%s keys) | `%s` | commit path: %s version-object PUT per partition; all "
            + "state requests in the steady batches, background snapshots and GC included: %s "
            + "per partition per batch (PUT %s, LIST %s, HEAD %s, COPY %s)%s | %s |%n",
            keys(hi), latency, num(commitPath), num(pp.path("total").asDouble()),
            num(pp.path("PUT").asDouble()), num(pp.path("LIST").asDouble()),
            num(pp.path("HEAD").asDouble()), num(pp.path("COPY").asDouble()),
            peer == null ? "" : "; " + PEER + ": " + num(peer.path("summary")
                .path("stateRequestsPerPartitionCommit").path("total").asDouble()),
            one ? "yes" : "**no**"));
      }
      boolean any = false;
      for (long n : sizes) {
        if (n < 1_000_000) {
          continue;
        }
        for (String peerSetup : List.of("rocksdb-default", "rocksdb-tuned",
            "rocksdb-changelog-default", PEER)) {
          JsonNode s = find("main", "strata", "agg", n, latency);
          JsonNode p = find("main", peerSetup, "agg", n, latency);
          if (s == null || p == null) {
            continue;
          }
          any = true;
          double a = s.path("summary").path("restore").path("estimateMs").asDouble();
          double b = p.path("summary").path("restore").path("estimateMs").asDouble();
          double r = b / Math.max(1, a);
          sb.append(String.format(Locale.ROOT, "| restore ≥ 3× faster than %s, %s keys | `%s`"
              + " | %.0f ms vs %.0f ms: %.1f× | %s |%n", peerSetup, keys(n), latency, a, b, r,
              r >= 3 ? "yes" : "**no**"));
        }
      }
      TreeSet<Long> ceilingSizes = new TreeSet<>(sizes);
      ceilingSizes.addAll(sizes("runs", "agg", latency));
      for (long n : ceilingSizes) {
        JsonNode s = find("main", "strata", "agg", n, latency);
        if (s == null || !s.has("getCeiling")) {
          s = find("runs", "strata", "agg", n, latency); // its first run is the same restore
        }
        if (n < 1_000_000 || s == null || !s.has("getCeiling")) {
          continue;
        }
        double rate = restoreRate(s);
        double ceiling = s.path("getCeiling").path("mibPerS").asDouble();
        sb.append(String.format(Locale.ROOT, "| restore download rate ≥ 80 %% of a parallel "
            + "ranged-GET ceiling, %s keys | `%s` | %.0f MiB/s vs %.0f MiB/s: %.0f %% | %s |%n",
            keys(n), latency, rate, ceiling, 100 * rate / Math.max(1e-9, ceiling),
            rate >= 0.8 * ceiling ? "yes" : "**no**"));
        JsonNode alone = findWith("restoreAlone", "main", "strata", "agg", n, latency);
        JsonNode a = alone == null ? null : alone.path("restoreAlone");
        if (a != null) {
          double best = a.path("bestMibPerS").asDouble();
          double c = a.path("getCeiling").path("mibPerS").asDouble();
          double q = restoreRate(alone);
          double qc = alone.path("getCeiling").path("mibPerS").asDouble();
          sb.append(String.format(Locale.ROOT, "| the same, Strata's restore path alone (no "
              + "Spark task running), %s keys | `%s` | %.0f MiB/s vs %.0f MiB/s: %.0f %% (the "
              + "same run's query restore: %.0f MiB/s vs %.0f MiB/s, %.0f %%) | %s |%n",
              keys(n), latency, best, c, 100 * best / Math.max(1e-9, c), q, qc,
              100 * q / Math.max(1e-9, qc), best >= 0.8 * c ? "yes" : "**no**"));
          JsonNode g = a.path("getCeiling").path("byStore");
          if (!g.isMissingNode()) {
            double gc = g.path("mibPerS").asDouble();
            sb.append(String.format(Locale.ROOT, "| the ceiling's own GETs grouped by store as "
                + "a query restores them (%d streams per store, %d stores at once), %s keys | "
                + "`%s` | %.0f MiB/s vs %.0f MiB/s: %.0f %% (the restore path alone reached "
                + "%.0f %% of it) | %s |%n", g.path("threadsPerStore").asInt(),
                g.path("concurrentStores").asInt(), keys(n), latency, gc, c,
                100 * gc / Math.max(1e-9, c), 100 * best / Math.max(1e-9, gc),
                gc >= 0.8 * c ? "yes" : "**no**"));
          }
        }
      }
      if (!any) {
        sb.append("| restore ≥ 3× faster than Spark's RocksDB provider at ≥ 1 M keys | `")
            .append(latency).append("` | not measured: no run with ≥ 1 M keys | – |\n");
      }
    }
    return sb.toString();
  }

  /** Every metric, size and peer where Strata's number is worse than the peer's. */
  private String notAhead() {
    if (runs.isEmpty()) {
      return "_No end-to-end results yet._";
    }
    Map<String, Function<JsonNode, Double>> metrics = new LinkedHashMap<>();
    metrics.put("commit p50, ms", r -> commitP50(r));
    metrics.put("commit p95, ms", r -> r.path("summary").path("commitMsPerPartition")
        .path("p95").asDouble());
    metrics.put("commit max, ms", r -> r.path("summary").path("commitMsPerPartition")
        .path("max").asDouble());
    metrics.put("stateful task p50, ms", r -> taskP50(r));
    metrics.put("batch p50, ms", r -> r.path("summary").path("batchMs").path("p50").asDouble());
    metrics.put("load phase, ms", r -> r.path("summary").path("loadMs").asDouble());
    metrics.put("state bytes uploaded per batch", r -> r.path("summary")
        .path("bytesUpPerBatch").path("state").asDouble());
    metrics.put("state requests per partition per batch", r -> r.path("summary")
        .path("stateRequestsPerPartitionCommit").path("total").asDouble());
    metrics.put("all requests per batch", r -> r.path("summary").path("requestsPerBatch")
        .path("all").path("total").asDouble());
    metrics.put("restore, ms", r -> r.path("summary").path("restore").path("estimateMs")
        .asDouble());
    StringBuilder sb = new StringBuilder();
    sb.append("| metric | latency, workload, keys | peer | Strata | peer's |\n"
        + "|---|---|---|---|---|\n");
    int rows = 0;
    for (Map.Entry<String, Function<JsonNode, Double>> m : metrics.entrySet()) {
      for (String latency : latencies()) {
        for (String workload : workloads()) {
          for (long n : sizes("main", workload, latency)) {
            JsonNode s = find("main", "strata", workload, n, latency);
            if (s == null) {
              continue;
            }
            for (String setup : setups()) {
              JsonNode p = setup.startsWith("strata") ? null
                  : find("main", setup, workload, n, latency);
              if (p == null) {
                continue;
              }
              double a = m.getValue().apply(s);
              double b = m.getValue().apply(p);
              if (a >= 0 && b >= 0 && a > b) {
                rows++;
                sb.append("| ").append(m.getKey()).append(" | `").append(latency).append("`, ")
                    .append(workload).append(", ").append(keys(n)).append(" | ").append(setup)
                    .append(" | ").append(num(a)).append(" | ").append(num(b)).append(" |\n");
              }
            }
          }
        }
      }
    }
    return rows == 0 ? "Nowhere in this run: Strata's number is at least as good as every "
        + "peer's for every metric, size and latency profile." : sb.toString();
  }

  private void table(StringBuilder sb, List<Long> sizes, String plan, String workload,
      String latency, Function<JsonNode, String> cell) {
    sb.append("| set-up |");
    for (long n : sizes) {
      sb.append(' ').append(keys(n)).append(" keys |");
    }
    sb.append("\n|---|").append("---|".repeat(sizes.size())).append('\n');
    for (String setup : setups()) {
      sb.append("| ").append(setup).append(" |");
      boolean any = false;
      for (long n : sizes) {
        JsonNode r = find(plan, setup, workload, n, latency);
        any |= r != null;
        sb.append(' ').append(r == null ? "–" : cell.apply(r)).append(" |");
      }
      sb.append('\n');
      if (!any) {
        sb.setLength(sb.lastIndexOf("| " + setup + " |"));
      }
    }
    sb.append('\n');
  }

  private static double taskP50(JsonNode r) {
    JsonNode t = r.path("summary").path("statefulTaskMs");
    return t.isMissingNode() ? -1 : t.path("p50").asDouble();
  }

  private static double commitP50(JsonNode r) {
    return r.path("summary").path("commitMsPerPartition").path("p50").asDouble();
  }

  private JsonNode find(String plan, String setup, String workload, long n, String latency) {
    for (JsonNode r : runs) {
      JsonNode s = r.path("spec");
      if (s.path("plan").asText().equals(plan) && s.path("setup").asText().equals(setup)
          && s.path("workload").asText().equals(workload) && s.path("stateKeys").asLong() == n
          && s.path("latency").asText().equals(latency)) {
        return r;
      }
    }
    return null;
  }

  /** As {@link #find}, the first such run that has {@code field}, or null. */
  private JsonNode findWith(String field, String plan, String setup, String workload, long n,
      String latency) {
    for (JsonNode r : runs) {
      JsonNode s = r.path("spec");
      if (r.has(field) && s.path("plan").asText().equals(plan)
          && s.path("setup").asText().equals(setup)
          && s.path("workload").asText().equals(workload) && s.path("stateKeys").asLong() == n
          && s.path("latency").asText().equals(latency)) {
        return r;
      }
    }
    return null;
  }

  private List<String> setups() {
    List<String> out = new ArrayList<>();
    for (ProviderSetup p : ProviderSetup.values()) {
      for (JsonNode r : runs) {
        if (r.path("spec").path("setup").asText().equals(p.id())) {
          out.add(p.id());
          break;
        }
      }
    }
    return out;
  }

  private List<String> latencies() {
    List<String> out = new ArrayList<>();
    for (JsonNode r : runs) {
      JsonNode s = r.path("spec");
      String l = s.path("latency").asText();
      if (s.path("plan").asText().equals("main") && !out.contains(l)) {
        out.add(l);
      }
    }
    return out;
  }

  private List<String> workloads() {
    List<String> out = new ArrayList<>();
    for (String w : List.of("agg", "dedup")) {
      for (JsonNode r : runs) {
        if (r.path("spec").path("workload").asText().equals(w)) {
          out.add(w);
          break;
        }
      }
    }
    return out;
  }

  private List<Long> sizes(String plan, String workload, String latency) {
    TreeSet<Long> s = new TreeSet<>();
    for (JsonNode r : runs) {
      JsonNode x = r.path("spec");
      if (x.path("plan").asText().equals(plan) && x.path("workload").asText().equals(workload)
          && x.path("latency").asText().equals(latency)) {
        s.add(x.path("stateKeys").asLong());
      }
    }
    return new ArrayList<>(s);
  }

  private static String specName(JsonNode r) {
    JsonNode s = r.path("spec");
    return s.path("plan").asText() + " " + s.path("setup").asText() + " "
        + s.path("workload").asText() + " " + s.path("stateKeys").asLong() + " keys "
        + s.path("latency").asText();
  }

  // ---------------------------------------------------------------- JMH

  /**
   * {@code PutBenchmark}: ms per PUT by body size and PUT kind, with the SDK's payload checksum
   * off and on, and their ratio.
   */
  private String putTable() {
    if (jmhPut == null || !jmhPut.isArray() || jmhPut.size() == 0) {
      return "_No PutBenchmark results yet: run the PutBenchmark command above._";
    }
    StringBuilder sb = new StringBuilder();
    if (jmhPutMeta != null) {
      sb.append(String.format(Locale.ROOT, "Run %s to %s, JMH options `%s`, %d cores, 1-minute "
          + "load average %.1f at start and %.1f at end, git `%s`.%n%n",
          jmhPutMeta.path("startedAt").asText(), jmhPutMeta.path("finishedAt").asText(),
          jmhPutMeta.path("args").asText(), jmhPutMeta.path("cores").asInt(),
          jmhPutMeta.path("loadAvgStart").asDouble(), jmhPutMeta.path("loadAvgEnd").asDouble(),
          jmhPutMeta.path("gitCommit").asText()));
    }
    // "<bytes>|<createOnly>" -> payloadChecksums -> score
    Map<String, Map<Boolean, double[]>> t = new java.util.TreeMap<>();
    Map<Boolean, double[]> raw = new java.util.TreeMap<>();
    for (JsonNode b : jmhPut) {
      JsonNode p = b.path("params");
      if (b.path("benchmark").asText().contains("RawPutBenchmark")) {
        JsonNode pm = b.path("primaryMetric");
        raw.put(p.path("expectContinue").asBoolean(), new double[] {pm.path("score").asDouble(),
            pm.path("scoreError").asDouble(Double.NaN)});
        continue;
      }
      String row = String.format(Locale.ROOT, "%09d|%s", p.path("bodyBytes").asLong(),
          p.path("createOnly").asText());
      JsonNode pm = b.path("primaryMetric");
      t.computeIfAbsent(row, k -> new java.util.TreeMap<>()).put(
          p.path("payloadChecksums").asBoolean(),
          new double[] {pm.path("score").asDouble(), pm.path("scoreError").asDouble(Double.NaN)});
    }
    sb.append("| body | PUT | checksum off, ms per PUT | checksum on (CRC32 trailer), ms per PUT "
        + "| on / off |\n|---|---|---|---|---|\n");
    t.forEach((row, byCrc) -> {
      String[] k = row.split("\\|");
      double[] off = byCrc.get(false);
      double[] on = byCrc.get(true);
      sb.append("| ").append(String.format(Locale.ROOT, "%,d bytes", Long.parseLong(k[0])))
          .append(" | ").append(Boolean.parseBoolean(k[1]) ? "create-only (`If-None-Match: *`)"
              : "plain")
          .append(" | ").append(off == null ? "–" : sig(off[0]) + " ± " + sig(off[1]))
          .append(" | ").append(on == null ? "–" : sig(on[0]) + " ± " + sig(on[1]))
          .append(" | ").append(off == null || on == null ? "–"
              : String.format(Locale.ROOT, "%.2f×", on[0] / off[0]))
          .append(" |\n");
    });
    if (!raw.isEmpty()) {
      double[] on = raw.get(true);
      double[] off = raw.get(false);
      sb.append("\n`RawPutBenchmark`: the same create-only PUT (60 kB, no payload checksum) from a "
          + "plain SDK client, with the `Expect: 100-continue` handshake on (the SDK's default) "
          + "and off.\n\n| 100-continue on, ms per PUT | off, ms per PUT | on / off |\n"
          + "|---|---|---|\n| ").append(on == null ? "–" : sig(on[0]) + " ± " + sig(on[1]))
          .append(" | ").append(off == null ? "–" : sig(off[0]) + " ± " + sig(off[1]))
          .append(" | ").append(on == null || off == null ? "–"
              : String.format(Locale.ROOT, "%.2f×", on[0] / off[0])).append(" |\n");
    }
    return sb.toString();
  }

  private String jmhTables() throws IOException {
    if (jmh == null || !jmh.isArray() || jmh.size() == 0) {
      return "_No JMH results yet: run the JMH command above._";
    }
    StringBuilder sb = new StringBuilder();
    if (jmhMeta != null) {
      if (jmhMeta.path("args").asText().contains("-i 2")) {
        sb.append("> **Quick mode** (1 warm-up and 2 measured iterations of 1 s): indicative "
            + "only.\n\n");
      }
      sb.append(String.format(Locale.ROOT, "Run %s to %s, JMH options `%s`, %d cores, 1-minute "
          + "load average %.1f at start and %.1f at end, git `%s`.%n%n",
          jmhMeta.path("startedAt").asText(), jmhMeta.path("finishedAt").asText(),
          jmhMeta.path("args").asText(), jmhMeta.path("cores").asInt(),
          jmhMeta.path("loadAvgStart").asDouble(), jmhMeta.path("loadAvgEnd").asDouble(),
          jmhMeta.path("gitCommit").asText()));
    }
    // benchmark -> stateKeys -> store -> cell
    Map<String, Map<Long, Map<String, String>>> t = new LinkedHashMap<>();
    Map<Long, Map<String, Double>> restoreMbs = new LinkedHashMap<>();
    TreeSet<String> stores = new TreeSet<>();
    for (JsonNode b : jmh) {
      String name = b.path("benchmark").asText().replace("io.strata.bench.", "");
      if (name.startsWith("PutBenchmark")) {
        continue; // its own table (putTable)
      }
      JsonNode params = b.path("params");
      String store = params.path("store").asText();
      long keys = params.path("stateKeys").asLong();
      stores.add(store);
      JsonNode pm = b.path("primaryMetric");
      double err = pm.path("scoreError").asDouble(Double.NaN);
      String cell = sig(pm.path("score").asDouble())
          + (Double.isNaN(err) ? "" : " ± " + sig(err)) + " " + pm.path("scoreUnit").asText();
      t.computeIfAbsent(name, k -> new java.util.TreeMap<>())
          .computeIfAbsent(keys, k -> new LinkedHashMap<>()).put(store, cell);
      JsonNode bytes = b.path("secondaryMetrics").path("restoredBytes");
      if (!bytes.isMissingNode()) {
        double mbs = bytes.path("score").asDouble() / 1e6;
        restoreMbs.computeIfAbsent(keys, k -> new LinkedHashMap<>()).put(store, mbs);
        double perRestore = pm.path("score").asDouble() > 0 ? 1 / pm.path("score").asDouble()
            : -1;
        t.get(name).get(keys).put(store, sig(perRestore) + " s per restore, " + sig(mbs)
            + " MB/s");
      }
    }
    // Where a Spark store beats the better of Strata's two stores.
    List<String> behind = new ArrayList<>();
    Map<String, Map<Long, Map<String, Double>>> scores = new LinkedHashMap<>();
    Map<String, Boolean> higherBetter = new HashMap<>();
    for (JsonNode b : jmh) {
      String name = b.path("benchmark").asText().replace("io.strata.bench.", "");
      if (name.startsWith("PutBenchmark")) {
        continue;
      }
      higherBetter.put(name, b.path("mode").asText().equals("thrpt"));
      scores.computeIfAbsent(name, k -> new java.util.TreeMap<>())
          .computeIfAbsent(b.path("params").path("stateKeys").asLong(),
              k -> new LinkedHashMap<>())
          .put(b.path("params").path("store").asText(),
              b.path("primaryMetric").path("score").asDouble());
    }
    scores.forEach((name, byKeys) -> byKeys.forEach((keys, byStore) -> {
      boolean up = higherBetter.get(name);
      Double best = null;
      for (Map.Entry<String, Double> e : byStore.entrySet()) {
        if (e.getKey().startsWith("strata")) {
          best = best == null ? e.getValue()
              : up ? Math.max(best, e.getValue()) : Math.min(best, e.getValue());
        }
      }
      if (best == null) {
        return;
      }
      for (Map.Entry<String, Double> e : byStore.entrySet()) {
        if (!e.getKey().startsWith("strata")
            && (up ? e.getValue() > best : e.getValue() < best)) {
          behind.add(name + " at " + keys(keys) + ": " + e.getKey());
        }
      }
    }));
    List<String> order = List.of("strata-file", "strata-s3", "rocksdb-file",
        "rocksdb-changelog-file", "hdfs-file", "rocksdb-s3", "rocksdb-changelog-s3");
    List<String> cols = new ArrayList<>(stores);
    cols.sort(java.util.Comparator.comparingInt(c -> order.contains(c) ? order.indexOf(c)
        : order.size()));
    sb.append("| benchmark | keys |");
    cols.forEach(c -> sb.append(' ').append(c).append(" |"));
    sb.append("\n|---|---|").append("---|".repeat(cols.size())).append('\n');
    t.forEach((name, byKeys) -> byKeys.forEach((keys, byStore) -> {
      sb.append("| ").append(name).append(" | ").append(keys(keys)).append(" |");
      for (String c : cols) {
        sb.append(' ').append(byStore.getOrDefault(c, "–")).append(" |");
      }
      sb.append('\n');
    }));
    sb.append('\n');
    sb.append(behind.isEmpty() ? "No Spark store beat the better of Strata's two stores in "
        + "this run.\n\n" : "A Spark store beat the better of Strata's two stores in: "
        + String.join("; ", behind) + ".\n\n");
    if (!restoreMbs.isEmpty()) {
      TreeSet<String> rs = new TreeSet<>();
      restoreMbs.values().forEach(m -> rs.addAll(m.keySet()));
      Map<String, List<Double>> series = new LinkedHashMap<>();
      List<Long> ks = new ArrayList<>(new TreeSet<>(restoreMbs.keySet()));
      for (String s : rs) {
        List<Double> v = new ArrayList<>();
        for (long k : ks) {
          v.add(restoreMbs.get(k).get(s));
        }
        series.put(s, v);
      }
      String file = "jmh-restore.svg";
      plot(file, SvgChart.bars("Restore throughput from S3Proxy (JMH)", "keys in state",
          "MB/s of checkpoint restored", ks.stream().map(BenchReport::keys).toList(), series,
          false));
      sb.append("![restore throughput](").append(plotsRel).append('/').append(file)
          .append(")\n");
    }
    return sb.toString();
  }

  // ---------------------------------------------------------------- formatting

  private void plot(String file, String svg) throws IOException {
    Files.writeString(plots.resolve(file), svg, StandardCharsets.UTF_8);
  }

  private static void row(StringBuilder sb, String k, String v) {
    sb.append("| ").append(k).append(" | ").append(v).append(" |\n");
  }

  static String keys(long n) {
    if (n >= 1_000_000 && n % 1_000_000 == 0) {
      return (n / 1_000_000) + " M";
    }
    if (n >= 1000 && n % 1000 == 0) {
      return (n / 1000) + " k";
    }
    return Long.toString(n);
  }

  private static String num(double v) {
    return v == Math.rint(v) ? Long.toString((long) v) : String.format(Locale.ROOT, "%.2f", v);
  }

  private static String bytes(long b) {
    if (b >= 10L << 20) {
      return (b >> 20) + " MiB";
    }
    if (b >= 10L << 10) {
      return (b >> 10) + " KiB";
    }
    return b + " B";
  }

  /** Three significant digits, no exponent. */
  private static String sig(double v) {
    if (v == 0 || Double.isNaN(v)) {
      return "0";
    }
    double a = Math.abs(v);
    int decimals = a >= 100 ? 0 : a >= 10 ? 1 : a >= 1 ? 2 : 3;
    return String.format(Locale.ROOT, "%,." + decimals + "f", v);
  }
}
