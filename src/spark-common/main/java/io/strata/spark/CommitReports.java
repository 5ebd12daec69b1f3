// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs a commit's report to Spark's state store coordinator (Spark 4.1+, {@code
 * StateStore.reportCommitToCoordinator}) beside the commit's PUT, so that the report's RPC round
 * trip overlaps the upload instead of following it. {@code commit()} still returns only after both
 * are done.
 *
 * <p>Why reporting before the PUT has succeeded is safe: the coordinator only records the report
 * (Spark 4.1's {@code ReportStateStoreCommit} adds the store to the batch's tracker, if the batch
 * is tracked at all), and it checks the tracker ({@code ValidateStateStoreCommitForBatch}) only
 * after the batch's job succeeded. A job succeeds only if every task succeeded, and a task whose
 * commit failed has thrown from {@code commit()}; its retry commits and reports again. So a report
 * for a commit that then failed can never make a batch pass validation that a store did not
 * commit. What the validation exists to catch, a store that was opened but never committed (for
 * example a {@code foreachBatch} that does not read every partition), never reaches {@code
 * commit()} and so is never reported.
 *
 * <p>Threads: daemons, created as needed (at most one report per task slot runs at a time) and
 * gone after 60 s idle. The report itself never throws (Spark logs and swallows its failures).
 */
final class CommitReports {
  private static final Logger LOG = LoggerFactory.getLogger(CommitReports.class);
  private static final AtomicInteger THREADS = new AtomicInteger();
  private static final ThreadPoolExecutor POOL = new ThreadPoolExecutor(0, Integer.MAX_VALUE,
      60, TimeUnit.SECONDS, new SynchronousQueue<>(), r -> {
        Thread t = new Thread(r, "strata-commit-report-" + THREADS.incrementAndGet());
        t.setDaemon(true);
        return t;
      });

  private CommitReports() { }

  /**
   * Starts {@code report} on a report thread.
   *
   * @return its future, or null if no thread could take it (the caller then reports itself)
   */
  static Future<?> start(Runnable report) {
    try {
      return POOL.submit(report);
    } catch (RejectedExecutionException | OutOfMemoryError e) { // no native thread left
      LOG.debug("cannot start a commit report thread; reporting on the task thread", e);
      return null;
    }
  }

  /**
   * Waits for a report started by {@link #start}, uninterruptibly (it is bounded by Spark's RPC
   * ask timeout); an interrupt that arrives meanwhile is kept for the caller.
   *
   * @return true if it ran to its end; false if it failed with an error (logged), so the caller
   *     reports again
   */
  static boolean await(Future<?> report) {
    boolean interrupted = false;
    try {
      while (true) {
        try {
          report.get();
          return true;
        } catch (InterruptedException e) {
          interrupted = true;
        } catch (ExecutionException e) {
          LOG.warn("The commit report to Spark's state store coordinator failed; reporting again",
              e.getCause());
          return false;
        }
      }
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }
}
