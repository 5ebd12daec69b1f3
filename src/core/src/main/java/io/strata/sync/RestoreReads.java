// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import io.strata.format.Manifest;
import io.strata.objectstore.ObjectInfo;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The object-store reads a cold load needs before its downloads, started at once rather than one
 * after another: the LIST of the version's prefix {@code v/<version>/} (unless Spark named the
 * attempt), the tail GET of the key that LIST most likely picks ({@link
 * VersionObjectReader#likelyKey}), and the LIST of the store's published snapshots ({@code b/},
 * {@link PublishedSnapshots#list}). They run on the store's transfer pool while the load's
 * thread finds or claims the query run's epoch ({@link CommitConflicts}); the load's thread then
 * reads the manifest with them ({@link #manifest}: {@link VersionObjectReader.Ahead}), sending a
 * request of its own only where a guess missed. On S3 (15 to 30 ms a request) a cold load thus
 * waits for the longest of these requests instead of the sum of four.
 *
 * <p>None of the reads changes anything, so a load that fails or is interrupted abandons them at
 * any point ({@link #close}: cancelled with interruption). No pool task waits for another, so
 * one transfer thread is enough. Owned by one load, on the thread that holds the store's
 * monitor; not shared.
 */
final class RestoreReads implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(RestoreReads.class);

  private final StoreIdentity identity;
  private final long version;
  private final Optional<String> attempt;
  private final VersionObjectReader reader;
  /** The LIST of {@code v/<version>/}, or null when Spark named the attempt. */
  private final Future<List<ObjectInfo>> versionListing;
  /** The key whose tail {@link #tail} holds, or null. */
  private final String likelyKey;
  private final Future<byte[]> tail;
  private final Future<List<ObjectInfo>> published;
  private final List<Future<?>> started;

  private RestoreReads(StoreIdentity identity, long version, Optional<String> attempt,
      VersionObjectReader reader, Future<List<ObjectInfo>> versionListing, String likelyKey,
      Future<byte[]> tail, Future<List<ObjectInfo>> published, List<Future<?>> started) {
    this.identity = identity;
    this.version = version;
    this.attempt = attempt;
    this.reader = reader;
    this.versionListing = versionListing;
    this.likelyKey = likelyKey;
    this.tail = tail;
    this.published = published;
    this.started = started;
  }

  /**
   * Starts the reads of a cold load of {@code version} on {@code pool}.
   *
   * @param attempt the checkpoint id Spark passed (its version object needs no LIST, and its
   *     tail is read by {@link #manifest}), or empty
   * @param withRun true if the store commits under a query run's epoch (which key a version's
   *     first commit creates)
   * @throws java.util.concurrent.RejectedExecutionException if the pool is shut down (the store
   *     is closing); nothing is left running then
   */
  static RestoreReads start(StoreIdentity identity, long version, Optional<String> attempt,
      boolean withRun, VersionObjectReader reader, PublishedSnapshots snapshots,
      ExecutorService pool) {
    List<Future<?>> started = new ArrayList<>();
    try {
      Future<List<ObjectInfo>> listing = null;
      String likely = null;
      Future<byte[]> tail = null;
      if (attempt.isEmpty()) {
        listing = submit(pool, started, () -> reader.listVersion(version));
        likely = reader.likelyKey(version, withRun).orElse(null);
        if (likely != null) {
          String key = likely;
          tail = submit(pool, started, () -> reader.fetchTail(key));
        }
      }
      Future<List<ObjectInfo>> b = submit(pool, started, snapshots::list);
      return new RestoreReads(identity, version, attempt, reader, listing, likely, tail, b,
          started);
    } catch (RuntimeException e) {
      started.forEach(f -> f.cancel(true));
      throw e;
    }
  }

  private static <T> Future<T> submit(ExecutorService pool, List<Future<?>> started,
      java.util.concurrent.Callable<T> task) {
    Future<T> f = pool.submit(task);
    started.add(f);
    return f;
  }

  /**
   * The version's manifest, read as {@link VersionObjectReader#readForLoad} reads it, from the
   * reads started ahead where they serve.
   *
   * @throws StateLoadException as {@link VersionObjectReader#readForLoad}
   * @throws InterruptedIOException if the thread is interrupted while it waits (the flag is set
   *     again)
   * @throws IOException as {@link VersionObjectReader#readForLoad}
   */
  Manifest manifest() throws IOException {
    return reader.readForLoad(version, attempt, new VersionObjectReader.Ahead() {
      @Override
      public List<ObjectInfo> versionListing() throws IOException {
        if (versionListing == null) {
          return null;
        }
        try {
          return versionListing.get();
        } catch (ExecutionException e) {
          throw Futures.rethrow("").apply(e.getCause());
        } catch (InterruptedException e) {
          throw interrupted();
        }
      }

      @Override
      public byte[] tail(String key) throws IOException {
        if (tail == null || !key.equals(likelyKey)) {
          return null;
        }
        try {
          return tail.get();
        } catch (ExecutionException e) {
          return null; // the reader's own GET reports what is wrong
        } catch (InterruptedException e) {
          throw interrupted();
        }
      }
    });
  }

  private InterruptedIOException interrupted() {
    close();
    Thread.currentThread().interrupt();
    return new InterruptedIOException("Interrupted while reading the manifest of " + identity
        + " version " + version);
  }

  /**
   * The listing of {@code b/} (keys relative to the store's root), or empty if it failed: a
   * listing problem is logged and the load restores from the manifest's own chain, as {@link
   * PublishedSnapshots#find(Manifest)} does. Empty as well if the thread is interrupted (its
   * flag is set again: the restore then stops at its first wait).
   */
  Optional<List<ObjectInfo>> publishedListing() {
    try {
      return Optional.of(published.get());
    } catch (InterruptedException e) {
      published.cancel(true);
      Thread.currentThread().interrupt();
      return Optional.empty();
    } catch (ExecutionException e) {
      LOG.warn("{} version {}: cannot list the published snapshots ({}); restoring from the "
          + "manifest's own chain", identity, version, e.getCause().toString());
      return Optional.empty();
    }
  }

  /** Cancels whatever is still running (no effect on reads already done). */
  @Override
  public void close() {
    started.forEach(f -> f.cancel(true));
  }
}
