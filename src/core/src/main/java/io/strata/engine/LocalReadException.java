// SPDX-License-Identifier: Apache-2.0
package io.strata.engine;

import java.nio.file.Path;
import java.util.Objects;

/**
 * A read of a local RocksDB database failed: a point read ({@link LocalStore#get}, and the
 * existence checks of {@link LocalStore#put} and {@link LocalStore#delete}) or a scan ({@link
 * LocalStore#scan}) stopped on an error RocksDB reported, such as a block whose checksum does
 * not match (RocksDB's message then names the SST file and offset) or an I/O error. A scan that
 * throws it never ends silently short: the error is the end of the scan.
 *
 * <p>Unchecked, because scans are {@link java.util.Iterator}s. The engine knows nothing of the
 * store it belongs to; the caller adds the store and version, and decides what to do with the
 * database (a damaged database must not be reused).
 */
public final class LocalReadException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** Not serialised: a path is meaningless on another host; the message keeps it. */
  private final transient Path dir;
  private final String reason;

  /**
   * @param dir the database directory
   * @param what the read that failed, for example {@code point read} or {@code scan}
   * @param reason RocksDB's message (usually names the file)
   * @param cause RocksDB's exception
   */
  LocalReadException(Path dir, String what, String reason, Throwable cause) {
    super("Cannot " + what + " local RocksDB at " + dir + ": " + reason, cause);
    this.dir = Objects.requireNonNull(dir, "dir");
    this.reason = reason;
  }

  /** The database directory; null after deserialisation. */
  public Path dir() {
    return dir;
  }

  /** RocksDB's message, for example {@code block checksum mismatch: ... in /dir/000012.sst}. */
  public String reason() {
    return reason;
  }
}
