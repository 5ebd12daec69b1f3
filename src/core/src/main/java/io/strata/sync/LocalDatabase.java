// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import io.strata.engine.LocalFiles;
import io.strata.engine.LocalStore;
import io.strata.format.ColumnFamilies;
import io.strata.format.Manifest;
import io.strata.format.Reachability;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The live local database of one {@link SyncedStore} and the committed version it holds, with
 * the store's local directory: where new databases, checkpoints and temporary files go, and
 * what replacing or dropping the database entails (a new generation: snapshots and SST stamps
 * of the old one no longer apply).
 *
 * <p>Threading: guarded by the store's monitor; {@link #live()} is also read without it.
 */
final class LocalDatabase {
  private static final Logger LOG = LoggerFactory.getLogger(LocalDatabase.class);

  private final StoreIdentity identity;
  private final Path localDir;
  private final LocalIntegrity integrity;
  private final BaseSnapshotUploader snapshots;
  private final AtomicInteger dirCounter = new AtomicInteger();
  /** Volatile: metrics read it from other threads; changed only under the monitor. */
  private volatile LocalStore live;
  private long version = -1;
  private Manifest manifest;
  /** Counts local databases: a snapshot taken from an older one is never published. */
  private int generation;

  /**
   * @param localDir the store's own directory (created on first use, deleted by {@link #deleteDirectory})
   * @param integrity forgets its stamps when the database changes
   * @param snapshots forgets the pending snapshot and hashed files when the database changes
   */
  LocalDatabase(StoreIdentity identity, Path localDir, LocalIntegrity integrity,
      BaseSnapshotUploader snapshots) {
    this.identity = identity;
    this.localDir = localDir;
    this.integrity = integrity;
    this.snapshots = snapshots;
  }

  /** The live database, or null if none is usable. */
  LocalStore live() {
    return live;
  }

  /**
   * The live database.
   *
   * @throws IllegalStateException if no version is loaded
   */
  LocalStore require() {
    LocalStore l = live;
    if (l == null) {
      throw new IllegalStateException(identity + ": no version is loaded");
    }
    return l;
  }

  /**
   * Merges the live database's small bottommost files if a merge is due ({@link
   * LocalStore#mergeSmallFiles}). Background work: a failure is logged at WARN and leaves the
   * database as it was (the next maintenance tries again); a database closed meanwhile (a load
   * replaced it) is skipped.
   */
  void mergeSmallFiles() {
    LocalStore l = live;
    if (l == null) {
      return;
    }
    try {
      int merged = l.mergeSmallFiles();
      if (merged > 0) {
        LOG.debug("{}: merged {} small files of the local database's bottommost level",
            identity, merged);
      }
    } catch (IllegalStateException closed) {
      LOG.debug("{}: local database closed during a merge of its small files", identity);
    } catch (IOException e) {
      LOG.warn("{}: {}", identity, e.getMessage());
    }
  }

  /** The committed version the live database holds, or -1 if none is usable. */
  long version() {
    return version;
  }

  /** The manifest of {@link #version()}; null for version 0 or nothing loaded. */
  Manifest manifest() {
    return manifest;
  }

  /** The attempt id of {@link #version()}; empty for version 0 or nothing loaded. */
  Optional<String> attempt() {
    return manifest == null ? Optional.empty() : Optional.of(manifest.attempt());
  }

  /**
   * Keys this instance needs that no retained manifest may name yet, so a garbage-collection
   * round must keep them: the pending base snapshot's files and what the live version's manifest
   * names (a new mutable set; the store adds its spill deltas).
   */
  Set<String> neededKeys() {
    Set<String> keys = new HashSet<>();
    snapshots.addPendingKeys(keys);
    if (manifest != null) {
      keys.addAll(Reachability.namedKeys(manifest));
    }
    return keys;
  }

  /** Whether a load may reuse the live database ({@link #reuseFor}). */
  enum Reuse {
    /** It holds the version (and attempt) and is intact. */
    YES,
    /** It holds the version, but an SST changed on disk: drop it, restore the version. */
    DAMAGED,
    /** It holds another version (or attempt), or nothing. */
    NO
  }

