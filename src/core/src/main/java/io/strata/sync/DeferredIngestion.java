// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import io.strata.engine.DeltaFile;
import io.strata.engine.LocalStore;
import io.strata.objectstore.ObjectStore;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.FutureTask;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * When the last commit of one {@link SyncedStore} is ingested into its local database: the one
 * owner of that decision. A commit prepares the ingestion once its PUT succeeded ({@link
 * #prepare}); it runs on the ingest threads when the committer starts it ({@link #start}, after
 * what it still does for the commit), or on the thread of the store's next call that needs the
 * local database ({@link #settle}). Until then the database's pending writes still hold the
 * version's writes, so reads are right either way. If the ingestion fails, the version stays
 * committed in the object store and the local database is dropped: the next load restores it
 * from there. The work itself is {@link LocalIngestion}'s.
 *
 * <p>Threading: {@link #prepare} and {@link #settle} run under the store's {@link StoreGuard}
 * (asserted); {@link #start} and {@link #pending()} need no monitor.
 */
final class DeferredIngestion {
  private static final Logger LOG = LoggerFactory.getLogger(DeferredIngestion.class);

  /** A prepared ingestion of {@code version}, committed at {@code key}. */
  private record Pending(long version, String key, FutureTask<LocalIngestion.Done> task) {
  }

  private final StoreIdentity identity;
  private final ObjectStore objects;
  private final LocalDatabase db;
  private final StoreGuard guard;
  private final ExecutorService threads;
  private final Runnable dropLocal;
  /**
   * The last commit's ingestion while it may still run; volatile so that reads and writes can
   * test it without the monitor ({@link #pending()}).
   */
  private volatile Pending pending;
  /** How long the last settled ingestion took, ns; reported by the next commit. */
  private long lastNanos;

  /**
   * @param identity the store (in messages)
   * @param objects the store's object store (to describe keys)
   * @param db the live local database, stamped after an ingestion
   * @param guard the store's monitor
   * @param threads the ingest threads (leased by the store)
   * @param dropLocal drops the live database (under the monitor) when its ingestion failed
   */
  DeferredIngestion(StoreIdentity identity, ObjectStore objects, LocalDatabase db,
      StoreGuard guard, ExecutorService threads, Runnable dropLocal) {
    this.identity = identity;
    this.objects = objects;
    this.db = db;
    this.guard = guard;
    this.threads = threads;
    this.dropLocal = dropLocal;
  }

  /**
   * After the PUT that committed {@code version} at {@code key}: runs {@code label} (which labels
   * the local side with the committed version: its column families, base and database), then
   * prepares, without starting it, the ingestion of {@code d} into {@code l}, which then owns the
   * delta file. The database is labelled before the ingestion starts, so that any failure from
   * here on drops it rather than leave the old label on the new writes.
   *
   * @return true if the ingestion is prepared; false if labelling or preparing failed: the
   *     version is committed, only the local side failed, and the local database is dropped
   *     (the next load restores the version from the object store)
   * @throws Error as thrown, after dropping the local database
   */
  boolean afterPut(long version, String key, LocalStore l, CommitDelta d, Runnable label) {
    guard.assertHeld();
    try {
      label.run();
      prepare(version, key, l, d.delta(), d.tmp());
      return true;
    } catch (RuntimeException e) {
      LOG.warn("{} version {}: committed to {} but its local ingestion could not be prepared; "
          + "the next load restores it from the object store", identity, version,
          objects.describe(key), e);
      dropLocal.run();
      return false;
    } catch (Error e) { // never keep the new label without its ingestion
      dropLocal.run();
      throw e;
    }
  }

  private void prepare(long version, String key, LocalStore l, Optional<DeltaFile> delta,
      Path tmp) {
    pending = new Pending(version, key, LocalIngestion.prepare(l, delta, tmp));
  }

  /**
   * How long the last settled ingestion took, ns (0 once reported, or if none ran); resets it.
   */
  long takeLastNanos() {
    guard.assertHeld();
    long n = lastNanos;
    lastNanos = 0;
    return n;
  }

  /**
   * {@link #settle()} for callers that do not hold the monitor (reads, writes, tests): takes it
   * only while an ingestion is pending.
   */
  void awaitSettled() {
    if (pending != null) {
      synchronized (guard) {
        settle();
      }
    }
  }

  /**
   * The live database once the last commit's ingestion settled ({@link #awaitSettled()}): for
   * the reads and writes, which hold no monitor.
   *
   * @throws IllegalStateException if no version is loaded (or the ingestion failed)
   */
  LocalStore settledLive() {
    awaitSettled();
    return db.require();
  }

  /**
   * Starts the last commit's ingestion on the ingest threads, if it has not started. Never
   * throws; needs no monitor (see {@link SyncedStore#startLocalIngestion()}).
   */
  void start() {
    Pending p = pending;
    if (p != null) {
      LocalIngestion.start(threads, p.task());
    }
  }

  /**
   * Waits for the last commit's ingestion, if one is still pending (running it on this thread
   * if it has not started), and completes the local side of that commit (the SST stamps of the
   * database that now holds it). If it failed, the local database is dropped (if it still
   * holds that version). Never throws but for the assertion.
   *
   * @throws IllegalStateException if the caller does not hold the store's monitor
   */
  void settle() {
    guard.assertHeld();
    Pending p = pending;
    if (p == null) {
      return;
    }
    LocalIngestion.Done done;
    try {
      done = LocalIngestion.await(p.task());
    } catch (IOException | RuntimeException e) {
      LOG.warn("{} version {}: committed to {} but its local ingestion failed; the next load "
          + "restores it from the object store", identity, p.version(), objects.describe(p.key()),
          e);
      if (db.version() == p.version()) {
        dropLocal.run();
      }
      pending = null;
      return;
    }
    // Cleared only now: pending() lets callers skip the monitor while this is null, so it must
    // not be null while another thread still waits here.
    pending = null;
    lastNanos = done.nanos();
    if (db.version() == p.version()) {
      db.ingested(done);
    }
  }
}
