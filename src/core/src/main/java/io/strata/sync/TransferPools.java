// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The thread pools of one store, shut down (or released) by {@link #close()} when the store
 * closes, so a provider loaded and unloaded many times in one JVM leaves no thread behind.
 * Threads are daemons, made on demand and gone when idle.
 *
 * <ul>
 *   <li>{@link #transfers()}: the store's own {@code transferThreads} threads for the downloads
 *       of a restore, the uploads of a base snapshot and the manifest reads of a
 *       garbage-collection round (idle 30 s);
 *   <li>{@link #ingest()}: the local ingestion of each commit after its PUT succeeded, on a
 *       cached pool shared by the JVM's open stores (one thread per commit in flight, idle 60 s),
 *       separate from the transfers so that a commit never queues behind a snapshot upload. Its
 *       owner is the set of open stores: each holds a lease, and the last one to close shuts it
 *       down.
 * </ul>
 */
final class TransferPools implements AutoCloseable {
  private final ThreadPoolExecutor transfers;
  private final ThreadPoolExecutor ingest;
  private final ThreadPoolExecutor background;
  private final AtomicBoolean released = new AtomicBoolean();

  /**
   * @param identity the store (in thread names)
   * @param transferThreads size of the transfer pool, &gt;= 1
   */
  TransferPools(StoreIdentity identity, int transferThreads) {
    AtomicInteger threadNo = new AtomicInteger();
    this.transfers = pool(transferThreads, 30, () -> "strata-transfer-" + identity.id() + "-"
        + threadNo.incrementAndGet());
    this.ingest = SharedIngest.acquire();
    this.background = pool(1, 30, () -> "strata-snapshot-" + identity.id());
  }

  /** The shared ingestion pool: created by the first lease, shut down when the last ends. */
  private static final class SharedIngest {
    private static final AtomicInteger THREADS = new AtomicInteger();
    private static ThreadPoolExecutor pool;
    private static int leases;

    static synchronized ThreadPoolExecutor acquire() {
      if (pool == null) {
        pool = new ThreadPoolExecutor(0, Integer.MAX_VALUE, 60, TimeUnit.SECONDS,
            new SynchronousQueue<>(), r -> {
              Thread t = new Thread(r, "strata-commit-ingest-" + THREADS.incrementAndGet());
              t.setDaemon(true);
              return t;
            });
      }
      leases++;
      return pool;
    }

    /** Ends a lease of {@code p}; the last one stops the pool once its tasks, if any, end. */
    static synchronized void release(ThreadPoolExecutor p) {
      if (p == pool && --leases == 0) {
        pool.shutdown();
        pool = null;
      }
    }
  }

  private static ThreadPoolExecutor pool(int threads, long idleSeconds,
      java.util.function.Supplier<String> names) {
    ThreadPoolExecutor pool = new ThreadPoolExecutor(threads, threads, idleSeconds,
        TimeUnit.SECONDS, new LinkedBlockingQueue<>(), r -> {
          Thread t = new Thread(r, names.get());
          t.setDaemon(true);
          return t;
        });
    pool.allowCoreThreadTimeOut(true);
    return pool;
  }

  /** The pool for restore downloads, snapshot uploads and GC manifest reads. */
  ExecutorService transfers() {
    return transfers;
  }

  /**
   * The store's one background thread for a base snapshot a cold load scheduled (its uploads
   * then run on {@link #transfers()}): never the task thread, never the commit path.
   */
  ExecutorService background() {
    return background;
  }

  /** The pool for the local ingestion of commits. */
  ExecutorService ingest() {
    return ingest;
  }

  /** True once {@link #close()} ran: nothing more can be submitted. */
  boolean closed() {
    return transfers.isShutdown();
  }

  /**
   * Interrupts running transfers and cancels queued ones (so a thread waiting on one wakes up
   * instead of hanging), and releases this store's lease of the ingestion pool (the store waits
   * for its last ingestion before it closes, so none of them runs). Does not wait. Idempotent.
   */
  @Override
  public void close() {
    for (Runnable queued : background.shutdownNow()) {
      if (queued instanceof Future<?> f) {
        f.cancel(true);
      }
    }
    for (Runnable queued : transfers.shutdownNow()) {
      if (queued instanceof Future<?> f) {
        f.cancel(true);
      }
    }
    if (released.compareAndSet(false, true)) {
      SharedIngest.release(ingest);
    }
  }
}
