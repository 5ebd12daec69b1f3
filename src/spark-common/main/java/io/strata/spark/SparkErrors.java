// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import java.util.Map;
import org.apache.spark.SparkException;
import org.apache.spark.SparkUnsupportedOperationException;

/**
 * Spark error conditions the state store contract expects (they exist in Spark's
 * error-conditions.json, so Spark renders their messages; Spark's own tests match on them).
 */
final class SparkErrors {
  private SparkErrors() { }

  /**
   * Throws {@code e} unchecked. Spark's API is Scala, which has no checked exceptions, and
   * Spark's callers catch {@link SparkException} by type, so it must propagate as itself.
   * Declared to return an exception so call sites read {@code throw SparkErrors.x(...)}.
   */
  private static RuntimeException raise(SparkException e) {
    SparkErrors.<RuntimeException>throwAs(e);
    return new IllegalStateException("unreachable", e);
  }

  @SuppressWarnings("unchecked")
  private static <T extends Throwable> void throwAs(Throwable t) throws T {
    throw (T) t;
  }

  /** {@code CANNOT_LOAD_STATE_STORE.UNEXPECTED_VERSION}: a negative version was requested. */
  static RuntimeException unexpectedVersion(long version) {
    return raise(new SparkException("CANNOT_LOAD_STATE_STORE.UNEXPECTED_VERSION",
        Scala.map(Map.of("version", Long.toString(version))), null));
  }

  /**
   * {@code CANNOT_LOAD_STATE_STORE.CANNOT_READ_STREAMING_STATE_FILE}: the version was never
   * committed. {@code what} names the store, version and object key.
   */
  static RuntimeException versionNotFound(String what, Throwable cause) {
    return raise(new SparkException("CANNOT_LOAD_STATE_STORE.CANNOT_READ_STREAMING_STATE_FILE",
        Scala.map(Map.of("fileToRead", what)), cause));
  }

  /** {@code CANNOT_LOAD_STATE_STORE.UNCATEGORIZED}: any other load failure (cause says what). */
  static RuntimeException cannotLoad(Throwable cause) {
    return raise(new SparkException("CANNOT_LOAD_STATE_STORE.UNCATEGORIZED", Scala.map(Map.of()), cause));
  }

  /**
   * {@code CANNOT_WRITE_STATE_STORE.CANNOT_COMMIT}. {@code store} names the store class, its
   * Spark store id (operatorId, partitionId, storeName) and version, as Spark's providers fill
   * the {@code providerClass} parameter with their store's text.
   */
  static RuntimeException cannotCommit(String store, Throwable cause) {
    return raise(new SparkException("CANNOT_WRITE_STATE_STORE.CANNOT_COMMIT",
        Scala.map(Map.of("providerClass", store)), cause));
  }

  /**
   * A read of the local database failed (a corrupt block, a disk error): fails the task with
   * a message naming the store, the version, the local database directory and RocksDB's reason
   * (which names the SST file). No error condition of Spark's fits a local read of a loaded
   * version, so this is a plain {@link SparkException} with that message (an ordinary task
   * failure: Spark retries the task, and the retry restores the version from the object store,
   * since the store marked the local database damaged).
   *
   * @param store the provider's text (Spark's store id and checkpoint location)
   */
  static RuntimeException cannotReadLocal(String store, io.strata.sync.LocalStateReadException e) {
    return raise(new SparkException("Cannot read " + store + " version " + e.version()
        + ": a local file of the database at " + e.localDir() + " is damaged or unreadable ("
        + e.reason() + "); it is not reused: the next attempt restores the version from "
        + e.location(), e));
  }

  /** {@code STATE_STORE_OPERATION_OUT_OF_ORDER}: an operation in the wrong state. */
  static RuntimeException outOfOrder(String message) {
    return raise(new SparkException("STATE_STORE_OPERATION_OUT_OF_ORDER",
        Scala.map(Map.of("errorMsg", message)), null));
  }

  /**
   * {@code STATE_STORE_UNSUPPORTED_OPERATION}: {@code operation} needs column families, and the
   * store was initialised without them ({@code entity} says so, as Spark's RocksDB provider does).
   */
  static SparkUnsupportedOperationException unsupportedOperation(String operation, String entity) {
    return new SparkUnsupportedOperationException("STATE_STORE_UNSUPPORTED_OPERATION",
        Map.of("operationType", operation, "entity", entity));
  }

  /**
   * {@code STATE_STORE_UNSUPPORTED_OPERATION} for {@code init}: a state location on the local
   * filesystem with a cluster master ({@link LocalLocationRule}). {@code reason} names the
   * location, the store, the master and the setting that declares the location shared.
   */
  static SparkUnsupportedOperationException localLocationOnCluster(String reason) {
    return unsupportedOperation("init", "a local state location on a cluster. " + reason);
  }

  /**
   * {@code STATE_STORE_CANNOT_USE_COLUMN_FAMILY_WITH_INVALID_NAME}: an empty name, one with
   * leading or trailing whitespace, or {@code default} where it may not be used.
   */
  static SparkUnsupportedOperationException invalidColumnFamilyName(String operation,
      String name) {
    return new SparkUnsupportedOperationException(
        "STATE_STORE_CANNOT_USE_COLUMN_FAMILY_WITH_INVALID_NAME",
        Map.of("operationName", operation, "colFamilyName", name));
  }

  /**
   * {@code STATE_STORE_CANNOT_CREATE_COLUMN_FAMILY_WITH_RESERVED_CHARS}: a user (non-internal)
   * family whose name starts with {@code $}, which Spark reserves for its own families.
   */
  static SparkUnsupportedOperationException reservedColumnFamilyName(String name) {
    return new SparkUnsupportedOperationException(
        "STATE_STORE_CANNOT_CREATE_COLUMN_FAMILY_WITH_RESERVED_CHARS",
        Map.of("colFamilyName", name));
  }

  /**
   * {@code STATE_STORE_UNSUPPORTED_OPERATION_ON_MISSING_COLUMN_FAMILY}: the family does not exist
   * in the version being built (never created, or removed).
   */
  static SparkUnsupportedOperationException missingColumnFamily(String operation, String name) {
    return new SparkUnsupportedOperationException(
        "STATE_STORE_UNSUPPORTED_OPERATION_ON_MISSING_COLUMN_FAMILY",
        Map.of("operationType", operation, "colFamilyName", name));
  }
}
