// SPDX-License-Identifier: Apache-2.0
package io.strata.engine;

import io.strata.format.sst.SstWriter;
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
 * @param parts the file's bytes by part (data, filter, index, table metadata), as its writer
 *     counted them; null for a delta not just written (one moved for ingestion)
 */
public record DeltaFile(Path path, long size, long checksum, long entries, byte[] bytes,
    SstWriter.Parts parts) {
  /** A delta whose bytes are only in its file, its parts unknown. */
  public DeltaFile(Path path, long size, long checksum, long entries) {
    this(path, size, checksum, entries, null, null);
  }
}
