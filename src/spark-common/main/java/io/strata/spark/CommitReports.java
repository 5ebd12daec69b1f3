// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import java.util.concurrent.CancellationException;
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
 * StateStore.reportCommitToCoordinator}) after the commit has returned, and makes the task wait for
 * it before the task ends.
 *
 * <p><b>Why the report may leave {@code commit()}.</b> The report is started only once the
 * version's PUT has succeeded, so it is never sent for a version that is not committed, and it
 * cannot be taken back because it never needs to be. The coordinator checks a batch's reports
 * ({@code ValidateStateStoreCommitForBatch}) only after the batch's job has succeeded, and a task
 * counts as succeeded only after its completion listeners have run ({@code Task.run}). The
 * store's completion listener waits for the report, so every report of a batch reaches the
 * coordinator before that batch is validated, as when Spark's own providers send it from inside
 * {@code commit()}. What moves is only where the task waits for the RPC: after {@code commit()}
 * instead of inside it, beside whatever the task still does after the commit.
 *
 * <p><b>Interrupts.</b> The wait at the end of the task gives way to an interrupt (a killed task),
 * unlike Spark's {@code askSync} inside {@code commit()}. The report then still runs to its end on
 * its thread; it is true, since the version is committed.
 *
 * <p>Threads: daemons, created as needed (at most one report per task slot and store runs at a
 * time) and gone after 60 s idle. A report never throws (Spark logs and swallows its failures).
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
   * Waits for a report started by {@link #start}. Bounded by Spark's RPC ask timeout ({@code
   * spark.rpc.askTimeout}), which bounds the report itself.
   *
   * @param what the store and version, for the log line of an interrupted wait
   * @return true if the report ran to its end, false if the wait was interrupted (the interrupt is
   *     kept for the caller) or the report failed with an error (logged)
   */
  static boolean await(Future<?> report, String what) {
    try {
      report.get();
      return true;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      LOG.info("{}: the task was interrupted while its commit report to Spark's state store "
          + "coordinator was in flight; the report completes on its own thread", what);
      return false;
    } catch (ExecutionException | CancellationException e) {
      LOG.warn("{}: the commit report to Spark's state store coordinator failed", what,
          e instanceof ExecutionException ? e.getCause() : e);
      return false;
    }
  }
}
