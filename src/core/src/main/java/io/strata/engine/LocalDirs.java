// SPDX-License-Identifier: Apache-2.0
package io.strata.engine;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Which JVM owns which local directory, so that directories left by a JVM that crashed (or was
 * killed before its stores closed) are deleted by the next JVM that uses the same root, while a
 * live JVM's directories are never touched. Executors of several applications may share one root
 * (for example a {@code localDir} on a host's NVMe disk).
 *
 * <p>Layout under a root:
 * <pre>
 *   jvm-&lt;uuid&gt;.lock   an OS file lock (fcntl, {@link FileChannel#tryLock()}) held by the owning
 *                     JVM for its whole life; the OS drops it when the process dies
 *   jvm-&lt;uuid&gt;/       the owner's store directories
 * </pre>
 *
 * <p>Claiming a root (once per JVM and root): create {@code jvm-<uuid>.lock}, lock it, check it
 * still exists (a sweeper deletes a lock file only while it holds the lock, so a file that
 * survived until we hold the lock stays ours), then create {@code jvm-<uuid>/}. Then sweep: for
 * every other lock file whose lock can be taken, the owner is gone: delete its directory, then
 * the lock file, then let go of the lock. A {@code jvm-*} directory without a lock file is
 * deleted too (an owner creates its lock file first and never deletes it while alive). Other
 * names under the root are left alone.
 *
 * <p>Lock files of this JVM are never opened by the sweep (closing any channel on a file may drop
 * the JVM's lock on it, see {@link FileLock}); roots are compared by their real path.
 */
public final class LocalDirs {
  private static final Logger LOG = LoggerFactory.getLogger(LocalDirs.class);
  private static final String PREFIX = "jvm-";
  private static final String LOCK_SUFFIX = ".lock";

  /** Claimed roots (real path) of this JVM; the locks live as long as the JVM. */
  private static final Map<Path, Claim> CLAIMS = new HashMap<>();

  private record Claim(Path dir, Path lockFile, FileChannel channel, FileLock lock) { }

  private LocalDirs() { }

  /**
   * This JVM's directory under {@code root}: claimed (and locked) on the first call for the root,
   * after which the directories of JVMs that no longer hold their lock are deleted.
   *
   * @param root parent of every JVM's directory, e.g. {@code <spark.local.dir>/strata}; created if
   *     missing
   * @return {@code root/jvm-<uuid>}, existing and owned by this JVM until it exits
   * @throws IOException if the root cannot be created or locked (message names the root)
   */
  public static synchronized Path claim(Path root) throws IOException {
    Files.createDirectories(root);
    Path real = root.toRealPath();
    Claim c = CLAIMS.get(real);
    if (c != null && !Files.exists(c.lockFile())) {
      // Someone removed our lock file (and likely the directory): the old lock guards nothing.
      CLAIMS.remove(real);
      c.channel().close();
      c = null;
    }
    if (c == null) {
      c = lockNew(real);
      CLAIMS.put(real, c);
      Files.createDirectories(c.dir());
      sweep(real);
    } else {
      Files.createDirectories(c.dir());
    }
    return c.dir();
  }

  private static Claim lockNew(Path root) throws IOException {
    for (int attempt = 0; attempt < 5; attempt++) {
      String name = PREFIX + UUID.randomUUID();
      Path lockFile = root.resolve(name + LOCK_SUFFIX);
      FileChannel ch = FileChannel.open(lockFile, StandardOpenOption.CREATE_NEW,
          StandardOpenOption.WRITE);
      FileLock lock = null;
      try {
        lock = ch.tryLock();
        if (lock != null && Files.exists(lockFile)) {
          return new Claim(root.resolve(name), lockFile, ch, lock);
        }
      } catch (IOException | RuntimeException e) {
        ch.close();
        throw e;
      }
      // A sweeper took the fresh lock file for a dead one's (and deleted it): try a new name.
      ch.close();
    }
    throw new IOException("Cannot claim a local directory under " + root
        + ": another process kept taking the lock files");
  }

  /**
   * Deletes the directories of JVMs that no longer hold their lock (see the class comment).
   *
   * @return how many directories were deleted
   */
  static synchronized int sweep(Path realRoot) {
    List<Path> entries;
    try (Stream<Path> s = Files.list(realRoot)) {
      entries = s.toList();
    } catch (IOException e) {
      LOG.warn("Cannot list {} to delete directories of exited JVMs: {}", realRoot, e.toString());
      return 0;
    }
    List<String> own = new ArrayList<>();
    for (Claim c : CLAIMS.values()) {
      own.add(c.dir().toString());
    }
    int deleted = 0;
    for (Path p : entries) {
      String name = p.getFileName().toString();
      if (!name.startsWith(PREFIX)) {
        continue;
      }
      if (name.endsWith(LOCK_SUFFIX)) {
        Path dir = realRoot.resolve(name.substring(0, name.length() - LOCK_SUFFIX.length()));
        if (own.contains(dir.toString())) {
          continue;
        }
        if (deleteIfAbandoned(p, dir)) {
          deleted++;
        }
      } else if (Files.isDirectory(p) && !own.contains(p.toString())
          && !Files.exists(realRoot.resolve(name + LOCK_SUFFIX))) {
        LOG.info("Deleting local directory {} (no owner lock file)", p);
        if (deleteTree(p)) {
          deleted++;
        }
      }
    }
    return deleted;
  }

  /** Takes {@code lockFile}'s lock if nobody holds it, then deletes {@code dir} and the file. */
  private static boolean deleteIfAbandoned(Path lockFile, Path dir) {
    try (FileChannel ch = FileChannel.open(lockFile, StandardOpenOption.WRITE)) {
      FileLock lock;
      try {
        lock = ch.tryLock();
      } catch (OverlappingFileLockException e) {
        return false; // held in this JVM (the same root under another name)
      }
      if (lock == null) {
        return false; // a live process holds it
      }
      try {
        LOG.info("Deleting local directory {} left by a JVM that exited or crashed", dir);
        boolean ok = deleteTree(dir);
        if (ok) {
          Files.deleteIfExists(lockFile);
        }
        return ok;
      } finally {
        lock.release();
      }
    } catch (NoSuchFileException e) {
      return false; // another sweeper was faster
    } catch (IOException e) {
      LOG.warn("Cannot check or delete {} ({}): {}", dir, lockFile, e.toString());
      return false;
    }
  }

  private static boolean deleteTree(Path p) {
    try {
      LocalFiles.deleteRecursively(p);
      return true;
    } catch (IOException | RuntimeException e) {
      LOG.warn("Cannot delete local directory {}: {}", p, e.toString());
      return false;
    }
  }
}
