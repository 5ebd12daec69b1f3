package io.strata.sync;

import io.strata.engine.LocalFiles;
import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Where a commit writes its SST delta before the PUT: a directory of this JVM on a memory-backed
 * file system ({@code /dev/shm} on Linux) when there is one, else the store's own temporary
 * directory on the local disk ({@link StoreSettings#stageDeltasInMemory()}).
 *
 * <p>Why: RocksDB's {@code SstFileWriter.finish()} always ends with an fdatasync and then drops
 * the file from the page cache, so on a disk the commit pays a journal flush and then reads the
 * file back from the device for its checksum and again for the PUT. On tmpfs both are memory
 * operations. The local copy needs no durability: the PUT makes the version durable, and the
 * local database is rebuilt from the object store whenever it is in doubt. After the PUT the
 * delta is copied into the store's directory (a hard link cannot cross file systems) and ingested
 * there, off the commit path (see {@link SyncedStore#commit()}).
 *
 * <p>Only deltas of at most {@link #MAX_PENDING_BYTES} of pending writes are staged: tmpfs is
 * memory, and {@code /dev/shm} in a container is often small (64 MiB by default in Docker), so
 * a large batch goes to the disk, and a staged write that fails (the file system is full) is
 * written again to the disk by the caller.
 *
 * <p>The directory is {@code /dev/shm/strata-<pid>}, resolved once per JVM. On first use it is
 * emptied (a directory of our pid can only hold files of a dead process that had the same pid)
 * and the directories of processes no longer alive are deleted, so a JVM killed between a
 * commit's write and its ingestion leaks nothing past the next JVM's first commit.
 */
final class DeltaStaging {
  private static final Logger LOG = LoggerFactory.getLogger(DeltaStaging.class);

  /**
   * Pending writes (approximate heap bytes, {@code LocalStore.pendingBytes()}) above which a
   * delta is written to the disk even when a memory-backed directory exists: 16 MiB.
   */
  static final long MAX_PENDING_BYTES = 16L << 20;
  /** Linux's memory-backed file system for shared memory, on every distribution. */
  static final Path SHM = Path.of("/dev/shm");
  static final String PREFIX = "strata-";

  private static final Object LOCK = new Object();
  /** Null until resolved; then the directory, or empty if there is none. Guarded by LOCK. */
  private static Optional<Path> dir;
  private static final AtomicLong NAMES = new AtomicLong();

  private DeltaStaging() { }

  /**
   * The directory for a delta of {@code pendingBytes}, or {@code fallback} (the store's own
   * temporary directory) if staging is off, the delta is larger than {@link
   * #MAX_PENDING_BYTES}, or this JVM has no memory-backed directory.
   */
  static Path dirFor(boolean inMemory, long pendingBytes, Path fallback) {
    if (!inMemory || pendingBytes > MAX_PENDING_BYTES) {
      return fallback;
    }
    return jvmDir().orElse(fallback);
  }

  /** A file name no other store of this JVM uses: {@code delta-<n>-<version>-<attempt>.sst}. */
  static String fileName(long version, String attempt) {
    return "delta-" + NAMES.incrementAndGet() + "-" + version + "-" + attempt + ".sst";
  }

  /** This JVM's directory under {@link #SHM}, created and cleaned on first use. */
  static Optional<Path> jvmDir() {
    synchronized (LOCK) {
      if (dir == null) {
        dir = resolve(SHM, ProcessHandle.current().pid());
      }
      return dir;
    }
  }

  /**
   * Creates {@code root/strata-<pid>} (emptied if it exists) and deletes the {@code strata-*}
   * directories under {@code root} of processes that are no longer alive. Empty if {@code root}
   * is not a writable directory or the directory cannot be made; never throws.
   */
  static Optional<Path> resolve(Path root, long pid) {
    if (!Files.isDirectory(root) || !Files.isWritable(root)) {
      return Optional.empty();
    }
    Path mine = root.resolve(PREFIX + pid);
    try {
      sweep(root, pid);
      LocalFiles.deleteRecursively(mine);
      Files.createDirectories(mine);
      LOG.info("SST deltas of commits are staged in {} (memory-backed) before their PUT", mine);
      return Optional.of(mine);
    } catch (IOException | RuntimeException e) {
      LOG.info("Cannot use {} to stage SST deltas, they are written to the local disk: {}",
          mine, e.toString());
      return Optional.empty();
    }
  }

  /** Deletes the staging directories under {@code root} of processes that are gone. */
  private static void sweep(Path root, long pid) throws IOException {
    try (DirectoryStream<Path> s = Files.newDirectoryStream(root, PREFIX + "*")) {
      for (Path p : s) {
        String suffix = p.getFileName().toString().substring(PREFIX.length());
        long other;
        try {
          other = Long.parseLong(suffix);
        } catch (NumberFormatException e) {
          continue; // not ours
        }
        if (other != pid && ProcessHandle.of(other).isEmpty()) {
          try {
            LocalFiles.deleteRecursively(p);
          } catch (IOException e) {
            LOG.debug("Cannot delete {} (left by process {}): {}", p, other, e.toString());
          }
        }
      }
    }
  }
}
