// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import io.strata.engine.LocalStore;
import io.strata.engine.SharedMemory;
import io.strata.engine.TableFormat;
import io.strata.engine.UnreadableTableFormatException;
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
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
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
 *
 * <p>Downloads follow a {@link DownloadPlan}: one ranged GET per run of files stored back to
 * back in one object (a base snapshot's pack is one GET, not one per file), and runs longer than
 * the part size split into GETs of that size, so that the restore's bytes spread over all {@code
 * parallelism} transfer threads even when one file (a large base SST) holds most of them: one
 * stream per file would make the largest file's single-stream time the restore's. A file that
 * lies whole in one GET is verified as it streams; a file cut across GETs is written at each
 * part's offset and verified after its last part by reading it back (XXHash64 is not combinable
 * from parts). Parts are at most 8 MiB (S3's guidance for parallel ranged GETs is 8 to 16 MiB)
 * and as small as 1 MiB when that lets every GET of the restore run at once.
 */
final class Restorer {
  private static final Logger LOG = LoggerFactory.getLogger(Restorer.class);
  /** Numbers the restores of this JVM, for unique temporary file names. */
  private static final java.util.concurrent.atomic.AtomicLong RESTORES =
      new java.util.concurrent.atomic.AtomicLong();

  /**
   * A restored version.
   *
   * @param store the open local database holding it; the caller owns (and closes) it
   * @param stats what the restore cost
   */
  record Restored(LocalStore store, RestoreStats stats) { }

  /**
   * A version restored the shortest way ({@link #restoreShortest}).
   *
   * @param restored the open database and the restore's cost
   * @param from the published base snapshot it was restored from, or empty (the manifest's own
   *     base and chain)
   */
  record Shortest(Restored restored, Optional<BaseSnapshot> from) { }

  private final StoreIdentity identity;
  private final ObjectStore objects;
  private final ExecutorService transfers;
  private final java.util.function.IntFunction<TransferPools.Widened> widen;
  private final int parallelism;
  private final SharedMemory.Limits memory;

  /**
   * A restorer whose pool is never widened.
   *
   * @see #Restorer(StoreIdentity, ObjectStore, ExecutorService,
   *     java.util.function.IntFunction, int, SharedMemory.Limits)
   */
  Restorer(StoreIdentity identity, ObjectStore objects, ExecutorService transfers,
      int parallelism, SharedMemory.Limits memory) {
    this(identity, objects, transfers, n -> () -> { }, parallelism, memory);
  }

  /**
   * @param transfers the pool the downloads run on (borrowed, not shut down here)
   * @param widen lets {@code transfers} run that many GETs at once for the duration of one
   *     restore ({@link TransferPools#widenTransfers}): {@code parallelism} plus one per GET
   *     shorter than {@link DownloadPlan#MIN_PART_BYTES} ({@link #smallGets}), within the
   *     pool's bound, so a long chain of small deltas costs one round trip
   * @param parallelism the pool's threads (&gt;= 1): how many parts to aim for
   * @param memory native memory limits of the restored database
   */
  Restorer(StoreIdentity identity, ObjectStore objects, ExecutorService transfers,
      java.util.function.IntFunction<TransferPools.Widened> widen, int parallelism,
      SharedMemory.Limits memory) {
    this.identity = identity;
    this.objects = objects;
    this.transfers = transfers;
    this.widen = widen;
    this.parallelism = Math.max(1, parallelism);
    this.memory = memory;
  }

  /**
   * Restores the version {@code m} describes the shortest way: from {@code found}, the newest
   * published snapshot on its lineage ({@link PublishedSnapshots#find}), plus the deltas after
   * it, or, if there is none or restoring it fails (its files deleted by a round after the LIST,
   * or corrupt), from the manifest's own base and chain.
   *
   * @param found the published snapshot to try first, or empty
   * @param db the store's local database (the new database's and the downloads' directories)
   * @param startNanos {@link System#nanoTime()} when the load started (for the stats)
   * @return the open database, the restore's cost and the published snapshot it started from
   * @throws StateLoadException as {@link #restore}; a failure of the published snapshot is
   *     thrown only if the thread was interrupted or the local disk failed ({@code LOCAL})
   * @throws IOException as {@link #restore}
   */
  Shortest restoreShortest(Manifest m, Optional<PublishedSnapshots.Found> found,
      LocalDatabase db, long startNanos) throws IOException {
    if (found.isPresent()) {
      try {
        Restored r = restore(found.get().snapshot().rebase(m), db.newDbDir(), db.tmpDir(),
            startNanos);
        return new Shortest(new Restored(r.store(), r.stats().fromPublished()),
            Optional.of(found.get().snapshot().snapshot()));
      } catch (IOException e) {
        if (Thread.currentThread().isInterrupted() || (e instanceof StateLoadException sle
            && sle.reason() == StateLoadException.Reason.LOCAL)) {
          // Interrupted, or the local disk failed: the longer chain needs that disk too.
          throw e;
        }
        // Its files are gone (a round deleted them after this LIST) or corrupt: the manifest
        // alone can still serve the load.
        LOG.warn("{} version {}: cannot restore from published snapshot {} of version {} ({}); "
            + "restoring from the manifest's own chain", identity, m.version(),
            objects.describe(found.get().key()), found.get().snapshot().version(),
            e.getMessage());
      }
    }
    return new Shortest(restore(m, db.newDbDir(), db.tmpDir(), startNanos), Optional.empty());
  }

  /**
   * Restores the version {@code m} describes.
   *
   * @param dbDir the new database's directory (must not exist or be empty; deleted on failure)
   * @param tmp where the deltas are downloaded (each deleted when the restore ends)
   * @param startNanos {@link System#nanoTime()} when the load started (for the stats)
   * @return the open database and the restore's cost
   * @throws StateLoadException if a file the manifest names is missing or corrupt, or storage
   *     fails, or writing the downloaded files to the local disk fails ({@code LOCAL}); the
   *     message names the store, version and object key (and the local file)
   * @throws StateLoadException {@code UNREADABLE_FORMAT} if RocksDB cannot read a restored file
   *     because it is in a table format of a newer Spark line's RocksDB; the message names the
   *     object, the format and the lines that read it
   * @throws IOException if RocksDB fails to open or ingest the restored files, or the restore is
   *     interrupted
   */
  Restored restore(Manifest m, Path dbDir, Path tmp, long startNanos) throws IOException {
    try {
      Files.createDirectories(dbDir);
    } catch (IOException e) {
      throw new StateLoadException(StateLoadException.Reason.LOCAL, "Cannot load " + identity
          + " version " + m.version() + ": creating local directory " + dbDir + " failed: " + e,
          e);
    }
    long restore = RESTORES.incrementAndGet();
    List<FileRef> refs = new ArrayList<>();
    List<Path> targets = new ArrayList<>();
    List<Path> deltaFiles = new ArrayList<>();
    if (m.base().isPresent()) {
      for (BaseSnapshot.BaseFile f : m.base().get().files()) {
        refs.add(f.file());
        targets.add(dbDir.resolve(f.name()));
      }
    }
    for (Delta d : m.deltas()) {
      // Unique per restore: a fallback restore in the same load never shares a name with a
      // download of the failed one that is still being cancelled.
      Path target = tmp.resolve("restore-" + restore + "-" + deltaFiles.size() + ".sst");
      deltaFiles.add(target);
      refs.add(d.file());
      targets.add(target);
    }
    DownloadPlan plan = DownloadPlan.of(refs, parallelism);
    long downloadStart = System.nanoTime();
    List<Future<Long>> downloads = new ArrayList<>();
    LocalStore fresh = null;
    boolean ok = false;
    TransferPools.Widened widened = widen.apply(parallelism + smallGets(plan));
    try {
      // Every file is created here, before any GET runs; the GETs write into it at their
      // offsets. A GET cancelled after a failed restore deleted the directory then fails to open
      // its file instead of re-creating it.
      for (int i = 0; i < targets.size(); i++) {
        try {
          Files.newByteChannel(targets.get(i), StandardOpenOption.CREATE_NEW,
              StandardOpenOption.WRITE).close();
        } catch (IOException e) {
          throw local(m, targets.get(i), refs.get(i), "creating", e);
        }
      }
      for (DownloadPlan.Get g : plan.gets()) {
        downloads.add(transfers.submit(() -> fetch(m, refs, targets, g)));
      }
      long bytes = 0;
      String what = "restore version " + m.version();
      for (long b : Futures.awaitAll(downloads, "Interrupted during " + what + " of " + identity,
          Futures.rethrow("Cannot " + what + " of " + identity + ": "))) {
        bytes += b;
      }
      List<Future<Long>> verifications = new ArrayList<>();
      for (int i : plan.cutFiles()) {
        FileRef ref = refs.get(i);
        Path target = targets.get(i);
        verifications.add(transfers.submit(() -> verify(m, ref, target)));
      }
      downloads.addAll(verifications); // cancelled with the rest on failure
      Futures.awaitAll(verifications, "Interrupted during " + what + " of " + identity,
          Futures.rethrow("Cannot " + what + " of " + identity + ": "));
      widened.close();
      long downloadMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - downloadStart);
      if (m.base().isPresent() && m.base().get().files().stream()
          .noneMatch(f -> f.name().equals("CURRENT"))) {
        throw new StateLoadException(StateLoadException.Reason.CORRUPT, "Cannot load " + identity
            + " version " + m.version() + ": its base snapshot lists no CURRENT file", null);
      }
      try {
        fresh = LocalStore.open(dbDir, m.numKeys(), memory);
        fresh.ingestAll(deltaFiles); // one ingestion for the whole chain, later deltas win
      } catch (UnreadableTableFormatException e) {
        throw unreadable(m, refs, targets, e);
      }
      fresh.setCommittedKeys(m.numKeys());
      RestoreStats stats = new RestoreStats(
          TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startNanos), bytes, refs.size(),
          m.deltas().size(), m.base().map(BaseSnapshot::version).orElse(0L), false, downloadMs);
      LOG.info("{} restored version {} from the object store: base version {}, {} deltas, {} "
          + "files, {} bytes in {} GETs ({} ms downloading), {} ms", identity, m.version(),
          stats.baseVersion(), stats.deltasReplayed(), refs.size(), bytes, plan.gets().size(),
          downloadMs, stats.restoreMs());
      ok = true;
      return new Restored(fresh, stats);
    } finally {
      widened.close(); // idempotent
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

  /**
   * The GETs of {@code plan} shorter than {@link DownloadPlan#MIN_PART_BYTES}: bound by latency
   * rather than bandwidth (a delta of the chain, a base's small files), so each gets a thread
   * of its own beyond the {@code parallelism} the large parts share; the large parts of a big
   * base widen nothing, so a restore adds streams, and connections, only for requests that
   * hold them briefly.
   */
  static int smallGets(DownloadPlan plan) {
    int n = 0;
    for (DownloadPlan.Get g : plan.gets()) {
      if (g.length() < DownloadPlan.MIN_PART_BYTES) {
        n++;
      }
    }
    return n;
  }

  /**
   * The error of a restore whose files RocksDB cannot read in this JVM: intact files in a table
   * format of a newer Spark line's RocksDB ({@code TableFormat}), named with the object that
   * holds the file, the format and the lines that read it.
   */
  private StateLoadException unreadable(Manifest m, List<FileRef> refs, List<Path> targets,
      UnreadableTableFormatException e) {
    int i = targets.indexOf(e.file());
    String where = i < 0 ? "" : objects.describe(refs.get(i).key()) + " (offset "
        + refs.get(i).offset() + "): ";
    return new StateLoadException(StateLoadException.Reason.UNREADABLE_FORMAT, "Cannot load "
        + identity + " version " + m.version() + ": " + where + e.reason() + " A Strata build "
        + "that predates writing table format " + TableFormat.WRITTEN + " on every line wrote "
        + "it on a newer Spark line; load this checkpoint on one of the lines that read it "
        + "(docs/format.md, \"Table formats across Spark lines\").", e);
  }

  /** One request of a download, as {@link #fetching} runs it. */
  private interface Fetch<T> {
    T run() throws IOException;
  }

  /**
   * Runs {@code f}, which reads from {@code ref}'s object: a missing object or a failed request
   * becomes a {@link StateLoadException} naming the store, version and object.
   */
  private <T> T fetching(Manifest m, FileRef ref, Fetch<T> f) throws IOException {
    try {
      return f.run();
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
  }

  /**
   * Runs one GET of the plan: streams its bytes into the files of its pieces, each at its offset
   * within its file, and verifies every whole piece's length and XXHash64 as it completes;
   * returns the GET's bytes. A cut piece's file is verified by {@link #verify} once every GET is
   * in. A short or long response is CORRUPT, naming the object and range.
   */
  private long fetch(Manifest m, List<FileRef> refs, List<Path> targets, DownloadPlan.Get g)
      throws IOException {
    List<DownloadPlan.Piece> pieces = g.pieces();
    FileRef first = refs.get(pieces.get(0).file());
    long end = g.from() + g.length();
    long got = fetching(m, first, () -> {
      try (InputStream in = objects.getRange(g.key(), g.from(), g.length())) {
        byte[] buf = new byte[1 << 16];
        long pos = g.from(); // position within the object
        int pi = 0;
        FileChannel out = null;
        StreamingXXHash64 h = null;
        try {
          int r;
          while ((r = in.read(buf)) > 0) {
            int off = 0;
            while (off < r) {
              if (pi == pieces.size()) {
                return g.length() + 1; // more bytes than asked for: not the object named
              }
              DownloadPlan.Piece p = pieces.get(pi);
              FileRef ref = refs.get(p.file());
              Path target = targets.get(p.file());
              int take = (int) Math.min(r - off, p.end() - pos);
              try {
                if (out == null) {
                  out = FileChannel.open(target, StandardOpenOption.WRITE);
                  h = p.whole() ? Checksums.newStreaming() : null;
                }
                ByteBuffer b = ByteBuffer.wrap(buf, off, take);
                long at = pos - ref.offset();
                while (b.hasRemaining()) {
                  at += out.write(b, at);
                }
              } catch (IOException e) {
                throw local(m, target, ref, "writing", e);
              }
              if (h != null) {
                h.update(buf, off, take);
              }
              off += take;
              pos += take;
              if (pos == p.end()) {
                FileChannel done = out;
                out = null;
                try {
                  done.close();
                } catch (IOException e) {
                  throw local(m, target, ref, "writing", e);
                }
                if (h != null) {
                  long sum = h.getValue();
                  h.close();
                  h = null;
                  check(m, ref, p.length(), sum);
                }
                pi++;
              }
            }
          }
          if (pos < end && pi < pieces.size() && pieces.get(pi).whole() && h != null) {
            // The object ends inside a whole file: its manifest entry names more bytes.
            DownloadPlan.Piece p = pieces.get(pi);
            check(m, refs.get(p.file()), pos - p.from(), h.getValue());
          }
          return pos - g.from();
        } finally {
          if (out != null) {
            // Only on a failure already in flight or a response cut short (CORRUPT below):
            // neither is to be replaced by what closing the half-written file says.
            try {
              out.close();
            } catch (IOException ignored) {
              // the file is deleted with the failed restore
            }
          }
          if (h != null) {
            h.close();
          }
        }
      }
    });
    if (got != g.length()) {
      throw new StateLoadException(StateLoadException.Reason.CORRUPT, "Cannot load " + identity
          + " version " + m.version() + ": " + objects.describe(g.key()) + " bytes "
          + g.from() + ".." + end + " returned " + (got > g.length() ? "more" : got + "")
          + " bytes, expected " + g.length()
          + " (the object is shorter or longer than its manifest says)", null);
    }
    return got;
  }

  /** Checks a file downloaded in parts against its manifest entry; returns its length. */
  private long verify(Manifest m, FileRef ref, Path target) throws IOException {
    long n = 0;
    long sum;
    try (InputStream in = Files.newInputStream(target);
        StreamingXXHash64 h = Checksums.newStreaming()) {
      byte[] buf = new byte[1 << 16];
      int r;
      while ((r = in.read(buf)) > 0) {
        h.update(buf, 0, r);
        n += r;
      }
      sum = h.getValue();
    } catch (IOException e) {
      throw local(m, target, ref, "reading back", e);
    }
    check(m, ref, n, sum);
    return n;
  }

  /**
   * A failure of the local disk, not of the object store: LOCAL, naming the local file, the
   * object its bytes come from, and the disk's error. An interrupt (a cancelled download) is
   * returned as it is.
   */
  private IOException local(Manifest m, Path target, FileRef ref, String doing,
      IOException e) {
    if (e instanceof java.nio.channels.ClosedByInterruptException
        || e instanceof java.io.InterruptedIOException) {
      return e;
    }
    return new StateLoadException(StateLoadException.Reason.LOCAL, "Cannot load " + identity
        + " version " + m.version() + ": " + doing + " local file " + target + " (bytes of "
        + objects.describe(ref.key()) + ") failed: " + e, e);
  }

  private void check(Manifest m, FileRef ref, long n, long sum) throws StateLoadException {
    if (n != ref.length() || sum != ref.checksum()) {
      throw new StateLoadException(StateLoadException.Reason.CORRUPT, "Cannot load " + identity
          + " version " + m.version() + ": " + objects.describe(ref.key()) + " bytes "
          + ref.offset() + ".." + (ref.offset() + ref.length()) + " do not match the manifest "
          + "(expected " + ref.length() + " bytes with xxhash64 " + Checksums.hex(ref.checksum())
          + ", got " + n + " bytes with xxhash64 " + Checksums.hex(sum) + ")", null);
    }
  }
}
