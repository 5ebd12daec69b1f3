package io.strata.sync;

import io.strata.engine.LocalStore;
import io.strata.engine.SharedMemory;
import io.strata.format.BaseSnapshot;
import io.strata.format.Checksums;
import io.strata.format.Delta;
import io.strata.format.FileRef;
import io.strata.format.Manifest;
import io.strata.metrics.RestoreStats;
import io.strata.objectstore.ObjectNotFoundException;
import io.strata.objectstore.ObjectStore;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import net.jpountz.xxhash.StreamingXXHash64;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Rebuilds one version of a store from the object store in a fresh directory: the base
 * snapshot's files and the deltas are downloaded in parallel, each verified against the size and
 * XXHash64 its manifest names, and the deltas are then ingested in order, in one ingestion. The
 * result is a new, open {@link LocalStore} the caller publishes; on failure nothing is left open
 * and the directory is deleted. Thread-safe (no mutable state); the caller serialises restores.
 */
final class Restorer {
  private static final Logger LOG = LoggerFactory.getLogger(Restorer.class);

  /**
   * A restored version.
   *
   * @param store the open local database holding it; the caller owns (and closes) it
   * @param stats what the restore cost
   */
  record Restored(LocalStore store, RestoreStats stats) { }

  private final StoreIdentity identity;
  private final ObjectStore objects;
  private final ExecutorService transfers;
  private final SharedMemory.Limits memory;

  /**
   * @param transfers the pool the downloads run on (borrowed, not shut down here)
   * @param memory native memory limits of the restored database
   */
  Restorer(StoreIdentity identity, ObjectStore objects, ExecutorService transfers,
      SharedMemory.Limits memory) {
    this.identity = identity;
    this.objects = objects;
    this.transfers = transfers;
    this.memory = memory;
  }

  /**
   * Restores the version {@code m} describes.
   *
   * @param dbDir the new database's directory (must not exist or be empty; deleted on failure)
   * @param tmp where the deltas are downloaded (each deleted when the restore ends)
   * @param startNanos {@link System#nanoTime()} when the load started (for the stats)
   * @return the open database and the restore's cost
   * @throws StateLoadException if a file the manifest names is missing or corrupt, or storage
   *     fails; the message names the store, version and object key
   * @throws IOException if the local disk or RocksDB fails
   */
  Restored restore(Manifest m, Path dbDir, Path tmp, long startNanos) throws IOException {
    Files.createDirectories(dbDir);
    List<Future<Long>> downloads = new ArrayList<>();
    List<Path> deltaFiles = new ArrayList<>();
    long files = 0;
    if (m.base().isPresent()) {
      for (BaseSnapshot.BaseFile f : m.base().get().files()) {
        Path target = dbDir.resolve(f.name());
        downloads.add(transfers.submit(() -> download(m, f.file(), target)));
        files++;
      }
    }
    for (Delta d : m.deltas()) {
      Path target = tmp.resolve("restore-" + deltaFiles.size() + ".sst");
      deltaFiles.add(target);
      downloads.add(transfers.submit(() -> download(m, d.file(), target)));
      files++;
    }
    LocalStore fresh = null;
    boolean ok = false;
    try {
      long bytes = 0;
      String what = "restore version " + m.version();
      for (long b : Futures.awaitAll(downloads, "Interrupted during " + what + " of " + identity,
          Futures.rethrow("Cannot " + what + " of " + identity + ": "))) {
        bytes += b;
      }
      if (m.base().isPresent() && m.base().get().files().stream()
          .noneMatch(f -> f.name().equals("CURRENT"))) {
        throw new StateLoadException(StateLoadException.Reason.CORRUPT, "Cannot load " + identity
            + " version " + m.version() + ": its base snapshot lists no CURRENT file", null);
      }
      fresh = LocalStore.open(dbDir, m.numKeys(), memory);
      fresh.ingestAll(deltaFiles); // one ingestion for the whole chain, later deltas win
      fresh.setCommittedKeys(m.numKeys());
      RestoreStats stats = new RestoreStats(
          TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startNanos), bytes, files,
          m.deltas().size(), m.base().map(BaseSnapshot::version).orElse(0L), false);
      LOG.info("{} restored version {} from the object store: base version {}, {} deltas, {} "
          + "files, {} bytes, {} ms", identity, m.version(), stats.baseVersion(),
          stats.deltasReplayed(), files, bytes, stats.restoreMs());
      ok = true;
      return new Restored(fresh, stats);
    } finally {
      if (!ok) {
        for (Future<Long> f : downloads) {
          f.cancel(true);
        }
        if (fresh != null) {
          fresh.close();
        }
        LocalIntegrity.deleteQuietly(identity, m.version(), dbDir);
      }
      for (Path p : deltaFiles) {
        LocalIntegrity.deleteQuietly(identity, m.version(), p);
      }
    }
  }

  /** Downloads one file range to {@code target}, verifying size and checksum; returns bytes. */
  private long download(Manifest m, FileRef ref, Path target) throws IOException {
    // The target's directory exists (made by restore); a download cancelled after a failed
    // restore then fails instead of re-creating a directory the restore already deleted.
    if (ref.length() == 0) {
      Files.write(target, new byte[0]);
      return 0;
    }
    long n = 0;
    long sum;
    try (InputStream in = objects.getRange(ref.key(), ref.offset(), ref.length());
        OutputStream out = Files.newOutputStream(target);
        StreamingXXHash64 h = Checksums.newStreaming()) {
      byte[] buf = new byte[1 << 16];
      int r;
      while ((r = in.read(buf)) > 0) {
        out.write(buf, 0, r);
        h.update(buf, 0, r);
        n += r;
      }
      sum = h.getValue();
    } catch (ObjectNotFoundException e) {
      throw new StateLoadException(StateLoadException.Reason.MISSING_FILE, "Cannot load "
          + identity + " version " + m.version() + ": " + objects.describe(ref.key())
          + ", named by its manifest, does not exist", e);
    } catch (StateLoadException e) {
      throw e;
    } catch (IOException e) {
      throw new StateLoadException(StateLoadException.Reason.STORAGE, "Cannot load " + identity
          + " version " + m.version() + ": downloading " + objects.describe(ref.key())
          + " failed: " + e.getMessage(), e);
    }
    if (n != ref.length() || sum != ref.checksum()) {
      throw new StateLoadException(StateLoadException.Reason.CORRUPT, "Cannot load " + identity
          + " version " + m.version() + ": " + objects.describe(ref.key()) + " bytes "
          + ref.offset() + ".." + (ref.offset() + ref.length()) + " do not match the manifest "
          + "(expected " + ref.length() + " bytes with xxhash64 " + Checksums.hex(ref.checksum())
          + ", got " + n + " bytes with xxhash64 " + Checksums.hex(sum) + ")", null);
    }
    return n;
  }
}
