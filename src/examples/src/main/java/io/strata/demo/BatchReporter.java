// SPDX-License-Identifier: Apache-2.0
package io.strata.demo;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.spark.sql.streaming.SourceProgress;
import org.apache.spark.sql.streaming.StateOperatorProgress;
import org.apache.spark.sql.streaming.StreamingQueryListener;
import org.apache.spark.sql.streaming.StreamingQueryProgress;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Prints one line per micro-batch of every query: batch id, input files done, rows in, state
 * rows (sum of the state operators' {@code numRowsTotal}), the median and maximum commit time
 * over the batch's state store partitions (from {@link CommitTimes}), and the bytes and requests
 * the provider sent to S3 (its custom metrics {@value #BYTES_METRIC} and {@value
 * #REQUESTS_METRIC}, or "n/a" when it does not report them). Also keeps per-query totals.
 *
 * <p>Owns one printer thread (so Spark's listener threads never wait), stopped by {@link
 * #close()}.
 */
final class BatchReporter extends StreamingQueryListener implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(BatchReporter.class);

  /** Strata's custom state store metric: bytes uploaded to the object store in the batch. */
  static final String BYTES_METRIC = "strataBytesUploaded";

  /** Strata's custom state store metric: requests sent to the object store in the batch. */
  static final String REQUESTS_METRIC = "strataS3Requests";

  private static final Pattern LOG_OFFSET = Pattern.compile("\"logOffset\"\\s*:\\s*(-?\\d+)");
  private static final long COMMIT_TIMES_WAIT_MS = 5_000;

  private final PrintStream out;
  private final int totalFiles;
  private final CommitTimes commitTimes = new CommitTimes();
  private final ExecutorService printer =
      Executors.newSingleThreadExecutor(
          r -> {
            Thread t = new Thread(r, "strata-demo-batch-printer");
            t.setDaemon(true);
            return t;
          });
  private final Map<String, QueryTotals> totals = new ConcurrentHashMap<>();
  private final List<Future<?>> pending = Collections.synchronizedList(new ArrayList<>());

  /** Totals of one query in one session. Mutated only on the printer thread. */
  static final class QueryTotals {
    long firstBatch = -1;
    long lastBatch = -1;
    int batches;
    long rowsIn;
    volatile long filesDone;
    StreamingQueryProgress lastProgress;
    final List<Long> commitMs = new ArrayList<>();
    long s3Bytes;
    long s3Requests;
    boolean s3Reported;
    /** One entry per batch, in batch order, for the report's plots. */
    final List<Batch> perBatch = new ArrayList<>();
  }

  /**
   * One batch of one query, as the report plots it.
   *
   * @param batchId Spark's batch id
   * @param commitP50Ms the median of the batch's per-partition commit times, ms; -1 if none
   * @param s3Requests S3 requests the batch's state stores made (Strata's {@code
   *     strataS3Requests}); -1 if the provider does not report it
   */
  record Batch(long batchId, long commitP50Ms, long s3Requests) { }

  BatchReporter(PrintStream out, int totalFiles) {
    this.out = out;
    this.totalFiles = totalFiles;
  }

  /** The Spark listener that collects per-partition commit times; register it too. */
  CommitTimes commitTimes() {
    return commitTimes;
  }

  /** Files of the input the query has finished (0 before its first batch). */
  long filesDone(String query) {
    QueryTotals t = totals.get(query);
    return t == null ? 0 : t.filesDone;
  }

  /** The query's totals so far; call {@link #drain()} first for a settled view. */
  QueryTotals totals(String query) {
    return totals.computeIfAbsent(query, q -> new QueryTotals());
  }

  @Override
  public void onQueryStarted(QueryStartedEvent event) {}

  @Override
  public void onQueryProgress(QueryProgressEvent event) {
    StreamingQueryProgress p = event.progress();
    QueryTotals t = totals(p.name());
    long files = filesDone(p);
    if (files > t.filesDone) {
      t.filesDone = files; // read by the demo's driver loop right away
    }
    pending.add(printer.submit(() -> print(p, t, files)));
  }

  @Override
  public void onQueryTerminated(QueryTerminatedEvent event) {
    // Spark logs a failure itself, and the demo rethrows it.
  }

  private void print(StreamingQueryProgress p, QueryTotals t, long files) {
    long stores = 0;
    long stateRows = 0;
    long bytes = 0;
    long requests = 0;
    boolean reported = false;
    for (StateOperatorProgress op : p.stateOperators()) {
      stores += op.numStateStoreInstances();
      stateRows += op.numRowsTotal();
      Map<String, Long> m = op.customMetrics();
      if (m != null && m.containsKey(BYTES_METRIC)) {
        reported = true;
        bytes += m.get(BYTES_METRIC);
        requests += m.getOrDefault(REQUESTS_METRIC, 0L);
      }
    }
    List<Long> commits;
    try {
      commits =
          stores == 0
              ? List.of()
              : commitTimes.await(p.id().toString(), p.batchId(), stores, COMMIT_TIMES_WAIT_MS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return;
    }
    if (t.firstBatch < 0) {
      t.firstBatch = p.batchId();
    }
    t.lastBatch = p.batchId();
    t.batches++;
    t.rowsIn += p.numInputRows();
    t.lastProgress = p;
    t.commitMs.addAll(commits);
    t.perBatch.add(new Batch(p.batchId(), commits.isEmpty() ? -1 : percentile(commits, 50),
        reported ? requests : -1));
    if (reported) {
      t.s3Reported = true;
      t.s3Bytes += bytes;
      t.s3Requests += requests;
    }
    // Fewer commit times than stores: some task-end events did not arrive in time; say so.
    String partial = commits.size() < stores ? " (" + commits.size() + "/" + stores + ")" : "";
    out.println(
        String.format(
            Locale.ROOT,
            "%-16s batch %3d  file %3d/%d  in %,8d  state %,10d  commit p50 %s max %s%s  S3 %s",
            p.name(),
            p.batchId(),
            files,
            totalFiles,
            p.numInputRows(),
            stateRows,
            ms(percentile(commits, 50)),
            ms(percentile(commits, 100)),
            partial,
            reported ? s3(bytes, requests) : "n/a"));
  }

  /** Waits until every line of the progress seen so far is printed. */
  void drain() throws InterruptedException {
    List<Future<?>> copy;
    synchronized (pending) {
      copy = new ArrayList<>(pending);
      pending.clear();
    }
    for (Future<?> f : copy) {
      try {
        f.get();
      } catch (java.util.concurrent.ExecutionException e) {
        LOG.warn("Cannot print a batch line: {}", e.getCause().toString());
      }
    }
  }

  @Override
  public void close() {
    printer.shutdown();
    try {
      if (!printer.awaitTermination(10, TimeUnit.SECONDS)) {
        printer.shutdownNow();
      }
    } catch (InterruptedException e) {
      printer.shutdownNow();
      Thread.currentThread().interrupt();
    }
  }

  private static long filesDone(StreamingQueryProgress p) {
    SourceProgress[] sources = p.sources();
    if (sources.length == 0 || sources[0].endOffset() == null) {
      return 0;
    }
    Matcher m = LOG_OFFSET.matcher(sources[0].endOffset());
    return m.find() ? Long.parseLong(m.group(1)) + 1 : 0;
  }

  /** Nearest-rank percentile; -1 for no values. */
  static long percentile(List<Long> values, int pct) {
    if (values.isEmpty()) {
      return -1;
    }
    List<Long> sorted = new ArrayList<>(values);
    Collections.sort(sorted);
    int rank = (int) Math.ceil(pct / 100.0 * sorted.size());
    return sorted.get(Math.max(0, rank - 1));
  }

  static String ms(long v) {
    return v < 0 ? "   n/a" : String.format(Locale.ROOT, "%4d ms", v);
  }

  static String s3(long bytes, long requests) {
    return String.format(Locale.ROOT, "%s in %,d requests", bytes(bytes), requests);
  }

  static String bytes(long b) {
    if (b < 1024) {
      return b + " B";
    }
    if (b < 1024 * 1024) {
      return String.format(Locale.ROOT, "%.1f KiB", b / 1024.0);
    }
    if (b < 1024L * 1024 * 1024) {
      return String.format(Locale.ROOT, "%.1f MiB", b / (1024.0 * 1024));
    }
    return String.format(Locale.ROOT, "%.2f GiB", b / (1024.0 * 1024 * 1024));
  }
}
