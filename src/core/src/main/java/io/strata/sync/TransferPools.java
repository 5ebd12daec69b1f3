// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
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
 *   <li>{@link #background()}: the store's one thread for a snapshot a long cold load
 *       scheduled;
 *   <li>{@link #ingest()} and {@link #commitSnapshots()}: pools shared with other stores, held
 *       through a {@link SharedPools.Lease} that {@link #close()} ends (the owner stops their
 *       threads when its last lease ends).
 * </ul>
 */
final class TransferPools implements AutoCloseable {
  private final ThreadPoolExecutor transfers;
  /** The transfer pool's size without widenings ({@code transferThreads}). */
  private final int baseThreads;
  /** Widenings in force (guarded by {@code this}). */
  private int widenings;
  private final ThreadPoolExecutor background;
  private final SharedPools.Lease shared;
  /** The shared pools this store made for itself (none was passed), closed with it; or null. */
  private final SharedPools owned;

  /**
   * @param identity the store (in thread names)
   * @param transferThreads size of the transfer pool, &gt;= 1
   * @param shared the owner of the pools shared with other stores (borrowed: leased here, the
   *     lease ended by {@link #close()}), or null to make and own such pools (closed then too)
   * @throws IllegalStateException if {@code shared} is closed
   */
  TransferPools(StoreIdentity identity, int transferThreads, SharedPools shared) {
    AtomicInteger threadNo = new AtomicInteger();
    this.transfers = pool(transferThreads, 30, () -> "strata-transfer-" + identity.id() + "-"
        + threadNo.incrementAndGet());
    this.baseThreads = transferThreads;
    this.owned = shared == null ? new SharedPools() : null;
    this.shared = (shared == null ? owned : shared).lease();
    this.background = pool(1, 30, () -> "strata-snapshot-" + identity.id());
  }

  private ThreadPoolExecutor pool(int threads, long idleSeconds,
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
   * Most threads a widened transfer pool runs, as a multiple of {@code transferThreads}: a
   * cold restore's GETs (one per delta of its chain, plus the base's) run up to this many times
   * {@code transferThreads} at once.
   */
  static final int MAX_WIDTH_FACTOR = 4;

  /** A widening of the transfer pool ({@link #widenTransfers}); closing it ends it. */
  interface Widened extends AutoCloseable {
    @Override
    void close();
  }

  /**
   * Lets the transfer pool run up to {@code threads} tasks at once (at most {@link
   * #MAX_WIDTH_FACTOR} times its size, at least its size) until the returned handle is closed:
   * a restore's GETs are mostly small and latency-bound (a delta of a chain is one ranged GET
   * of a few KiB), so they all go in one round trip rather than one round trip per {@code
   * transferThreads} of them. Extra threads are made on demand and end 30 s after the last
   * widening closes, or when idle. Thread-safe; widenings may overlap (the widest applies).
   *
   * @param threads tasks wanted at once, &gt;= 1
   */
  Widened widenTransfers(int threads) {
    int wanted = Math.min(Math.max(threads, baseThreads), MAX_WIDTH_FACTOR * baseThreads);
    synchronized (this) {
      if (transfers.isShutdown()) {
        return () -> { };
      }
      widenings++;
      if (wanted > transfers.getMaximumPoolSize()) {
        transfers.setMaximumPoolSize(wanted); // first: the core size may not exceed it
        transfers.setCorePoolSize(wanted);
      }
    }
    java.util.concurrent.atomic.AtomicBoolean closed =
        new java.util.concurrent.atomic.AtomicBoolean();
    return () -> {
      if (closed.compareAndSet(false, true)) {
        narrowed();
      }
    };
  }

  /** Ends one widening; the last one to end sets the pool back to {@code transferThreads}. */
  private synchronized void narrowed() {
    if (--widenings == 0 && !transfers.isShutdown()) {
      transfers.setCorePoolSize(baseThreads); // first: the core size may not exceed the max
      transfers.setMaximumPoolSize(baseThreads);
    }
  }

  /**
   * The store's one background thread for a base snapshot a cold load scheduled (its uploads
   * then run on {@link #transfers()}): never the task thread, never the commit path.
   */
  ExecutorService background() {
    return background;
  }

  /** The pool for the local ingestion of commits (shared). */
  ExecutorService ingest() {
    return shared.ingest();
  }

  /** The pool for base snapshots that commits start (shared). */
  ExecutorService commitSnapshots() {
    return shared.commitSnapshots();
  }

  /** True once {@link #close()} ran: nothing more can be submitted. */
  boolean closed() {
    return transfers.isShutdown();
  }

  /**
   * Interrupts running transfers and cancels queued ones (so a thread waiting on one wakes up
   * instead of hanging), and ends this store's lease of the shared pools (the store waits for
   * its last ingestion before it closes, so none of them runs). Does not wait. Idempotent.
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
    shared.close();
    if (owned != null) {
      owned.close();
    }
  }
}