  /**
   * Whether the live database holds exactly {@code version} (and {@code attempt}, when given)
   * and {@link LocalIntegrity} finds none of its SSTs changed on disk. A changed SST is logged:
   * RocksDB never rewrites one, so the database is damaged and the object store holds the
   * verified copy of the version. A database without a manifest above version 0 (opened empty
   * at that version, {@link VersionLoader#loadEmpty}, and not committed) is never reused: it
   * stands for the empty state, not for the version as committed.
   */
  Reuse reuseFor(long version, Optional<String> attempt) {
    if (live == null || version != this.version || (manifest == null && version != 0)
        || !(attempt.isEmpty() || version == 0 || attempt.equals(attempt()))) {
      return Reuse.NO;
    }
    Optional<String> changed = integrity.changedFile(live);
    if (changed.isEmpty()) {
      return Reuse.YES;
    }
    LOG.warn("{} version {}: local SST {} in {} changed on disk since it was written; "
        + "dropping the local database and restoring the version from the object store",
        identity, version, changed.get(), live.dir());
    return Reuse.DAMAGED;
  }

  /** The column families of {@link #version()} (none for version 0 or nothing loaded). */
  ColumnFamilies committedFamilies() {
    return manifest == null ? ColumnFamilies.NONE : manifest.columnFamilies();
  }

  /** Which local database is live: changes whenever it is replaced or dropped. */
  int generation() {
    return generation;
  }

  /** A new, not yet existing directory for a database. */
  Path newDbDir() throws IOException {
    Files.createDirectories(localDir);
    return localDir.resolve("db-" + dirCounter.incrementAndGet());
  }

  /** A new, not yet existing directory for a RocksDB checkpoint. */
  Path newCheckpointDir() {
    return localDir.resolve("checkpoint-" + dirCounter.incrementAndGet());
  }

  /** The directory of temporary files, not checked or created ({@link #tmpDir()} does both). */
  Path tmpPath() {
    return localDir.resolve("tmp");
  }

  /** The directory of temporary files (SSTs being written), created if missing. */
  Path tmpDir() throws IOException {
    Path tmp = localDir.resolve("tmp");
    // Every commit asks: a stat when it exists, instead of createDirectories' failed mkdir and
    // the exception it builds.
    return Files.isDirectory(tmp) ? tmp : Files.createDirectories(tmp);
  }

  /**
   * Publishes {@code fresh}, holding {@code v} ({@code m}; null for version 0, or for an empty
   * database opened at {@code v}), as the live one.
   */
  void replace(LocalStore fresh, Manifest m, long v) {
    LocalStore old = live;
    live = fresh;
    manifest = m;
    version = v;
    newGeneration();
    closeAndDelete(old);
    integrity.recordStamps(fresh, v);
  }

  /**
   * The live database now stands for {@code m}'s version, whose delta it is still ingesting:
   * its SST stamps are recorded by {@link #ingested} once the ingestion is done.
   */
  void committedIngesting(Manifest m) {
    manifest = m;
    version = m.version();
  }

  /**
   * The ingestion of {@link #version()}'s delta is done: records the SST stamps it took right
   * after it ({@link LocalIntegrity#stampsOf}).
   */
  void ingested(LocalIngestion.Done done) {
    integrity.adoptStamps(done.stamps(), live, version, done.stampFailure());
  }

  /** Drops the live database; the next load restores. */
  void invalidate() {
    LocalStore old = live;
    live = null;
    manifest = null;
    version = -1;
    newGeneration();
    closeAndDelete(old);
  }

  private void newGeneration() {
    generation++;
    snapshots.localDatabaseReplaced();
    integrity.forget();
  }

  private void closeAndDelete(LocalStore old) {
    if (old != null) {
      old.close();
      deleteQuietly(old.dir()); // a leftover is deleted by the next sweep
    }
  }

  /** Deletes what is neither the live database nor {@code reading} (see LocalIntegrity). */
  void sweep(Path reading) {
    LocalStore l = live;
    integrity.sweep(l == null ? null : l.dir(), reading, version);
  }

  /** Deletes {@code p} (a file or tree); a failure is logged, the next sweep retries. */
  void deleteQuietly(Path p) {
    LocalIntegrity.deleteQuietly(identity, version, p);
  }

  /** Closes the live database (the store is closing). */
  void closeDatabase() {
    LocalStore l = live;
    live = null;
    if (l != null) {
      l.close();
    }
  }

  /** Deletes the local directory (the store closed); a failure is logged. */
  void deleteDirectory() {
    try {
      LocalFiles.deleteRecursively(localDir);
    } catch (IOException e) {
      LOG.warn("{}: cannot delete local directory {}", identity, localDir, e);
    }
  }
}
