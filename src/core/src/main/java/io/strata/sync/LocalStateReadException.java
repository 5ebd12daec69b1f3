// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import io.strata.engine.LocalReadException;
import java.nio.file.Path;

/**
 * A read of a store's local database failed (a point read, the existence check of a put or
 * removal, or a scan): RocksDB found a corrupt block or the local disk failed. The message names
 * the store, the version, the local database directory and RocksDB's reason (which usually names
 * the SST file). The local database has been marked damaged: the next {@link SyncedStore#load}
 * drops it and restores the version from the object store, so a retried task reads a good copy.
 *
 * <p>Unchecked, because scans are iterators. Never means "no data": a caller that gets it must
 * fail its task, not go on with a partial read.
 */
public final class LocalStateReadException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final long version;
  private final String localDir;
  private final String reason;
  private final String location;

  LocalStateReadException(StoreIdentity identity, long version, LocalReadException cause) {
    super("Cannot read store " + identity.id() + " version " + version + ": local RocksDB at "
        + cause.dir() + " failed: " + cause.reason() + "; the local database is marked damaged "
        + "and the next load restores the version from " + identity.location(), cause);
    this.version = version;
    this.localDir = String.valueOf(cause.dir());
    this.reason = cause.reason();
    this.location = identity.location();
  }

  /** The version the local database held (the one being read); -1 if it was replaced since. */
  public long version() {
    return version;
  }

  /** The local database directory. */
  public String localDir() {
    return localDir;
  }

  /** RocksDB's message, usually naming the SST file and offset. */
  public String reason() {
    return reason;
  }

  /** The store's checkpoint location, from which the next load restores. */
  public String location() {
    return location;
  }
}
