// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import io.strata.engine.LocalDirs;
import io.strata.engine.LocalFiles;
import java.io.IOException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Where a commit writes a large SST delta before the PUT: a directory of this JVM on a
 * memory-backed file system ({@code /dev/shm} on Linux) when there is one, else the store's own
 * temporary directory on the local disk ({@link StoreSettings#stageDeltasInMemory()}). A delta of
 * up to {@code LocalStore.IN_MEMORY_DELTA_BYTES} of pending writes (the rule: a batch's changes)
 * is built in memory and never staged: its ingestion writes it straight into the store's
 * temporary directory.
 *
 * <p>Why stage at all: the file is read again for the PUT (and, on a failure, for the SDK's
 * retries) while the commit waits; on tmpfs those reads are memory operations whatever the disk
 * is doing (RocksDB's compactions, other stores' ingestions). The local copy needs no
 * durability: the PUT makes the version durable, and the local database is rebuilt from the
 * object store whenever it is in doubt. After the PUT the delta is copied into the store's
 * directory (a hard link cannot cross file systems) and ingested there, off the commit path (see
 * {@link SyncedStore#commit()}). (Before Strata wrote SSTs itself, RocksDB's {@code
 * SstFileWriter.finish()} also ended every delta with an fdatasync and dropped it from the page
 * cache, which made staging worth more.)
 *
 * <p>Only deltas of at most {@link #MAX_PENDING_BYTES} of pending writes are staged: tmpfs is
 * memory (charged to the writer's memory cgroup), and {@code /dev/shm} in a container is often
 * small (64 MiB by default in Docker), so a larger batch goes to the disk, and a staged write
 * that fails (the file system is full) is written again to the disk by the caller. A staged file
 * lives from the commit's SST build until its ingestion copied it: a few milliseconds after the
 * commit returned when the committer starts the ingestion ({@link
 * SyncedStore#startLocalIngestion()}, as the Spark provider does), else at the store's next call
 * or its close.
 *
 * <p>The directory is {@code /dev/shm/strata-<user>/jvm-<uuid>}, claimed once per JVM with
 * {@link LocalDirs#claim} (an OS file lock held for the JVM's life), so JVMs that share {@code
 * /dev/shm} across PID namespaces never touch each other's files, and the first JVM to stage
 * after one that was killed deletes what it left. {@code strata-<user>} is made readable by its
 * owner only (deltas are state). A JVM that exits normally deletes its own directory.
 */
final class DeltaStaging {
  private static final Logger LOG = LoggerFactory.getLogger(DeltaStaging.class);

  /**
   * Pending writes (approximate heap bytes, {@code LocalStore.pendingBytes()}) above which a
   * delta is written to the disk even when a memory-backed directory exists: 8 MiB (the SST is
   * smaller: keys are sorted and blocks compressed).
   */
  static final long MAX_PENDING_BYTES = 8L << 20;
  /** Linux's memory-backed file system for shared memory, on every distribution. */
  static final Path SHM = Path.of("/dev/shm");

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

  /** This JVM's directory under {@link #SHM}, claimed on first use; empty if there is none. */
  static Optional<Path> jvmDir() {
    synchronized (LOCK) {
      if (dir == null) {
        dir = resolve(SHM, System.getProperty("user.name", "user"));
        dir.ifPresent(d -> Runtime.getRuntime().addShutdownHook(new Thread(() -> {
          try {
            LocalFiles.deleteRecursively(d);
          } catch (IOException | RuntimeException e) {
            // the next JVM to stage deletes it
          }
        }, "strata-delta-staging-cleanup")));
      }
      return dir;
    }
  }

  /**
   * Claims this JVM's directory under {@code root/strata-<user>} ({@link LocalDirs#claim}, which
   * also deletes the directories of JVMs that are gone). Empty if {@code root} is not a writable
   * directory, if {@code strata-<user>} is not a private directory of this process's user (see
   * {@link #checkPrivate}), or if the claim fails; never throws.
   */
  static Optional<Path> resolve(Path root, String user) {
    if (!Files.isDirectory(root) || !Files.isWritable(root)) {
      return Optional.empty();
    }
    Path base = root.resolve("strata-" + user.replaceAll("[^A-Za-z0-9._-]", "_"));
    try {
      if (!Files.exists(base, LinkOption.NOFOLLOW_LINKS)) {
        try {
          Files.createDirectory(base, PosixFilePermissions.asFileAttribute(
              PosixFilePermissions.fromString("rwx------")));
        } catch (FileAlreadyExistsException e) {
          // another JVM of this user made it meanwhile
        }
      }
      checkPrivate(root, base);
      Path mine = LocalDirs.claim(base);
      LOG.info("SST deltas of commits are staged in {} (memory-backed) before their PUT", mine);
      return Optional.of(mine);
    } catch (IOException | RuntimeException e) {
      LOG.warn("Cannot stage SST deltas under {}, they are written to the local disk: {}",
          base, e.toString());
      return Optional.empty();
    }
  }

  /**
   * Makes sure {@code base} is a directory (not a link) owned by this process's user with no
   * access for anyone else, tightening its mode if this user owns it. {@code /dev/shm} is shared
   * by every user of the host (a YARN node runs many users' containers): a directory of the
   * expected name made first by another user would let that user read the staged deltas, or
   * swap them between their checksum and their PUT.
   *
   * @throws IOException if {@code base} is a link, not a directory, or owned by another user
   *     (the message names the directory, its owner's uid and this process's)
   */
  static void checkPrivate(Path root, Path base) throws IOException {
    Path probe = Files.createTempFile(root, ".strata-uid-", "");
    int uid;
    try {
      uid = (Integer) Files.getAttribute(probe, "unix:uid", LinkOption.NOFOLLOW_LINKS);
    } finally {
      Files.deleteIfExists(probe);
    }
    Map<String, Object> a = Files.readAttributes(base, "unix:uid,mode,isDirectory",
        LinkOption.NOFOLLOW_LINKS);
    int owner = (Integer) a.get("uid");
    if (!(Boolean) a.get("isDirectory") || owner != uid) {
      throw new IOException(base + " must be a directory owned by this process's user (uid "
          + uid + "), found " + ((Boolean) a.get("isDirectory") ? "a directory" : "no directory")
          + " of uid " + owner);
    }
    if (((Integer) a.get("mode") & 0077) != 0) {
      Files.setPosixFilePermissions(base, PosixFilePermissions.fromString("rwx------"));
    }
  }
}
