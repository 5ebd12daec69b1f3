// SPDX-License-Identifier: Apache-2.0
package io.strata.engine;

import java.io.IOException;
import java.nio.file.Path;

/**
 * RocksDB could not open or ingest an SST because the file is in a table format the RocksDB of
 * this JVM does not read (written on a newer Spark line's RocksDB; see {@link TableFormat}). The
 * file is intact: it is not corruption. The message names the file, its table format, the
 * formats this JVM reads and the supported Spark lines that read it.
 */
public final class UnreadableTableFormatException extends IOException {
  private static final long serialVersionUID = 1L;
  private final transient Path file;
  private final int formatVersion;
  private final String reason;

  UnreadableTableFormatException(Path file, Path dir, int formatVersion, String reason,
      Exception cause) {
    super("Cannot open local RocksDB at " + dir + ": " + reason, cause);
    this.file = file;
    this.formatVersion = formatVersion;
    this.reason = reason;
  }

  /** The SST file in the unreadable format. */
  public Path file() {
    return file;
  }

  /** Its table format version. */
  public int formatVersion() {
    return formatVersion;
  }

  /**
   * What is wrong, without the directory: the file, its format, what this JVM reads and the
   * lines that read it.
   */
  public String reason() {
    return reason;
  }
}
