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
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
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
 *
 * <p>Downloads are ranged GETs of at most {@link #partBytes} each, so that the restore's bytes
 * spread over all {@code parallelism} transfer threads even when one file (a large base SST)
 * holds most of them: one stream per file would make the largest file's single-stream time the
 * restore's. A file of several parts is written at each part's offset and verified after its
 * last part by reading it back (XXHash64 is not combinable from parts). Parts are at most 8 MiB
 * (S3's guidance for parallel ranged GETs is 8 to 16 MiB) and as small as 1 MiB when that lets
 * every GET of the restore run at once.
 */
final class Restorer {
  private static final Logger LOG = LoggerFactory.getLogger(Restorer.class);
  /** Smallest part of a multi-part download, bytes. */
  static final long MIN_PART_BYTES = 1L << 20;
  /** Largest part of a ranged download, bytes. */
  static final long MAX_PART_BYTES = 8L << 20;
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

  private final StoreIdentity identity;
  private final ObjectStore objects;
  private final ExecutorService transfers;
  private final int parallelism;
  private final SharedMemory.Limits memory;

  /**
   * @param transfers the pool the downloads run on (borrowed, not shut down here)
   * @param parallelism the pool's threads (&gt;= 1): how many parts to aim for
   * @param memory native memory limits of the restored database
   */
  Restorer(StoreIdentity identity, ObjectStore objects, ExecutorService transfers,
      int parallelism, SharedMemory.Limits memory) {
    this.identity = identity;
    this.objects = objects;
    this.transfers = transfers;
    this.parallelism = Math.max(1, parallelism);
    this.memory = memory;
  }

  /**
   * The part size for downloading files of {@code lengths} on {@code parallelism} threads: the
   * smallest size between {@link #MIN_PART_BYTES} and {@link #MAX_PART_BYTES} at which the
   * restore's GETs (one per part; a file no longer than the part is one GET) fit in one round
   * of the threads, else {@link #MAX_PART_BYTES}. One round: every thread busy once, no GET
   * waiting for a thread, and no more requests than that needs.
   */
  static long partBytes(List<Long> lengths, int parallelism) {
    if (parallelism <= 1) {
      return Long.MAX_VALUE; // one thread: parts would only add requests and a read-back
    }
    long lo = MIN_PART_BYTES;
    long hi = MAX_PART_BYTES;
    if (gets(lengths, hi) > parallelism) {
      return hi;
    }
    while (lo < hi) { // the smallest part in [lo, hi] whose GETs fit
      long mid = lo + (hi - lo) / 2;
      if (gets(lengths, mid) <= parallelism) {
        hi = mid;
      } else {
        lo = mid + 1;
      }
    }
    return lo;
  }

  private static long gets(List<Long> lengths, long part) {
    long n = 0;
    for (long l : lengths) {
      n += Math.max(1, (l + part - 1) / part);
    }
    return n;
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
    long part = partBytes(refs.stream().map(FileRef::length).toList(), parallelism);
    long downloadStart = System.nanoTime();
    List<Future<Long>> downloads = new ArrayList<>();
    List<Integer> multiPart = new ArrayList<>();
    LocalStore fresh = null;
    boolean ok = false;
    try {
      for (int i = 0; i < refs.size(); i++) {
        FileRef ref = refs.get(i);
        Path target = targets.get(i);
        if (ref.length() <= part) {
          downloads.add(transfers.submit(() -> download(m, ref, target)));
          continue;
        }
        // The parts write at their offsets into a file created here, before any part runs.
        Files.newByteChannel(target, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)
            .close();
        multiPart.add(i);
        for (long off = 0; off < ref.length(); off += part) {
          long from = off;
          long len = Math.min(part, ref.length() - off);
          downloads.add(transfers.submit(() -> downloadPart(m, ref, target, from, len)));
        }
      }
      long bytes = 0;
      String what = "restore version " + m.version();
      for (long b : Futures.awaitAll(downloads, "Interrupted during " + what + " of " + identity,
          Futures.rethrow("Cannot " + what + " of " + identity + ": "))) {
        bytes += b;
      }
      List<Future<Long>> verifications = new ArrayList<>();
      for (int i : multiPart) {
        FileRef ref = refs.get(i);
        Path target = targets.get(i);
        verifications.add(transfers.submit(() -> verify(m, ref, target)));
      }
      downloads.addAll(verifications); // cancelled with the rest on failure
      Futures.awaitAll(verifications, "Interrupted during " + what + " of " + identity,
          Futures.rethrow("Cannot " + what + " of " + identity + ": "));
      long downloadMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - downloadStart);
      if (m.base().isPresent() && m.base().get().files().stream()
          .noneMatch(f -> f.name().equals("CURRENT"))) {
        throw new StateLoadException(StateLoadException.Reason.CORRUPT, "Cannot load " + identity
            + " version " + m.version() + ": its base snapshot lists no CURRENT file", null);
      }
      fresh = LocalStore.open(dbDir, m.numKeys(), memory);
      fresh.ingestAll(deltaFiles); // one ingestion for the whole chain, later deltas win
      fresh.setCommittedKeys(m.numKeys());
      RestoreStats stats = new RestoreStats(
          TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startNanos), bytes, refs.size(),
          m.deltas().size(), m.base().map(BaseSnapshot::version).orElse(0L), false, downloadMs);
      LOG.info("{} restored version {} from the object store: base version {}, {} deltas, {} "
          + "files, {} bytes ({} ms downloading), {} ms", identity, m.version(),
          stats.baseVersion(), stats.deltasReplayed(), refs.size(), bytes, downloadMs,
          stats.restoreMs());
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

  /** Downloads one file range to {@code target}, verifying size and checksum; returns bytes. */
  private long download(Manifest m, FileRef ref, Path target) throws IOException {
    // The target's directory exists (made by restore); a download cancelled after a failed
    // restore then fails instead of re-creating a directory the restore already deleted.
    if (ref.length() == 0) {
      Files.write(target, new byte[0]);
      return 0;
    }
    long[] got = fetching(m, ref, () -> {
      try (InputStream in = objects.getRange(ref.key(), ref.offset(), ref.length());
          OutputStream out = Files.newOutputStream(target);
          StreamingXXHash64 h = Checksums.newStreaming()) {
        byte[] buf = new byte[1 << 16];
        long n = 0;
        int r;
        while ((r = in.read(buf)) > 0) {
          out.write(buf, 0, r);
          h.update(buf, 0, r);
          n += r;
        }
        return new long[] {n, h.getValue()};
      }
    });
    check(m, ref, got[0], got[1]);
    return got[0];
  }

  /**
   * Downloads bytes {@code from .. from+len} of the file {@code ref} into {@code target} at the
   * same offset; returns bytes. Its length is checked here, the file's checksum by {@link
   * #verify} once every part is in.
   */
  private long downloadPart(Manifest m, FileRef ref, Path target, long from, long len)
      throws IOException {
    long n = fetching(m, ref, () -> {
      try (InputStream in = objects.getRange(ref.key(), ref.offset() + from, len);
          FileChannel out = FileChannel.open(target, StandardOpenOption.WRITE)) {
        byte[] buf = new byte[1 << 16];
        long pos = from;
        int r;
        while ((r = in.read(buf)) > 0) {
          if (pos + r > from + len) {
            return len + 1; // more bytes than asked for: not the object the manifest names
          }
          ByteBuffer b = ByteBuffer.wrap(buf, 0, r);
          while (b.hasRemaining()) {
            pos += out.write(b, pos);
          }
        }
        return pos - from;
      }
    });
    if (n != len) {
      throw new StateLoadException(StateLoadException.Reason.CORRUPT, "Cannot load " + identity
          + " version " + m.version() + ": " + objects.describe(ref.key()) + " bytes "
          + (ref.offset() + from) + ".." + (ref.offset() + from + len) + " returned "
          + (n > len ? "more" : n + "") + " bytes, expected " + len
          + " (the object is shorter or longer than its manifest says)", null);
    }
    return n;
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
    }
    check(m, ref, n, sum);
    return n;
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
