// SPDX-License-Identifier: Apache-2.0
package io.strata.engine;

import java.io.IOException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.stream.Stream;
import org.rocksdb.Options;
import org.rocksdb.RocksDBException;
import org.rocksdb.SstFileReader;

/**
 * Checks on the immutable files of a local RocksDB database before they are reused.
 *
 * <p>RocksDB never modifies an SST file once written (it only creates and deletes them), so an
 * SST whose size, modification time or file identity (inode) changed since it was last seen was
 * changed by something else: a disk fault, an operator, another process. {@link #stamps} records
 * them cheaply (one directory listing, no reads); {@link #changed} compares. Silent bit rot that
 * leaves the metadata alone is caught by RocksDB's per-block checksums when a block is read, and
 * {@link #verifySst} reads every block of one file (used before a file's bytes are uploaded).
 */
public final class LocalFiles {
  private LocalFiles() { }

  /**
   * What identifies one version of a local file without reading it.
   *
   * @param size bytes
   * @param modifiedNanos last-modified time, ns since the epoch (at the file system's
   *     resolution)
   * @param fileKey the file system's identity of the file (an inode on Unix), or null if the
   *     file system has none
   */
  public record Stamp(long size, long modifiedNanos, Object fileKey) { }

  /**
   * The stamps of the SST files directly in {@code dir}, by file name.
   *
   * @return an empty map if {@code dir} does not exist
   * @throws IOException if the directory cannot be listed or a file cannot be read
   */
  public static Map<String, Stamp> stamps(Path dir) throws IOException {
    return stamps(dir, null);
  }

  /**
   * As {@link #stamps(Path)}, limited to {@code names} (for example {@link
   * LocalStore#liveSstFiles()}); null for every SST in {@code dir}.
   */
  public static Map<String, Stamp> stamps(Path dir, java.util.Set<String> names)
      throws IOException {
    Map<String, Stamp> result = new HashMap<>();
    if (!Files.isDirectory(dir)) {
      return result;
    }
    try (Stream<Path> s = Files.list(dir)) {
      for (Path p : (Iterable<Path>) s::iterator) {
        String name = p.getFileName().toString();
        if (!name.endsWith(".sst") || (names != null && !names.contains(name))) {
          continue;
        }
        try {
          BasicFileAttributes a = Files.readAttributes(p, BasicFileAttributes.class);
          result.put(name, new Stamp(a.size(),
              a.lastModifiedTime().to(java.util.concurrent.TimeUnit.NANOSECONDS), a.fileKey()));
        } catch (java.nio.file.NoSuchFileException deletedByCompaction) {
          // RocksDB deleted it between the listing and the stat: no longer part of the database
        }
      }
    }
    return result;
  }

  /**
   * The first SST file present in both maps whose stamp differs, with what differs; files only
   * in one of them (written by a commit or compaction, or deleted by compaction) are not
   * changes.
   *
   * @param before stamps taken when the database was last known good
   * @param now stamps taken now
   * @return a description such as {@code 000012.sst (size 1500 -> 1499 bytes)}, or empty
   */
  public static Optional<String> changed(Map<String, Stamp> before, Map<String, Stamp> now) {
    for (Map.Entry<String, Stamp> e : now.entrySet()) {
      Stamp old = before.get(e.getKey());
      Stamp cur = e.getValue();
      if (old == null || old.equals(cur)) {
        continue;
      }
      String what;
      if (old.size() != cur.size()) {
        what = "size " + old.size() + " -> " + cur.size() + " bytes";
      } else if (old.modifiedNanos() != cur.modifiedNanos()) {
        what = "modified on disk after it was written";
      } else {
        what = "replaced by another file";
      }
      return Optional.of(e.getKey() + " (" + what + ")");
    }
    return Optional.empty();
  }

  /**
   * Reads every block of the SST file {@code sst} and checks its RocksDB block checksums.
   *
   * @throws IOException naming the file and RocksDB's reason if the file cannot be opened or a
   *     checksum does not match
   */
  public static void verifySst(Path sst) throws IOException {
    Objects.requireNonNull(sst, "sst");
    try (Options o = new Options(); SstFileReader r = new SstFileReader(o)) {
      r.open(sst.toString());
      r.verifyChecksum();
    } catch (RocksDBException e) {
      throw new IOException("local SST " + sst + " is corrupt: " + e.getMessage(), e);
    }
  }

  /**
   * Deletes a file or a directory tree, children first; a missing path is fine, and so is an
   * entry that disappears while the tree is walked. The one recursive delete of the code base.
   *
   * @throws IOException if an entry cannot be deleted or a directory cannot be read (what was
   *     deleted before stays deleted)
   */
  public static void deleteRecursively(Path root) throws IOException {
    if (!Files.exists(root)) {
      return;
    }
    Files.walkFileTree(root, new SimpleFileVisitor<>() {
      @Override
      public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) throws IOException {
        Files.deleteIfExists(file);
        return FileVisitResult.CONTINUE;
      }

      @Override
      public FileVisitResult visitFileFailed(Path file, IOException e) throws IOException {
        if (e instanceof NoSuchFileException) {
          return FileVisitResult.CONTINUE;
        }
        throw e;
      }

      @Override
      public FileVisitResult postVisitDirectory(Path dir, IOException e) throws IOException {
        if (e != null && !(e instanceof NoSuchFileException)) {
          throw e;
        }
        Files.deleteIfExists(dir);
        return FileVisitResult.CONTINUE;
      }
    });
  }
}
