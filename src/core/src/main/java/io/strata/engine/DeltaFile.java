// SPDX-License-Identifier: Apache-2.0
package io.strata.engine;

import java.nio.file.Path;

/**
 * An SST delta written locally.
 *
 * @param path the SST file
 * @param size size in bytes
 * @param checksum XXHash64 of the file's bytes
 * @param entries number of puts and tombstones in it
 * @param bytes the file's bytes when the writer kept them in memory (a small delta: the upload
 *     then reads them instead of the file), else null; never modified
 */
public record DeltaFile(Path path, long size, long checksum, long entries, byte[] bytes) {
  /** A delta whose bytes are only in its file. */
  public DeltaFile(Path path, long size, long checksum, long entries) {
    this(path, size, checksum, entries, null);
  }
}
