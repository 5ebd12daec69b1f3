// SPDX-License-Identifier: Apache-2.0
package io.strata.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.strata.testkit.RepoRoot;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Smoke test of the end-to-end benchmark and its report: the real command path (S3Proxy, one
 * child JVM per run, the request-counting gateway, real streaming queries) at a tiny size with
 * Strata and the tuned RocksDB-changelog set-up, then the report generator on its results and
 * on a copy of {@code docs/benchmarks.md}. It checks that results, tables and plots come out;
 * it never checks a time.
 */
class E2EBenchmarkIT {
  @TempDir
  Path tmp;

  @Test
  void tinyRunProducesResultsTablesAndPlots() throws Exception {
    E2EBenchmark.Options o = E2EBenchmark.parse(new String[] {
        // rocksdb-default uploads whole RocksDB checkpoints through S3A's transfer manager (the
        // SDK's async client): its run fails if the benchmark's class path lacks what S3A needs.
        "--sizes", "2000", "--dedup-sizes", "none", "--setups",
        "strata,rocksdb-changelog-tuned,rocksdb-default",
        "--latency", "none", "--partitions", "2", "--batch-keys", "500",
        "--load-batch-keys", "2000", "--warmup", "0", "--steady", "1",
        "--request-partitions", "0", "--cores", "2", "--heap", "1g", "--server-warmup-seconds", "2",
        "--out", tmp.resolve("e2e.json").toString(), "--work", tmp.resolve("work").toString()});
    assertEquals(0, E2EBenchmark.run(o, "smoke"), "failed runs (see " + tmp + "/work/logs)");

    JsonNode doc = new ObjectMapper().readTree(tmp.resolve("e2e.json").toFile());
    JsonNode runs = doc.path("runs");
    assertEquals(3, runs.size(), "one result per set-up");
    for (JsonNode r : runs) {
      String setup = r.path("spec").path("setup").asText();
      assertFalse(r.has("error"), setup + " failed: " + r.path("error").asText());
      // 1 load + 1 steady + 1 restore batch, each with one commit time per partition
      assertEquals(3, r.path("batches").size(), setup + " batches");
      for (JsonNode b : r.path("batches")) {
        assertEquals(2, b.path("commitMsTasks").size(), setup + " commit times of batch "
            + b.path("batchId"));
      }
      JsonNode s = r.path("summary");
      assertEquals(2, s.path("commitMsPerPartition").path("samples").asInt(),
          setup + " steady commit samples: 1 batch x 2 partitions");
      assertEquals(2, s.path("statefulTaskMs").path("samples").asInt(),
          setup + " stateful task times: 1 batch x 2 partitions");
      assertTrue(s.path("requestsPerBatch").path("state").path("PUT").asDouble() > 0,
          setup + " uploads state to S3 in steady batches");
      assertEquals(2000, s.path("restore").path("stateRows").asLong(),
          setup + " restored every key");
      assertEquals("restore", r.path("batches").get(2).path("phase").asText());
    }

    Path md = tmp.resolve("benchmarks.md");
    Files.copy(RepoRoot.resolve("docs", "benchmarks.md"), md);
    BenchReport.write(List.of(tmp.resolve("e2e.json")), tmp.resolve("no-jmh.json"), md,
        tmp.resolve("plots"));
    String text = Files.readString(md, StandardCharsets.UTF_8);
    assertTrue(text.contains("| strata |"), "tables have a Strata row:\n" + text);
    assertTrue(text.contains("| rocksdb-changelog-tuned |"), "tables have the peer's row");
    // The commit's own cost (issue 45): Strata's time before the PUT and its object by part.
    assertTrue(text.matches("(?s).*Strata's own time before the PUT, µs.*"
        + "\\| \\d+ \\| [1-9]\\d* / [1-9]\\d* / [1-9]\\d* / [1-9]\\d* / [1-9]\\d* \\|.*"),
        "the commit split shows Strata's own time and the version object by part:\n" + text);
    for (String plot : List.of("commit-p50-agg-none.svg", "requests-main-none.svg",
        "restore-agg-none.svg")) {
      Path p = tmp.resolve("plots").resolve(plot);
      assertTrue(Files.size(p) > 0 && Files.readString(p).startsWith("<svg"), plot);
      assertTrue(text.contains("plots/" + plot), "document links " + plot);
    }
  }
}
