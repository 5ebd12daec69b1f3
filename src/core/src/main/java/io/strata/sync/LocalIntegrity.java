// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import io.strata.engine.LocalFiles;
import io.strata.engine.LocalStore;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Whether one store's local database may be reused, and what else its directory may hold.
 *
 * <p>Stamps: the size, modification time and inode of the live database's SST files when it was
 * last known good (after a restore or commit, or at a load that reused it). RocksDB never
 * rewrites an SST, so a reused database whose SST changed since is damaged and must be dropped;
 * so must one in which a snapshot upload found a corrupt SST ({@link #markDamaged}).
 *
 * <p>Sweeping: the store's directory holds the live database ({@code db-N}), at most one local
 * checkpoint ({@code checkpoint-N}, read by a snapshot upload) and {@code tmp/} (the SST of the
 * commit or spill in progress, the deltas of a restore); {@link #sweep} deletes anything else a
 * failed delete left behind.
 *
 * <p>Not thread-safe: the store calls it with its monitor held.
 */
final class LocalIntegrity {
  private static final Logger LOG = LoggerFactory.getLogger(LocalIntegrity.class);

  private final StoreIdentity identity;
  private final Path localDir;
  /** Stamps of the live database's SSTs when last known good; null if they could not be read. */
  private Map<String, LocalFiles.Stamp> stamps = Map.of();
  /** Why the live database must not be reused (a failed SST verification), or null. */
  private String damaged;

  /** @param localDir the store's directory */
  LocalIntegrity(StoreIdentity identity, Path localDir) {
    this.identity = identity;
    this.localDir = localDir;
  }

  /** Forgets the stamps and the damage of a database no longer live (none is known good). */
  void forget() {
    stamps = Map.of();
    damaged = null;
  }

  /**
   * Remembers the SST stamps of {@code live} (null: none) as known good; a database whose
   * directory cannot be listed is never reused.
   *
   * @param version the version it holds (for the log)
   */
  void recordStamps(LocalStore live, long version) {
    try {
      stamps = live == null ? Map.of() : stampsOf(live);
    } catch (IOException e) {
      adoptStamps(null, live, version, e);
    }
  }

  /**
   * The SST stamps of {@code live} now, for {@link #adoptStamps}: taken on the thread that just
   * changed the database (a commit's ingestion), without the monitor.
   *
   * @throws IOException if the directory cannot be listed
   */
  static Map<String, LocalFiles.Stamp> stampsOf(LocalStore live) throws IOException {
    return LocalFiles.stamps(live.dir(), live.liveSstFiles());
  }

  /**
   * Remembers {@code taken} ({@link #stampsOf}) as the known-good stamps of {@code live}; null
   * (the listing failed with {@code failure}) means it is never reused.
   */
  void adoptStamps(Map<String, LocalFiles.Stamp> taken, LocalStore live, long version,
      IOException failure) {
    if (taken == null) {
      LOG.warn("{} version {}: cannot list local database {}; it will not be reused", identity,
          version, live.dir(), failure);
    }
    stamps = taken;
  }

  /** Records that an SST of the live database failed verification, for {@code reason}. */
  void markDamaged(String reason) {
    damaged = reason;
  }

  /**
   * The SST of {@code live} that changed on disk since it was last known good, if any, with what
   * changed. Files that appeared since (compaction output) are verified against their RocksDB
   * block checksums once, then become known. A damaged database, or an unreadable directory,
   * counts as changed.
   */
  Optional<String> changedFile(LocalStore live) {
    if (damaged != null) {
      return Optional.of("(" + damaged + ")");
    }
    if (stamps == null) {
      return Optional.of("(the local directory could not be listed)");
    }
    Map<String, LocalFiles.Stamp> now;
    try {
      now = LocalFiles.stamps(live.dir(), live.liveSstFiles());
    } catch (IOException e) {
      return Optional.of("(the local directory cannot be listed: " + e.getMessage() + ")");
    }
    Optional<String> changed = LocalFiles.changed(stamps, now);
    if (changed.isPresent()) {
      return changed;
    }
    // Files RocksDB wrote since (compaction output) were never known good: read them once.
    for (String name : now.keySet()) {
      if (!stamps.containsKey(name)) {
        try {
          LocalFiles.verifySst(live.dir().resolve(name));
        } catch (NoSuchFileException | FileNotFoundException gone) {
          continue; // deleted by a compaction since the listing
        } catch (IOException e) {
          if (Files.exists(live.dir().resolve(name))) {
            return Optional.of(name + " (" + e.getMessage() + ")");
          }
        }
      }
    }
    stamps = now;
    return Optional.empty();
  }

  /**
   * Deletes what the store's directory holds besides the live database and the checkpoint an
   * upload is reading: older {@code db-*} and idle {@code checkpoint-*} directories and every
   * file in {@code tmp/} (only commit, spill and restore use it, all under the store's monitor,
   * which the caller holds). Failures are logged; the next sweep retries.
   *
   * @param live the live database's directory, or null
   * @param reading the checkpoint a snapshot upload is reading, or null
   * @param version the loaded version (for the log)
   */
  void sweep(Path live, Path reading, long version) {
    if (!Files.isDirectory(localDir)) {
      return;
    }
    List<Path> entries;
    try (Stream<Path> s = Files.list(localDir)) {
      entries = s.toList();
    } catch (IOException e) {
      LOG.warn("{}: cannot list local directory {}", identity, localDir, e);
      return;
    }
    for (Path p : entries) {
      String name = p.getFileName().toString();
      if (p.equals(live) || p.equals(reading)) {
        continue;
      }
      if (name.equals("tmp")) {
        try (Stream<Path> s = Files.list(p)) {
          s.forEach(f -> deleteQuietly(identity, version, f));
        } catch (IOException e) {
          LOG.warn("{}: cannot list {}", identity, p, e);
        }
      } else if (name.startsWith("db-") || name.startsWith("checkpoint-")) {
        LOG.info("{}: deleting leftover local directory {}", identity, p);
        deleteQuietly(identity, version, p);
      }
    }
  }

  /**
   * Deletes a file or directory tree of a store's directory, logging (not throwing) a failure:
   * the next {@link #sweep} retries.
   *
   * @param version the version the store holds (for the log)
   */
  static void deleteQuietly(StoreIdentity identity, long version, Path p) {
    try {
      LocalFiles.deleteRecursively(p);
    } catch (IOException | RuntimeException e) {
      LOG.warn("{} version {}: cannot delete local {}; the next sweep retries: {}", identity,
          version, p, e.toString());
    }
  }
}
