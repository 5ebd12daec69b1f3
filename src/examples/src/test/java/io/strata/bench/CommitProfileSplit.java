// SPDX-License-Identifier: Apache-2.0
package io.strata.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * Splits a wall-clock profile of a benchmark run into the stages of one state store commit, for
 * the commit profile in docs/benchmarks.md. Input: async-profiler's collapsed stacks with thread
 * names ({@code jfrconv -o collapsed --wall -t --simple}, cut to the steady batches), one stack
 * per line ending in its sample count. Only Spark task threads inside the provider's {@code
 * commit()} are counted; each such sample goes to the first stage whose pattern matches the
 * frames below the commit frame, else to "other".
 *
 * <p>Wall-clock samples count time, running or not: a thread waiting for a socket is sampled as
 * often as one on a core. So the shares are shares of the commit's wall time; multiplied by a
 * run's mean commit time they give milliseconds per commit.
 *
 * <p>Usage (single-file launch, no class path needed): {@code java
 * src/examples/src/test/java/io/strata/bench/CommitProfileSplit.java strata|peer FILE}. Prints
 * a Markdown table: stage, samples, share of the commit's samples.
 */
public final class CommitProfileSplit {
  private CommitProfileSplit() { }

  /** Strata's commit: {@code AbstractStrataStore.commit} and what it calls. */
  static final Map<String, String> STRATA = stages(
      "PUT: waiting for the server's answer",
      "putIfAbsent.*(AbstractMessageParser\\.parse|SocketInputStream|NioSocketImpl\\.read)",
      "PUT: SDK and HTTP client work (marshal, sign, lease a connection, send)", "putIfAbsent",
      "SST build: fdatasync in SstFileWriter.finish", "SstFileWriter\\.finish.*(fdatasync|fsync)",
      "SST build: the rest of finish (index, filter, properties)", "SstFileWriter\\.finish",
      "SST build: put and delete calls", "SstFileWriter\\.(put|delete)",
      "SST build: open", "SstFileWriter\\.(open|<init>)|EnvOptions",
      "SST build: checksum (reads the file back)", "Checksums",
      "SST build: other (pending-write iteration, size)", "LocalStore\\.writeDelta",
      "ingestion: hand-off to the ingest thread", "LocalIngestion\\.start",
      "ingestion: waiting for it after the PUT", "LocalIngestion\\.await",
      "manifest and version object", "ManifestCodec|VersionObjectCodec|SyncedStore\\.body"
          + "|VersionBuilder\\.manifest",
      "local bookkeeping after the PUT (stamps, cache)", "LocalDatabase\\.committed"
          + "|ManifestCache\\.put|snapshotAfterCommit",
      "Spark's reportCommitToCoordinator", "reportCommit|TaskLock\\.release");

  /** The changelog peer's commit: {@code RocksDBStateStore.commit} and what it calls. */
  static final Map<String, String> PEER = stages(
      "PUT: waiting for the server's answer",
      "ChangelogWriter.*(awaitInput|parseHead|SocketInputStream|NioSocketImpl\\.read)",
      "PUT: S3A, SDK and HTTP client work", "ChangelogWriter",
      "snapshot in commit (flush, checkpoint)", "flush|createSnapshot|[Cc]heckpoint",
      "Spark's reportCommitToCoordinator", "reportCommitToCoordinator",
      "RocksDB bookkeeping (metrics, state machine)", "RocksDB");

  private static Map<String, String> stages(String... namesAndPatterns) {
    Map<String, String> m = new LinkedHashMap<>();
    for (int i = 0; i < namesAndPatterns.length; i += 2) {
      m.put(namesAndPatterns[i], namesAndPatterns[i + 1]);
    }
    return m;
  }

  /**
   * Samples per stage (in the order of {@code stages}, then "other").
   *
   * @param anchor the commit frame, e.g. {@code AbstractStrataStore.commit}
   */
  static Map<String, Long> split(List<String> collapsed, String anchor, Map<String, String> stages) {
    Map<String, Pattern> patterns = new LinkedHashMap<>();
    Map<String, Long> out = new LinkedHashMap<>();
    stages.forEach((name, re) -> {
      patterns.put(name, Pattern.compile(re));
      out.put(name, 0L);
    });
    out.put("other", 0L);
    for (String line : collapsed) {
      int sp = line.lastIndexOf(' ');
      if (sp < 0 || !line.startsWith("[Executor task launch worker")) {
        continue;
      }
      String stack = line.substring(0, sp);
      int at = stack.lastIndexOf(anchor);
      if (at < 0) {
        continue;
      }
      long n = Long.parseLong(line.substring(sp + 1).trim());
      String below = stack.substring(at);
      String stage = "other";
      for (Map.Entry<String, Pattern> e : patterns.entrySet()) {
        if (e.getValue().matcher(below).find()) {
          stage = e.getKey();
          break;
        }
      }
      out.merge(stage, n, Long::sum);
    }
    return out;
  }

  public static void main(String[] args) throws IOException {
    if (args.length != 2 || !(args[0].equals("strata") || args[0].equals("peer"))) {
      System.err.println("usage: CommitProfileSplit strata|peer COLLAPSED_FILE");
      System.exit(2);
    }
    boolean strata = args[0].equals("strata");
    Map<String, Long> s = split(Files.readAllLines(Path.of(args[1])),
        strata ? "AbstractStrataStore.commit" : "RocksDBStateStore.commit",
        strata ? STRATA : PEER);
    long total = s.values().stream().mapToLong(Long::longValue).sum();
    System.out.println("| stage | samples | share |");
    System.out.println("|---|---|---|");
    s.forEach((k, v) -> System.out.printf("| %s | %,d | %.1f %% |%n", k, v,
        total == 0 ? 0.0 : 100.0 * v / total));
    System.out.printf("| all | %,d | 100 %% |%n", total);
  }
}
