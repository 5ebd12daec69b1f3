// SPDX-License-Identifier: Apache-2.0
package io.strata.objectstore;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.SequenceInputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Objects;

/**
 * The bytes of one object to upload: a length in bytes and a way to open them, possibly more than
 * once (an SDK retry re-reads the body from the start).
 *
 * @param length exact number of bytes {@link #open()} yields, &gt;= 0
 * @param opener opens a fresh stream positioned at the first byte
 */
public record ObjectBody(long length, Opener opener) {

  /** Opens a fresh stream over the body. */
  @FunctionalInterface
  public interface Opener {
    /**
     * Returns a new stream positioned at the first byte; the caller closes it.
     *
     * @throws IOException if the bytes cannot be opened (for example a deleted local file)
     */
    InputStream open() throws IOException;
  }

  /**
   * Checks the components.
   *
   * @throws IllegalArgumentException if {@code length} is negative
   * @throws NullPointerException if {@code opener} is null
   */
  public ObjectBody {
    if (length < 0) {
      throw new IllegalArgumentException("length must be >= 0, was " + length);
    }
    Objects.requireNonNull(opener, "opener");
  }

  /**
   * Opens a fresh stream over the whole body; the caller closes it.
   *
   * @throws IOException if the opener fails
   */
  public InputStream open() throws IOException {
    return opener.open();
  }

  /** A body backed by a byte array (not copied; do not modify it afterwards). */
  public static ObjectBody of(byte[] bytes) {
    return new ObjectBody(bytes.length, () -> new ByteArrayInputStream(bytes));
  }

  /**
   * A body backed by a whole local file, whose size in bytes is read now (the file must not
   * change until the upload is done).
   *
   * @throws IOException if the size cannot be read
   */
  public static ObjectBody of(Path file) throws IOException {
    long size = Files.size(file);
    return new ObjectBody(size, () -> Files.newInputStream(file));
  }

  /** The bytes of {@code first} followed by those of {@code second}. */
  public static ObjectBody concat(ObjectBody first, ObjectBody second) {
    return new ObjectBody(
        first.length + second.length,
        () -> new SequenceInputStream(first.open(), second.open()));
  }
}
