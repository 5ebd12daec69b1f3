// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import io.strata.format.Manifest;
import io.strata.objectstore.ObjectInfo;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The object-store reads a restore needs before its downloads, started at once rather than one
 * after another: the version's manifest ({@link VersionObjectReader#readForLoad}: a LIST of
 * {@code v/<version>/} unless the checkpoint id names the object, then a tail GET) and the
 * listing of the store's published snapshots ({@link PublishedSnapshots#list}: one LIST of
 * {@code b/}). They run on the store's transfer pool while the load's thread finds or claims the
 * query run's epoch ({@link CommitConflicts}), so on S3 (15 to 30 ms a request) a cold load
 * waits for the longest of those chains instead of their sum.
 *
 * <p>Neither read changes anything, so a load that fails or is interrupted abandons them at any
 * point ({@link #close}: cancelled with interruption). Owned by one load, on the thread that
 * holds the store's monitor; not shared.
 */
final class RestoreReads implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(RestoreReads.class);

  private final StoreIdentity identity;
  private final long version;
  private final Future<Manifest> manifest;
  private final Future<List<ObjectInfo>> published;

  private RestoreReads(StoreIdentity identity, long version, Future<Manifest> manifest,
      Future<List<ObjectInfo>> published) {
    this.identity = identity;
    this.version = version;
    this.manifest = manifest;
    this.published = published;
  }

  /**
   * Starts both reads of a load of {@code version} on {@code pool}.
   *
   * @param attempt the checkpoint id Spark passed (its version object needs no LIST), or empty
   * @throws java.util.concurrent.RejectedExecutionException if the pool is shut down (the store
   *     is closing)
   */
  static RestoreReads start(StoreIdentity identity, long version, Optional<String> attempt,
      VersionObjectReader reader, PublishedSnapshots snapshots, ExecutorService pool) {
    Future<Manifest> m = pool.submit(() -> reader.readForLoad(version, attempt));
    Future<List<ObjectInfo>> b;
    try {
      b = pool.submit(snapshots::list);
    } catch (RuntimeException e) {
      m.cancel(true);
      throw e;
    }
    return new RestoreReads(identity, version, m, b);
  }

  /**
   * The version's manifest, once read.
   *
   * @throws StateLoadException as {@link VersionObjectReader#readForLoad}
   * @throws InterruptedIOException if the thread is interrupted while it waits (both reads are
   *     then cancelled, and the interrupt flag set again)
   * @throws IOException as {@link VersionObjectReader#readForLoad}
   */
  Manifest manifest() throws IOException {
    try {
      return manifest.get();
    } catch (InterruptedException e) {
      close();
      Thread.currentThread().interrupt();
      throw new InterruptedIOException("Interrupted while reading the manifest of " + identity
          + " version " + version);
    } catch (ExecutionException e) {
      throw Futures.rethrow("Cannot read the manifest of " + identity + " version " + version
          + ": ").apply(e.getCause());
    }
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
    manifest.cancel(true);
    published.cancel(true);
  }
}
