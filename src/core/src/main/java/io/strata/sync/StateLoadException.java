// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import java.io.IOException;

/**
 * A version cannot be loaded from the object store. The message names the store, the version and
 * the object key, and says what was wrong. Never means "empty state": a caller that gets it must
 * fail, not start over.
 */
public class StateLoadException extends IOException {
  private static final long serialVersionUID = 1L;

  /** Why the load failed. */
  public enum Reason {
    /** No committed version object exists for the version (or the named attempt). */
    VERSION_NOT_FOUND,
    /** A file the manifest names is missing. */
    MISSING_FILE,
    /** A file or manifest does not match its checksum or layout. */
    CORRUPT,
    /** The object store failed. */
    STORAGE,
    /**
     * Writing or reading the restored files on the executor's local disk failed (a full disk, a
     * directory that cannot be written); the object store and the version are fine.
     */
    LOCAL,
    /**
     * The files are intact, but RocksDB in this JVM cannot read them: an SST is in a table format
     * only a newer Spark line's RocksDB reads (docs/format.md, "Table formats across Spark
     * lines"); the message names the format and the lines that read it.
     */
    UNREADABLE_FORMAT,
    /**
     * This instance belongs to a query run a later run has superseded in the store (checkpoint
     * format 1: a zombie of a stopped or restarted query); it must not load or commit.
     */
    FENCED
  }

  private final Reason reason;

  public StateLoadException(Reason reason, String message, Throwable cause) {
    super(message, cause);
    this.reason = reason;
  }

  /** Why the load failed. */
  public Reason reason() {
    return reason;
  }
}
