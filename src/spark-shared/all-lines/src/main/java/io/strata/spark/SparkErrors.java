// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import io.strata.reporting.SettingErrors;
import java.util.Map;
import org.apache.spark.SparkException;

/**
 * Spark error conditions the state store contract expects. On Spark 4.x they exist in Spark's
 * error-conditions.json, so Spark renders their messages and Spark's own tests match on them;
 * Spark 3.5 has none of them, and its providers throw plain exceptions. {@link SparkConditions}
 * (one per Spark major line) makes the exception: on 4.x with the condition, on 3.5 with the same
 * message text, the condition's name in brackets.
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
    return raise(SparkConditions.exception("CANNOT_LOAD_STATE_STORE.UNEXPECTED_VERSION",
        Map.of("version", Long.toString(version)), null));
  }

  /**
   * {@code CANNOT_LOAD_STATE_STORE.CANNOT_READ_STREAMING_STATE_FILE}: the version was never
   * committed. {@code what} names the store, version and object key.
   */
  static RuntimeException versionNotFound(String what, Throwable cause) {
    return raise(SparkConditions.exception(
        "CANNOT_LOAD_STATE_STORE.CANNOT_READ_STREAMING_STATE_FILE", Map.of("fileToRead", what),
        cause));
  }

  /**
   * {@code CANNOT_LOAD_STATE_STORE.UNCATEGORIZED}: any other load failure (cause says what); a
   * setting found invalid only when the load first needed it is {@link #invalidSetting}.
   */
  static RuntimeException cannotLoad(Throwable cause) {
    for (Throwable t = cause; t != null && t != t.getCause(); t = t.getCause()) {
      if (t instanceof io.strata.config.InvalidSettingException bad) {
        return invalidSetting(bad);
      }
    }
    return raise(SparkConditions.exception("CANNOT_LOAD_STATE_STORE.UNCATEGORIZED", Map.of(),
        cause));
  }

  /**
   * {@code CANNOT_WRITE_STATE_STORE.CANNOT_COMMIT}. {@code store} names the store class, its
   * Spark store id (operatorId, partitionId, storeName) and version, as Spark's providers fill
   * the {@code providerClass} parameter with their store's text.
   */
  static RuntimeException cannotCommit(String store, Throwable cause) {
    return raise(SparkConditions.exception("CANNOT_WRITE_STATE_STORE.CANNOT_COMMIT",
        Map.of("providerClass", store), cause));
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

  /**
   * {@code INVALID_CONF_VALUE.REQUIREMENT} (SQLSTATE 22022) for a Strata setting that cannot be
   * used, naming the key, the value (never a secret) and what is allowed; see {@link
   * SettingErrors#invalid}.
   */
  static RuntimeException invalidSetting(io.strata.config.InvalidSettingException e) {
    return SettingErrors.invalid(e);
  }

  /** {@code STATE_STORE_OPERATION_OUT_OF_ORDER}: an operation in the wrong state. */
  static RuntimeException outOfOrder(String message) {
    return raise(SparkConditions.exception("STATE_STORE_OPERATION_OUT_OF_ORDER",
        Map.of("errorMsg", message), null));
  }

  /**
   * {@code STATE_STORE_UNSUPPORTED_OPERATION}: {@code operation} needs column families, and the
   * store was initialised without them ({@code entity} says so, as Spark's RocksDB provider does).
   */
  static RuntimeException unsupportedOperation(String operation, String entity) {
    return SparkConditions.unsupported("STATE_STORE_UNSUPPORTED_OPERATION",
        Map.of("operationType", operation, "entity", entity));
  }

  /**
   * {@code STATE_STORE_UNSUPPORTED_OPERATION} for {@code init}: a state location on the local
   * filesystem with a cluster master ({@link LocalLocationRule}). {@code reason} names the
   * location, the store, the master and the setting that declares the location shared.
   */
  static RuntimeException localLocationOnCluster(String reason) {
    return unsupportedOperation("init", "a local state location on a cluster. " + reason);
  }

  /**
   * {@code STATE_STORE_CANNOT_USE_COLUMN_FAMILY_WITH_INVALID_NAME}: an empty name, one with
   * leading or trailing whitespace, or {@code default} where it may not be used.
   */
  static RuntimeException invalidColumnFamilyName(String operation, String name) {
    return SparkConditions.unsupported("STATE_STORE_CANNOT_USE_COLUMN_FAMILY_WITH_INVALID_NAME",
        Map.of("operationName", operation, "colFamilyName", name));
  }

  /**
   * {@code STATE_STORE_CANNOT_CREATE_COLUMN_FAMILY_WITH_RESERVED_CHARS}: a user (non-internal)
   * family whose name starts with {@code $}, which Spark reserves for its own families.
   */
  static RuntimeException reservedColumnFamilyName(String name) {
    return SparkConditions.unsupported(
        "STATE_STORE_CANNOT_CREATE_COLUMN_FAMILY_WITH_RESERVED_CHARS",
        Map.of("colFamilyName", name));
  }

  /**
   * {@code STATE_STORE_UNSUPPORTED_OPERATION_ON_MISSING_COLUMN_FAMILY}: the family does not exist
   * in the version being built (never created, or removed).
   */
  static RuntimeException missingColumnFamily(String operation, String name) {
    return SparkConditions.unsupported(
        "STATE_STORE_UNSUPPORTED_OPERATION_ON_MISSING_COLUMN_FAMILY",
        Map.of("operationType", operation, "colFamilyName", name));
  }
}
