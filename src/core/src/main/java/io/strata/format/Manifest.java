// SPDX-License-Identifier: Apache-2.0
package io.strata.format;

import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * The complete description of one committed version of one state store: everything needed to
 * rebuild it from the object store alone. Self-contained: it never refers to another manifest.
 *
 * <p>Version {@code v} = base snapshot (if any) + the deltas, applied in order. Every delta's
 * version is greater than the base's version and the list is ordered by version. A version
 * whose batch was large has several deltas (its spill objects, then its final delta), adjacent
 * and all of the same attempt.
 *
 * @param formatVersion the format version this manifest was written with ({@link
 *     ManifestCodec#FORMAT_VERSION})
 * @param storeId the state store it belongs to, {@code <operatorId>/<partitionId>/<storeName>}
 * @param version the committed version (Spark's batch id + 1), &gt;= 1
 * @param attempt unique id of the commit attempt that wrote it (also Spark's checkpoint id in
 *     checkpoint format v2)
 * @param parentVersion the version it was built on ({@code version - 1})
 * @param parentAttempt attempt id of the parent; empty when the parent is the empty state:
 *     version 0, or a store opened empty at {@code parentVersion} (docs/format.md, "Opening a
 *     store empty")
 * @param base the base snapshot; empty when the deltas start from the empty state
 * @param deltas the deltas after the base, ordered by version
 * @param keySchema Spark key schema (JSON) for diagnostics and validation
 * @param valueSchema Spark value schema (JSON)
 * @param numKeys number of keys in the state at this version
 * @param createdAtMillis wall-clock time of the commit, epoch ms (diagnostics only)
 * @param columnFamilies the store's virtual column families at this version ({@link
 *     ColumnFamilies#NONE} for a store that never created one); anything else needs {@code
 *     formatVersion} 2
 * @param epoch the epoch of the query run that committed it under checkpoint format 1 ({@link
 *     StoreLayout#runClaim}; manifest format version 3), or 0: no run (format 2, or a build
 *     before epochs)
 */
public record Manifest(
    int formatVersion,
    String storeId,
    long version,
    String attempt,
    long parentVersion,
    Optional<String> parentAttempt,
    Optional<BaseSnapshot> base,
    List<Delta> deltas,
    String keySchema,
    String valueSchema,
    long numKeys,
    long createdAtMillis,
    ColumnFamilies columnFamilies,
    long epoch) {

  /** A manifest of a store without column families ({@link ColumnFamilies#NONE}). */
  public Manifest(int formatVersion, String storeId, long version, String attempt,
      long parentVersion, Optional<String> parentAttempt, Optional<BaseSnapshot> base,
      List<Delta> deltas, String keySchema, String valueSchema, long numKeys,
      long createdAtMillis) {
    this(formatVersion, storeId, version, attempt, parentVersion, parentAttempt, base, deltas,
        keySchema, valueSchema, numKeys, createdAtMillis, ColumnFamilies.NONE, 0);
  }

  /** A manifest without a query-run epoch (see {@code epoch}). */
  public Manifest(int formatVersion, String storeId, long version, String attempt,
      long parentVersion, Optional<String> parentAttempt, Optional<BaseSnapshot> base,
      List<Delta> deltas, String keySchema, String valueSchema, long numKeys,
      long createdAtMillis, ColumnFamilies columnFamilies) {
    this(formatVersion, storeId, version, attempt, parentVersion, parentAttempt, base, deltas,
        keySchema, valueSchema, numKeys, createdAtMillis, columnFamilies, 0);
  }

  public Manifest {
    Objects.requireNonNull(storeId, "storeId");
    Objects.requireNonNull(attempt, "attempt");
    Objects.requireNonNull(parentAttempt, "parentAttempt");
    if (!StoreLayout.isAttemptId(attempt)
        || (parentAttempt.isPresent() && !StoreLayout.isAttemptId(parentAttempt.get()))) {
      throw new IllegalArgumentException("invalid attempt id in manifest of version " + version);
    }
    Objects.requireNonNull(base, "base");
    Objects.requireNonNull(keySchema, "keySchema");
    Objects.requireNonNull(valueSchema, "valueSchema");
    Objects.requireNonNull(columnFamilies, "columnFamilies");
    if (!columnFamilies.isNone() && formatVersion < ManifestCodec.COLUMN_FAMILIES_FORMAT_VERSION) {
      throw new IllegalArgumentException("column families need manifest format version "
          + ManifestCodec.COLUMN_FAMILIES_FORMAT_VERSION + ", manifest of version " + version
          + " has format version " + formatVersion);
    }
    if (epoch < 0 || (epoch > 0 && formatVersion < ManifestCodec.EPOCH_FORMAT_VERSION)) {
      throw new IllegalArgumentException("epoch " + epoch + " needs manifest format version "
          + ManifestCodec.EPOCH_FORMAT_VERSION + ", manifest of version " + version
          + " has format version " + formatVersion);
    }
    deltas = List.copyOf(deltas);
    if (version < 1) {
      throw new IllegalArgumentException("version must be >= 1, was " + version);
    }
    if (parentVersion != version - 1) {
      throw new IllegalArgumentException(
          "parentVersion must be version - 1: " + parentVersion + " vs " + version);
    }
    long floor = base.map(BaseSnapshot::version).orElse(0L);
    Delta previous = null;
    for (Delta d : deltas) {
      boolean sameVersionSpill = previous != null && d.version() == previous.version()
          && d.attempt().equals(previous.attempt());
      if ((d.version() <= floor && !sameVersionSpill) || d.version() > version) {
        throw new IllegalArgumentException("delta of version " + d.version()
            + " out of order in manifest of version " + version + " (after " + floor + ")");
      }
      floor = d.version();
      previous = d;
    }
    if (base.isPresent() && base.get().version() > version) {
      throw new IllegalArgumentException("base snapshot version " + base.get().version()
          + " is newer than manifest version " + version);
    }
  }

  /**
   * This version as restored from {@code b}, a base snapshot of a version on its lineage: the
   * same version, attempt, parent, keys, column families and epoch, with {@code b} as base and
   * only the deltas after it.
   *
   * @throws IllegalArgumentException if {@code b} is newer than this version
   */
  public Manifest rebasedOn(BaseSnapshot b) {
    return new Manifest(formatVersion, storeId, version, attempt, parentVersion, parentAttempt,
        Optional.of(b), deltas.stream().filter(d -> d.version() > b.version()).toList(),
        keySchema, valueSchema, numKeys, createdAtMillis, columnFamilies, epoch);
  }

  /** Total bytes of every file this version is made of (base files plus deltas). */
  public long totalBytes() {
    long sum = 0;
    for (Delta d : deltas) {
      sum += d.file().length();
    }
    if (base.isPresent()) {
      for (BaseSnapshot.BaseFile f : base.get().files()) {
        sum += f.file().length();
      }
    }
    return sum;
  }

  /** Number of deltas a restore applies after the base. */
  public int deltaChainLength() {
    return deltas.size();
  }

  /** Versions committed since the base snapshot (or since version 0 without one). */
  public long versionsSinceBase() {
    return version - base.map(BaseSnapshot::version).orElse(0L);
  }
}
