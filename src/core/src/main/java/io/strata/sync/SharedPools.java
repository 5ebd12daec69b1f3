// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The thread pools that several {@link SyncedStore}s share, and their owner: stores {@link
 * #lease()} them, and the threads stop when the last lease ends or when this owner is closed,
 * so a provider loaded and unloaded many times in one JVM leaves no thread behind. There is no
 * JVM-wide instance in strata-core: the caller that wants the stores of a JVM to share pools
 * (the Spark layer) holds one owner for them and passes it to every store; a store built
 * without one owns its own ({@link SyncedStore#SyncedStore(StoreIdentity,
 * io.strata.objectstore.ObjectStore, java.nio.file.Path, StoreSettings, String, String)}).
 *
 * <p>The pools, created by the first lease (again after the last one ended), daemons:
 *
 * <ul>
 *   <li><b>ingest</b>: the local ingestion of each commit after its PUT succeeded ({@link
 *       DeferredIngestion}), a cached pool (one thread per commit in flight, idle 60 s), apart
 *       from any store's transfers so that a commit never queues behind a snapshot upload;
 *   <li><b>commit snapshots</b>: the base snapshots that commits start ({@link
 *       SnapshotScheduler}), at most {@value #COMMIT_SNAPSHOTS_AT_ONCE} at once for
 *       all the sharing stores (every store of a query reaches the snapshot interval on the same
 *       batch, and their uploads must not take every connection the next batch's commits need);
 *       idle threads end after 30 s.
 * </ul>
 *
 * <p>Thread-safe. Ending the last lease, or {@link #close()}, shuts the pools down without
 * interrupting what runs: queued tasks still run (a store closes after its last ingestion, and
 * a queued commit snapshot of a closed store does nothing).
 */
public final class SharedPools implements AutoCloseable {
  /** Base snapshots started by commits that run at once, for all the sharing stores together. */
  public static final int COMMIT_SNAPSHOTS_AT_ONCE = 4;

  private final AtomicInteger ingestThreads = new AtomicInteger();
  private final AtomicInteger snapshotThreads = new AtomicInteger();
  // Guarded by this.
  private ThreadPoolExecutor ingest;
  private ThreadPoolExecutor commitSnapshots;
  private int leases;
  private boolean closed;

  /**
   * An owner with no threads yet. Its threads are named {@code strata-commit-ingest-<n>} and
   * {@code strata-commit-snapshot-<n>}.
   */
  public SharedPools() {
  }

  /**
   * A lease of the pools, held by one store from its construction to its close: starts the
   * pools if no lease is held.
   *
   * @return the lease; its {@link Lease#close()} ends it
   * @throws IllegalStateException if this owner is closed
   */
  public synchronized Lease lease() {
    if (closed) {
      throw new IllegalStateException("Cannot lease the shared pools: closed");
    }
    if (leases++ == 0) {
      ingest = new ThreadPoolExecutor(0, Integer.MAX_VALUE, 60, TimeUnit.SECONDS,
          new SynchronousQueue<>(), r -> daemon(r, "strata-commit-ingest-"
              + ingestThreads.incrementAndGet()));
      commitSnapshots = new ThreadPoolExecutor(COMMIT_SNAPSHOTS_AT_ONCE,
          COMMIT_SNAPSHOTS_AT_ONCE, 30, TimeUnit.SECONDS, new LinkedBlockingQueue<>(),
          r -> daemon(r, "strata-commit-snapshot-"
              + snapshotThreads.incrementAndGet()));
      commitSnapshots.allowCoreThreadTimeOut(true);
    }
    return new Lease(ingest, commitSnapshots);
  }

  /** Leases held now (for tests and diagnostics). */
  public synchronized int leases() {
    return leases;
  }

  /**
   * Closes the owner: shuts the pools down (queued tasks still run; nothing is interrupted) and
   * refuses new leases. The leases still held stay valid handles, but their pools accept no
   * more work: a store then runs its ingestion on its own thread and skips commit snapshots.
   * Idempotent.
   */
  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    shutDown();
  }

  private synchronized void release(ThreadPoolExecutor leasedIngest) {
    if (leasedIngest == ingest && --leases == 0) {
      shutDown();
    }
  }

  private void shutDown() {
    if (ingest != null) {
      ingest.shutdown();
      commitSnapshots.shutdown();
      ingest = null;
      commitSnapshots = null;
    }
  }

  private static Thread daemon(Runnable r, String threadName) {
    Thread t = new Thread(r, threadName);
    t.setDaemon(true);
    return t;
  }

  /**
   * One store's use of the shared pools, from {@link SharedPools#lease()} to {@link #close()}.
   * Its pools are the owner's at the time of the lease.
   */
  public final class Lease implements AutoCloseable {
    private final ThreadPoolExecutor ingest;
    private final ThreadPoolExecutor commitSnapshots;
    private final AtomicBoolean released = new AtomicBoolean();

    private Lease(ThreadPoolExecutor ingest, ThreadPoolExecutor commitSnapshots) {
      this.ingest = ingest;
      this.commitSnapshots = commitSnapshots;
    }

    /** The pool for the local ingestion of commits. */
    ExecutorService ingest() {
      return ingest;
    }

    /** The pool for base snapshots that commits start. */
    ExecutorService commitSnapshots() {
      return commitSnapshots;
    }

    /**
     * Ends the lease; the last one shuts the pools down once their tasks, if any, end.
     * Idempotent.
     */
    @Override
    public void close() {
      if (released.compareAndSet(false, true)) {
        release(ingest);
      }
    }
  }
}
