// SPDX-License-Identifier: Apache-2.0
package io.strata.format;

import java.util.Objects;

/**
 * A byte range of one remote object holding one whole file (an SST, or a small RocksDB metadata
 * file), with the checksum that proves it intact.
 *
 * @param key object key relative to the store's root
 * @param offset first byte of the file within the object (&gt;= 0)
 * @param length file size in bytes (&gt;= 0; {@code offset + length} must not overflow a long)
 * @param checksum XXHash64 (seed 0, lz4-java) of exactly those {@code length} bytes
 */
public record FileRef(String key, long offset, long length, long checksum) {
  public FileRef {
    Objects.requireNonNull(key, "key");
    if (offset < 0 || length < 0) {
      throw new IllegalArgumentException("offset and length must be >= 0: " + offset + ", " + length);
    }
    if (length > Long.MAX_VALUE - offset) {
      // A range past the largest byte position: no object holds it (a damaged manifest).
      throw new IllegalArgumentException("offset + length overflows: " + offset + " + " + length);
    }
  }

  /** Identity of the content regardless of where it is stored: (length, checksum). */
  public ContentId contentId() {
    return new ContentId(length, checksum);
  }

  /**
   * Content identity of a file, used to recognise that a local SST is already in S3.
   *
   * @param length size in bytes
   * @param checksum XXHash64 of the bytes
   */
  public record ContentId(long length, long checksum) { }
}
