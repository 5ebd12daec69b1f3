// SPDX-License-Identifier: Apache-2.0
package io.strata.cluster;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * Which input files each batch of the fault campaign's job read ({@link FaultCampaignIT}), taken
 * from the job's own checkpoint: batch {@code b} of a query read the file source's log entries
 * after the previous batch's {@code logOffset} up to its own ({@code offsets/<b>}, Spark's
 * write-ahead log, written once and re-used by every re-run of the batch), whose files are in
 * {@code sources/0/<k>} and the {@code <k>.compact} files Spark folds them into.
 *
 * <p>Why not "batch {@code n} reads file {@code n}": with {@code maxFilesPerTrigger} 1 a batch
 * still reads two files when a driver died after its source logged the next file but before the
 * batch's offsets were written (the restarted source logs one more and the batch takes both);
 * the second 60-minute campaign met it at batch 630. The oracle is fed the same grouping.
 *
 * <p>Reads S3Proxy's filesystem data directory (one file per key), so it sends no request and
 * sees no fault. {@link #record()} must run more often than Spark deletes old log entries
 * ({@code minBatchesToRetain}, 100 batches); it fails if it fell behind. Thread-safe.
 */
final class CampaignBatches {
  private static final Pattern LOG_OFFSET = Pattern.compile("\"logOffset\"\\s*:\\s*(\\d+)");
  private static final Pattern FILE = Pattern.compile("events-(\\d+)\\.json");
  private static final Pattern BATCH_ID = Pattern.compile("\"batchId\"\\s*:\\s*(\\d+)");

  private final Path checkpoints;
  private final List<String> queries;
  /** Per query: batch id to the input files (numbers) it read, from batch 0 on, no gaps. */
  private final Map<String, TreeMap<Long, List<Integer>>> batches = new HashMap<>();
  /** Per query: the {@code logOffset} of its newest recorded batch. */
  private final Map<String, Long> logOffsets = new HashMap<>();

  /**
   * @param checkpoints the directory in S3Proxy's data directory that holds the queries'
   *     checkpoints, one sub-directory per query name
   * @param queries the query names
   */
  CampaignBatches(Path checkpoints, List<String> queries) {
    this.checkpoints = checkpoints;
    this.queries = List.copyOf(queries);
    for (String q : queries) {
      batches.put(q, new TreeMap<>());
      logOffsets.put(q, -1L);
    }
  }

  /**
   * Records every batch committed ({@code commits/<b>} exists) since the last call.
   *
   * @throws IllegalStateException if Spark already deleted the log entries of a batch not yet
   *     recorded, or a batch's source entries are missing
   * @throws UncheckedIOException if reading fails other than by a file going away meanwhile
   *     (that ends the call; the next one picks up)
   */
  synchronized void record() {
    for (String q : queries) {
      Path ckpt = checkpoints.resolve(q);
      TreeMap<Long, List<Integer>> m = batches.get(q);
      long b = m.isEmpty() ? 0 : m.lastKey() + 1;
      Map<Long, List<Integer>> source = null;
      try {
        while (Files.exists(ckpt.resolve("commits").resolve(Long.toString(b)))) {
          long to = logOffset(ckpt.resolve("offsets").resolve(Long.toString(b)));
          if (source == null) {
            source = sourceLog(ckpt.resolve("sources").resolve("0"));
          }
          List<Integer> files = new ArrayList<>();
          for (long k = logOffsets.get(q) + 1; k <= to; k++) {
            List<Integer> f = source.get(k);
            if (f == null) {
              throw new IllegalStateException(q + " batch " + b + ": no source log entry " + k);
            }
            files.addAll(f);
          }
          m.put(b, List.copyOf(files));
          logOffsets.put(q, to);
          b++;
        }
        if (!Files.exists(ckpt.resolve("offsets").resolve(Long.toString(b)))
            && newestLogged(ckpt.resolve("offsets")) > b) {
          throw new IllegalStateException(q + ": batch " + b + " is gone from the offsets log "
              + "before it was recorded");
        }
      } catch (NoSuchFileException goneMeanwhile) {
        // Spark compacted or deleted a log file while we read; the next call picks up
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
  }

  /** The files (numbers, in order) batch {@code b} of query {@code q} read; null if unknown. */
  synchronized List<Integer> files(String q, long b) {
    return batches.get(q).get(b);
  }

  /** The batch of query {@code q} that read file {@code file}, or -1 if none recorded yet. */
  synchronized long batchOf(String q, int file) {
    for (Map.Entry<Long, List<Integer>> e : batches.get(q).descendingMap().entrySet()) {
      if (e.getValue().contains(file)) {
        return e.getKey();
      }
    }
    return -1;
  }

  /** How many batches of query {@code q} are recorded (ids 0 to the count less one). */
  synchronized int count(String q) {
    return batches.get(q).size();
  }

  /** How many recorded batches of query {@code q} read more than one file. */
  synchronized int multiFile(String q) {
    return (int) batches.get(q).values().stream().filter(f -> f.size() > 1).count();
  }

  /**
   * Problems with the recorded grouping of query {@code q} over files 0 to {@code lastFile}:
   * a file read by no batch or by two, or out of order. Empty if none.
   */
  synchronized List<String> problems(String q, int lastFile) {
    List<String> problems = new ArrayList<>();
    int next = 0;
    for (Map.Entry<Long, List<Integer>> e : batches.get(q).entrySet()) {
      for (int f : e.getValue()) {
        if (f != next) {
          problems.add(q + " batch " + e.getKey() + " read file " + f + ", expected " + next);
        }
        next = f + 1;
      }
    }
    if (next != lastFile + 1) {
      problems.add(q + ": files read up to " + (next - 1) + ", expected " + lastFile);
    }
    return problems;
  }

  private static long logOffset(Path offsets) throws IOException {
    Matcher m = LOG_OFFSET.matcher(Files.readString(offsets, StandardCharsets.UTF_8));
    long found = -1;
    while (m.find()) { // the source's offset is the last line
      found = Long.parseLong(m.group(1));
    }
    if (found < 0) {
      throw new IllegalStateException(offsets + " has no logOffset");
    }
    return found;
  }

  /** Source log batch id to the file numbers it logged, from every file of the log. */
  private static Map<Long, List<Integer>> sourceLog(Path dir) throws IOException {
    Map<Long, List<Integer>> log = new TreeMap<>();
    List<Path> files;
    try (Stream<Path> s = Files.list(dir)) {
      files = s.filter(p -> p.getFileName().toString().matches("\\d+(\\.compact)?")).toList();
    }
    for (Path p : files) {
      for (String line : Files.readAllLines(p, StandardCharsets.UTF_8)) {
        Matcher f = FILE.matcher(line);
        Matcher b = BATCH_ID.matcher(line);
        if (f.find() && b.find()) {
          List<Integer> l = log.computeIfAbsent(Long.parseLong(b.group(1)), k -> new ArrayList<>());
          int file = Integer.parseInt(f.group(1));
          if (!l.contains(file)) {
            l.add(file);
          }
        }
      }
    }
    log.values().forEach(l -> l.sort(null));
    return log;
  }

  private static long newestLogged(Path dir) throws IOException {
    if (!Files.isDirectory(dir)) {
      return -1;
    }
    try (Stream<Path> s = Files.list(dir)) {
      return s.map(p -> p.getFileName().toString()).filter(n -> n.matches("\\d+"))
          .mapToLong(Long::parseLong).max().orElse(-1);
    }
  }
}
