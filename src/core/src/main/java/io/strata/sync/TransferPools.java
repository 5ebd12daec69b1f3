package io.strata.sync;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The thread pools of one store, owned here and shut down by {@link #close()} (when the store
 * closes): nothing static, so a provider loaded and unloaded many times in one JVM leaves no
 * thread behind. Threads are daemons, made on demand and gone when idle.
 *
 * <ul>
 *   <li>{@link #transfers()}: {@code transferThreads} threads for the downloads of a restore, the
 *       uploads of a base snapshot and the manifest reads of a garbage-collection round (idle
 *       30 s);
 *   <li>{@link #ingest()}: one thread for the local ingestion of each commit while its PUT is
 *       in flight (idle 60 s), separate so that a commit never queues behind a snapshot upload.
 * </ul>
 */
final class TransferPools implements AutoCloseable {
  private final ThreadPoolExecutor transfers;
  private final ThreadPoolExecutor ingest;

  /**
   * @param identity the store (in thread names)
   * @param transferThreads size of the transfer pool, &gt;= 1
   */
  TransferPools(StoreIdentity identity, int transferThreads) {
    AtomicInteger threadNo = new AtomicInteger();
    this.transfers = pool(transferThreads, 30, () -> "strata-transfer-" + identity.id() + "-"
        + threadNo.incrementAndGet());
    this.ingest = pool(1, 60, () -> "strata-commit-ingest-" + identity.id());
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
   * instead of hanging), and stops the ingestion pool once its task, if any, ends (the store
   * closes only between commits, so none runs). Does not wait. Idempotent.
   */
  @Override
  public void close() {
    for (Runnable queued : transfers.shutdownNow()) {
      if (queued instanceof Future<?> f) {
        f.cancel(true);
      }
    }
    ingest.shutdown();
  }
}
