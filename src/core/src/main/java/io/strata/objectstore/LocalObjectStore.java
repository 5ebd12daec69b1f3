// SPDX-License-Identifier: Apache-2.0
package io.strata.objectstore;

import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.file.AccessDeniedException;
import java.nio.file.DirectoryStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An {@link ObjectStore} over a local directory, for {@code file:} checkpoint locations and plain
 * paths (tests, single-machine runs, a shared POSIX mount).
 *
 * <p>Key {@code a/b/c} is the file {@code root/a/b/c}. Writes go to a hidden temporary file in
 * the target's directory, are fsynced, and are then published in one step, so an object appears
 * whole or not at all:
 *
 * <ul>
 *   <li>{@link #putIfAbsent} publishes with {@link Files#createLink} (POSIX {@code link(2)}),
 *       which fails atomically if the name exists: exactly one of several racing writers wins.
 *   <li>{@link #put} publishes with an atomic rename that replaces.
 * </ul>
 *
 * <p>Differences from S3, inherent to a filesystem: a key cannot be both an object and a prefix
 * of other keys ({@code a} and {@code a/b}); directories emptied by {@link #delete} are left in
 * place; {@link ObjectInfo#metadata()} is always empty. Hidden temporary files ({@code
 * .<name>.strata-tmp-<uuid>}) are never listed.
 */
final class LocalObjectStore implements ObjectStore {
  private static final Logger LOG = LoggerFactory.getLogger(LocalObjectStore.class);
  private static final String TMP_MARKER = ".strata-tmp-";

  private final Path root;
  private final AtomicBoolean closed = new AtomicBoolean();

  /**
   * A store rooted at {@code root}. Does no I/O: the directory is created by the first write;
   * reads of a missing root find nothing.
   */
  LocalObjectStore(Path root) {
    this.root = root.toAbsolutePath().normalize();
  }

  /** The root directory. */
  Path root() {
    return root;
  }

  @Override
  public void putIfAbsent(String key, ObjectBody body) throws IOException {
    Path target = resolve(key);
    Path tmp = writeTemp(key, target, body, "create");
    try {
      publishWithoutReplace(key, tmp, target);
      fsyncDirectory(target.getParent());
    } finally {
      deleteQuietly(tmp);
    }
  }

  /** Makes {@code tmp} visible as {@code target} unless {@code target} exists, atomically. */
  private void publishWithoutReplace(String key, Path tmp, Path target) throws IOException {
    try {
      Files.createLink(target, tmp);
      return;
    } catch (FileAlreadyExistsException e) {
      throw alreadyExists(key, e);
    } catch (UnsupportedOperationException e) {
      warnNoLinks(key);
    } catch (FileSystemException e) {
      if (!linkUnsupported(e)) {
        throw error("create", key, e);
      }
      warnNoLinks(key);
    } catch (IOException e) {
      throw error("create", key, e);
    }
    // No hard links here (some network and FUSE filesystems): a move without replace checks and
    // renames in two steps, so it is not safe when writers race.
    try {
      Files.move(tmp, target);
    } catch (FileAlreadyExistsException e) {
      throw alreadyExists(key, e);
    } catch (IOException e) {
      throw error("create", key, e);
    }
  }

  private ObjectAlreadyExistsException alreadyExists(String key, IOException cause) {
    return new ObjectAlreadyExistsException(
        "Cannot create " + describe(key) + ": the object already exists", cause);
  }

  private void warnNoLinks(String key) {
    LOG.warn("Hard links are not supported under {}; the create-only write of {} is not atomic"
        + " under concurrent writers", root, describe(key));
  }

  @Override
  public void put(String key, ObjectBody body) throws IOException {
    Path target = resolve(key);
    Path tmp = writeTemp(key, target, body, "put");
    try {
      Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
      fsyncDirectory(target.getParent());
    } catch (IOException e) {
      throw error("put", key, e);
    } finally {
      deleteQuietly(tmp);
    }
  }

  @Override
  public InputStream get(String key) throws IOException {
    Path file = resolve(key);
    checkOpen();
    try {
      return Files.newInputStream(file);
    } catch (IOException e) {
      throw readError("read", key, file, e);
    }
  }

  @Override
  public InputStream getRange(String key, long offset, long length) throws IOException {
    if (offset < 0 || length <= 0) {
      throw new IllegalArgumentException(
          "offset must be >= 0 and length > 0, were " + offset + " and " + length);
    }
    Path file = resolve(key);
    checkOpen();
    FileChannel channel;
    try {
      channel = FileChannel.open(file, StandardOpenOption.READ);
    } catch (IOException e) {
      throw readError("read", key, file, e);
    }
    boolean ok = false;
    try {
      long size = channel.size();
      if (offset >= size) {
        // S3 answers 416 InvalidRange when the first byte is at or past the end.
        throw new ObjectStoreException("Cannot read " + describe(key) + " bytes " + offset + "-"
            + (offset + length - 1) + ": range not satisfiable (object has " + size + " bytes)",
            false, null);
      }
      channel.position(offset);
      InputStream in = new BoundedInputStream(
          Channels.newInputStream(channel), Math.min(length, size - offset));
      ok = true;
      return in;
    } catch (IOException e) {
      throw error("read", key, e);
    } finally {
      if (!ok) {
        channel.close();
      }
    }
  }

  @Override
  public byte[] getTail(String key, int length) throws IOException {
    if (length <= 0) {
      throw new IllegalArgumentException("length must be > 0, was " + length);
    }
    Path file = resolve(key);
    checkOpen();
    try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
      long size = channel.size();
      int n = (int) Math.min(length, size);
      ByteBuffer buf = ByteBuffer.allocate(n);
      long pos = size - n;
      while (buf.hasRemaining()) {
        int read = channel.read(buf, pos + buf.position());
        if (read < 0) {
          throw new IOException("file shrank while reading");
        }
      }
      return buf.array();
    } catch (IOException e) {
      throw readError("read", key, file, e);
    }
  }

  @Override
  public Optional<ObjectInfo> head(String key) throws IOException {
    Path file = resolve(key);
    checkOpen();
    try {
      BasicFileAttributes attrs = Files.readAttributes(file, BasicFileAttributes.class);
      if (!attrs.isRegularFile()) {
        return Optional.empty();
      }
      return Optional.of(new ObjectInfo(
          key, attrs.size(), attrs.lastModifiedTime().toMillis(), Map.of()));
    } catch (IOException e) {
      if (isMissing(e)) {
        return Optional.empty();
      }
      throw error("head", key, e);
    }
  }

  @Override
  public List<ObjectInfo> list(String prefix) throws IOException {
    Keys.validatePrefix(prefix);
    checkOpen();
    // Walk only the deepest directory the prefix names, then filter by the full prefix.
    int slash = prefix.lastIndexOf('/');
    String dirKey = slash < 0 ? "" : prefix.substring(0, slash);
    Path start = dirKey.isEmpty() ? root : root.resolve(dirKey);
    List<ObjectInfo> out = new ArrayList<>();
    try {
      walk(start, dirKey, prefix, out);
    } catch (IOException e) {
      throw new ObjectStoreException(
          "Cannot list " + describe(prefix) + ": " + reason(e), false, e);
    }
    out.sort((a, b) -> Keys.compare(a.key(), b.key()));
    return out;
  }

  private void walk(Path dir, String dirKey, String prefix, List<ObjectInfo> out)
      throws IOException {
    if (!Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS)) {
      return;
    }
    try (DirectoryStream<Path> entries = Files.newDirectoryStream(dir)) {
      for (Path entry : entries) {
        String name = entry.getFileName().toString();
        if (name.startsWith(".") && name.contains(TMP_MARKER)) {
          continue;
        }
        String key = dirKey.isEmpty() ? name : dirKey + "/" + name;
        BasicFileAttributes attrs;
        try {
          attrs = Files.readAttributes(entry, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
        } catch (NoSuchFileException deletedMeanwhile) {
          continue;
        }
        if (attrs.isDirectory()) {
          // Descend only where keys below can still match the prefix.
          String asPrefix = key + "/";
          if (asPrefix.startsWith(prefix) || prefix.startsWith(asPrefix)) {
            walk(entry, key, prefix, out);
          }
        } else if (attrs.isRegularFile() && key.startsWith(prefix)) {
          out.add(new ObjectInfo(key, attrs.size(), attrs.lastModifiedTime().toMillis(), Map.of()));
        }
      }
    } catch (NoSuchFileException | NotDirectoryException deletedMeanwhile) {
      // a concurrent delete removed it: nothing to list
    }
  }

  @Override
  public void delete(List<String> keys) throws IOException {
    List<Path> files = new ArrayList<>(keys.size());
    for (String key : keys) {
      files.add(resolve(key));
    }
    checkOpen();
    for (int i = 0; i < files.size(); i++) {
      try {
        Files.deleteIfExists(files.get(i));
      } catch (IOException e) {
        throw error("delete", keys.get(i), e);
      }
    }
  }

  /**
   * Deletes hidden temporary files ({@code .<name>.strata-tmp-<uuid>}) under {@code prefix}
   * last written before {@code startedBeforeMillis}: writes that never finished (the writer
   * died between writing and publishing). A write still running keeps its file's last-modified
   * time fresh.
   */
  @Override
  public int abortIncompleteUploads(String prefix, long startedBeforeMillis) throws IOException {
    Keys.validatePrefix(prefix);
    checkOpen();
    int slash = prefix.lastIndexOf('/');
    String dirKey = slash < 0 ? "" : prefix.substring(0, slash);
    Path start = dirKey.isEmpty() ? root : root.resolve(dirKey);
    if (!Files.isDirectory(start, LinkOption.NOFOLLOW_LINKS)) {
      return 0;
    }
    int aborted = 0;
    try (Stream<Path> files = Files.walk(start)) {
      for (Path p : (Iterable<Path>) files::iterator) {
        String name = p.getFileName().toString();
        if (!name.startsWith(".") || !name.contains(TMP_MARKER)) {
          continue;
        }
        String key = root.relativize(p.getParent().resolve(
            name.substring(1, name.indexOf(TMP_MARKER)))).toString().replace('\\', '/');
        try {
          BasicFileAttributes attrs = Files.readAttributes(p, BasicFileAttributes.class,
              LinkOption.NOFOLLOW_LINKS);
          if (key.startsWith(prefix) && attrs.isRegularFile()
              && attrs.lastModifiedTime().toMillis() < startedBeforeMillis
              && Files.deleteIfExists(p)) {
            aborted++;
            LOG.info("Deleted stale temporary file {} of an unfinished write of {}", p,
                describe(key));
          }
        } catch (NoSuchFileException finishedMeanwhile) {
          // the write completed or was cleaned up meanwhile
        }
      }
    } catch (UncheckedIOException e) {
      if (!(e.getCause() instanceof NoSuchFileException)) {
        throw error("abort incomplete uploads under", prefix, e.getCause());
      }
    } catch (IOException e) {
      throw error("abort incomplete uploads under", prefix, e);
    }
    return aborted;
  }

  @Override
  public String describe(String key) {
    return root.resolve(key).toUri().toString();
  }

  @Override
  public void close() {
    closed.set(true);
  }

  @Override
  public String toString() {
    return "LocalObjectStore[" + root.toUri() + "]";
  }

  // ---------------------------------------------------------------------------------------------

  private Path resolve(String key) {
    Keys.validate(key);
    Path p = root.resolve(key).normalize();
    if (!p.startsWith(root) || p.equals(root)) {
      throw new IllegalArgumentException("Invalid object key '" + key + "': outside the root");
    }
    return p;
  }

  private void checkOpen() {
    if (closed.get()) {
      throw new IllegalStateException("Object store " + root.toUri() + " is closed");
    }
  }

  /** Writes {@code body} to a fresh hidden temporary file next to {@code target} and fsyncs it. */
  private Path writeTemp(String key, Path target, ObjectBody body, String action)
      throws IOException {
    checkOpen();
    Path dir = target.getParent();
    Path tmp = dir.resolve("." + target.getFileName() + TMP_MARKER + UUID.randomUUID());
    try {
      Files.createDirectories(dir);
      try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.CREATE_NEW,
              StandardOpenOption.WRITE);
          OutputStream out = Channels.newOutputStream(ch);
          InputStream in = body.open()) {
        long copied = in.transferTo(out);
        if (copied != body.length()) {
          throw new IOException("body yielded " + copied + " bytes, expected " + body.length());
        }
        ch.force(true);
      }
      return tmp;
    } catch (IOException e) {
      deleteQuietly(tmp);
      throw error(action, key, e);
    } catch (RuntimeException e) {
      deleteQuietly(tmp);
      throw e;
    }
  }

  private static void deleteQuietly(Path file) {
    try {
      Files.deleteIfExists(file);
    } catch (IOException e) {
      LOG.warn("Cannot delete temporary file {}: {}", file, e.toString());
    }
  }

  private static void fsyncDirectory(Path dir) {
    try (FileChannel ch = FileChannel.open(dir, StandardOpenOption.READ)) {
      ch.force(true);
    } catch (IOException e) {
      // Some platforms cannot open or sync a directory; the data file itself is synced.
      LOG.debug("Cannot fsync directory {}: {}", dir, e.toString());
    }
  }

  private static boolean linkUnsupported(FileSystemException e) {
    String r = String.valueOf(e.getReason());
    return r.contains("not permitted") || r.contains("not supported");
  }

  private ObjectStoreException readError(String action, String key, Path file, IOException e) {
    if (isMissing(e) || Files.isDirectory(file)) {
      return new ObjectNotFoundException(
          "Cannot " + action + " " + describe(key) + ": no such object", e);
    }
    return error(action, key, e);
  }

  /**
   * True if {@code e} says the path does not exist, including ENOTDIR: a path through a regular
   * file ({@code a/b} when {@code a} is an object) names no object either.
   */
  private static boolean isMissing(IOException e) {
    return e instanceof NoSuchFileException || e instanceof NotDirectoryException
        || (e instanceof FileSystemException fse && "Not a directory".equals(fse.getReason()));
  }

  private ObjectStoreException error(String action, String key, IOException e) {
    if (e instanceof ObjectStoreException ose) {
      return ose;
    }
    // Local I/O errors (permissions, full disk, read-only mount) do not heal by retrying soon.
    return new ObjectStoreException(
        "Cannot " + action + " " + describe(key) + ": " + reason(e), false, e);
  }

  private static String reason(IOException e) {
    if (e instanceof AccessDeniedException) {
      return "access denied";
    }
    return e.toString();
  }

  /** Yields at most {@code remaining} bytes of the wrapped stream. */
  private static final class BoundedInputStream extends FilterInputStream {
    private long remaining;

    BoundedInputStream(InputStream in, long remaining) {
      super(in);
      this.remaining = remaining;
    }

    @Override
    public int read() throws IOException {
      if (remaining <= 0) {
        return -1;
      }
      int b = super.read();
      if (b >= 0) {
        remaining--;
      }
      return b;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
      if (remaining <= 0) {
        return len == 0 ? 0 : -1;
      }
      int n = super.read(b, off, (int) Math.min(len, remaining));
      if (n > 0) {
        remaining -= n;
      }
      return n;
    }

    @Override
    public long skip(long n) throws IOException {
      long skipped = super.skip(Math.min(n, remaining));
      remaining -= skipped;
      return skipped;
    }

    @Override
    public int available() throws IOException {
      return (int) Math.min(super.available(), remaining);
    }

    @Override
    public boolean markSupported() {
      return false;
    }
  }
}
