// SPDX-License-Identifier: Apache-2.0
package io.strata.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Instant;

/**
 * Records the conditions of a JMH run next to its results, for the report in
 * docs/benchmarks.md: {@code RunInfo start <result.json> <jmh args...>} writes {@code
 * <result>-meta.json} with the start time, the JMH options, the cores, the 1-minute load average
 * and the git commit; {@code RunInfo end <result.json>} adds the end time and load average. The
 * {@code bench} profile runs it before and after JMH.
 */
public final class RunInfo {
  private static final ObjectMapper JSON = new ObjectMapper();

  private RunInfo() { }

  public static void main(String[] args) throws IOException {
    if (args.length < 2 || !(args[0].equals("start") || args[0].equals("end"))) {
      System.err.println("usage: RunInfo start|end <result.json> [jmh args...]");
      System.exit(2);
    }
    Path result = Paths.get(args[1]);
    Path meta = result.resolveSibling(result.getFileName().toString()
        .replaceAll("\\.json$", "") + "-meta.json");
    ObjectNode m;
    if (args[0].equals("start")) {
      m = JSON.createObjectNode();
      m.put("startedAt", Instant.now().toString());
      StringBuilder a = new StringBuilder();
      for (int i = 2; i < args.length; i++) {
        a.append(i > 2 ? " " : "").append(args[i]);
      }
      m.put("args", a.toString());
      m.put("cores", Runtime.getRuntime().availableProcessors());
      m.put("loadAvgStart", loadAverage());
      m.put("gitCommit", gitCommit());
      m.put("java", System.getProperty("java.vm.name") + " " + System.getProperty("java.version"));
    } else {
      m = Files.isRegularFile(meta) ? (ObjectNode) JSON.readTree(meta.toFile())
          : JSON.createObjectNode();
      m.put("finishedAt", Instant.now().toString());
      m.put("loadAvgEnd", loadAverage());
    }
    Files.createDirectories(meta.toAbsolutePath().getParent());
    JSON.writerWithDefaultPrettyPrinter().writeValue(meta.toFile(), m);
  }

  private static double loadAverage() {
    try {
      return Double.parseDouble(Files.readString(Paths.get("/proc/loadavg")).split(" ")[0]);
    } catch (IOException | RuntimeException e) {
      return -1;
    }
  }

  private static String gitCommit() {
    try {
      Process p = new ProcessBuilder("git", "describe", "--always", "--dirty=+dirty", "--abbrev=12")
          .redirectErrorStream(true).start();
      String s = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
      return p.waitFor() == 0 ? s : "unknown";
    } catch (IOException | InterruptedException e) {
      return "unknown";
    }
  }
}
