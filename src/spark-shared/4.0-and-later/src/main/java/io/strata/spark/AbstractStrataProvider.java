// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import io.strata.metrics.JvmRequests;
import io.strata.objectstore.ObjectStore;
import io.strata.objectstore.ObjectStores;
import io.strata.sync.StateLoadException;
import io.strata.sync.StoreIdentity;
import java.io.IOException;
import java.util.Optional;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.execution.streaming.state.KeyStateEncoderSpec;
import org.apache.spark.sql.execution.streaming.state.NoPrefixKeyStateEncoderSpec;
import org.apache.spark.sql.execution.streaming.state.PrefixKeyScanStateEncoderSpec;
import org.apache.spark.sql.execution.streaming.state.ReadStateStore;
import org.apache.spark.sql.execution.streaming.state.StateSchemaProvider;
import org.apache.spark.sql.execution.streaming.state.StateStore;
import org.apache.spark.sql.execution.streaming.state.StateStoreConf;
import org.apache.spark.sql.execution.streaming.state.StateStoreId;
import org.apache.spark.sql.types.StructType;
import scala.Option;

/**
 * The Spark 4.x part of {@link StrataStateStoreProvider}, over {@link StrataProviderBase}: the
 * 4.x {@code init} (key encoder specs, column families, multiple values per key, the state schema
 * provider of Avro encoding), checkpoint ids (checkpoint format 2), and the state data source's
 * replay and change feed ({@code SupportsFineGrainedReplay}). Each 4.x line's adapter declares
 * the methods whose signatures differ between 4.0, 4.1 and 4.2 and forwards here.
 *
 * <p>Each family's keys and values are encoded with Spark's own RocksDB state encoders when the
 * store uses column families, so the order of range scans (timers, TTL) is exactly that of
 * Spark's RocksDB provider.
 */
public abstract class AbstractStrataProvider extends StrataProviderBase {
  private static final String DEFAULT_CF = "default";

  private Option<StateSchemaProvider> schemaProvider = Option.empty();

  /** Creates an uninitialised provider; does no I/O (Spark's driver calls it for metrics). */
  protected AbstractStrataProvider() { }

  /**
   * Initialises the provider (Spark calls this once, right after construction). Validates
   * Strata's settings and the key encoding; no storage is touched.
   *
   * <p>With {@code useColumnFamilies} (transformWithState, stream-stream join state format 3)
   * every family, {@code default} included, is encoded with Spark's own RocksDB state encoders
   * ({@link SparkFamilyCodec}), so key order matches Spark's RocksDB provider exactly, and
   * {@code spark.sql.streaming.stateStore.encodingFormat} ({@code unsaferow} or {@code avro})
   * applies. Without column families, {@link RowCodec}'s format is kept (range-scan encodings,
   * which it lacks, use Spark's encoders too).
   *
   * <p>A {@code file:} or plain-path location is refused on a cluster (a master other than
   * {@code local}/{@code local[...]}) unless {@code fileCheckpoint.shared} declares it shared
   * storage: see {@link LocalLocationRule}.
   *
   * @throws IllegalArgumentException naming the setting, for an invalid Strata setting or an
   *     unsupported checkpoint location scheme; or if {@code useMultipleValuesPerKey} is set
   *     without {@code useColumnFamilies} (Spark's RocksDB provider requires both too)
   * @throws org.apache.spark.SparkUnsupportedOperationException ({@code
   *     STATE_STORE_UNSUPPORTED_OPERATION}) for a local location on a cluster, see {@link
   *     LocalLocationRule#check}
   * @throws org.apache.spark.SparkUnsupportedOperationException from Spark's encoders for a key
   *     encoding they reject (a variable-size range-scan ordering column)
   */
  @Override
  public void init(StateStoreId stateStoreId, StructType keySchema, StructType valueSchema,
      KeyStateEncoderSpec keyStateEncoderSpec, boolean useColumnFamilies,
      StateStoreConf storeConfs, Configuration hadoopConf, boolean useMultipleValuesPerKey,
      Option<StateSchemaProvider> stateSchemaProvider) {
    this.schemaProvider = stateSchemaProvider == null ? Option.empty() : stateSchemaProvider;
    initStore(stateStoreId, keySchema, valueSchema, useColumnFamilies, storeConfs, hadoopConf,
        () -> {
          if (useMultipleValuesPerKey && !useColumnFamilies) {
            throw new IllegalArgumentException("requirement failed: Multiple values per key "
                + "support requires column families to be enabled in "
                + "StrataStateStoreProvider (" + this + ")");
          }
          return newCodec(DEFAULT_CF, keySchema, valueSchema, keyStateEncoderSpec,
              useMultipleValuesPerKey);
        });
  }

  /**
   * A writable store holding version {@code version} (Spark's batch id; 0 is empty); each 4.x
   * line's {@code getStore} forwards here. See {@link StrataProviderBase#openHandle} for what it
   * throws.
   *
   * @param stateStoreCkptId the checkpoint id of {@code version} (checkpoint format 2), or none
   * @param forceSnapshotOnCommit upload a base snapshot of the new version at its commit (Spark
   *     4.2: the coordinator found this store's snapshots lagging); false before 4.2
   */
  protected final StateStore openStore(long version, Option<String> stateStoreCkptId,
      boolean forceSnapshotOnCommit) {
    return (StateStore) openHandle(version, stateStoreCkptId, forceSnapshotOnCommit);
  }

  /**
   * An empty writable store at {@code version} that reads nothing of the store's existing
   * objects: the write half of a rewrite of the state, such as an offline repartitioning (Spark
   * 4.2's {@code getStore(version, None, _, loadEmpty = true)} forwards here; a Strata
   * repartition job on Spark 4.0 and 4.1, whose {@code StateStoreProvider} has no {@code
   * loadEmpty}, calls it on a provider made with {@code StateStoreProvider.createAndInit}).
   *
   * <p>Contract, as Spark's RocksDB provider's {@code loadEmpty}:
   *
   * <ul>
   *   <li>{@code version()} is {@code version} (Spark's batch id being written); the store is
   *       empty and has no column family but {@code default}: declare the others with {@code
   *       createColFamilyIfAbsent}, whose ids land in the committed version.
   *   <li>No version of the store is read: the location may hold no object at all (a new
   *       partition) or versions of another layout of the state (an old partition). Under
   *       checkpoint format 1 the query run claims its epoch in the store (one LIST of {@code
   *       runs/}, two create-only PUTs), which decides who wins the new version; format 2 sends
   *       no request.
   *   <li>{@code commit()} returns {@code version + 1} and has written it, durably, in one
   *       create-only PUT: a self-contained version whose manifest names no base and no delta of
   *       a version {@code <= version} (docs/format.md, "Opening a store empty"). Any provider
   *       instance, on any executor, loads it and builds later versions on it as usual. {@code
   *       close()} may follow at once on the same thread.
   *   <li>With checkpoint format 2, {@code getStateStoreCheckpointInfo()} after the commit is
   *       {@code (partition, version + 1, Some(new checkpoint id), None)}.
   *   <li>A re-run: under format 1 each run of the writer (Spark's state rewriter gives every
   *       task attempt a new query run id) supersedes an earlier run's commit of {@code version +
   *       1}, and an attempt of an earlier run that commits later is refused; two attempts of one
   *       run: the first commit wins. Under format 2 every attempt writes its own checkpoint id;
   *       the driver's commit log names the one that counts.
   * </ul>
   *
   * <p>Throws {@code org.apache.spark.SparkException}, undeclared: {@code
   * CANNOT_LOAD_STATE_STORE.UNEXPECTED_VERSION} for a negative version; {@code ...UNCATEGORIZED}
   * if the run's epoch cannot be found or claimed, the run is fenced (a later run wrote the
   * store), or the local database cannot be opened. The commit throws {@code
   * CANNOT_WRITE_STATE_STORE.CANNOT_COMMIT} if the PUT fails or a later run committed the
   * version.
   *
   * @param version the version the empty store stands at, &gt;= 0
   * @return the store, held by the caller (task) until its commit or abort
   */
  public final StateStore openEmptyStore(long version) {
    return (StateStore) emptyHandle(version);
  }

  /**
   * {@link #openEmptyStore(long)} for Spark 4.2's {@code getStore(..., loadEmpty = true)}: a
   * checkpoint id is refused under checkpoint format 2 (Spark's RocksDB provider requires none:
   * the empty store is of no attempt), ignored under format 1 (as every checkpoint id is).
   *
   * <p>Throws {@code org.apache.spark.SparkException}, undeclared: as {@link
   * #openEmptyStore(long)}; {@code CANNOT_LOAD_STATE_STORE.UNCATEGORIZED} whose cause is an
   * {@link IllegalArgumentException} for a checkpoint id under format 2, before anything loads
   *
   * @param forceSnapshotOnCommit as for {@link #openStore}
   */
  protected final StateStore openEmpty(long version, Option<String> stateStoreCkptId,
      boolean forceSnapshotOnCommit) {
    if (checkpointIdsEnabled() && stateStoreCkptId.isDefined()) {
      throw SparkErrors.cannotLoad(new IllegalArgumentException("requirement failed: "
          + "stateStoreCkptId should be empty when loadEmpty is true (" + this + " version "
          + version + ", stateStoreCkptId " + stateStoreCkptId.get() + ")"));
    }
    StrataStoreBase store = emptyHandle(version);
    store.forceSnapshotOnCommit(forceSnapshotOnCommit);
    return (StateStore) store;
  }

  /**
   * The store at {@code endVersion}, for Spark's {@code SupportsFineGrainedReplay
   * .replayStateFromSnapshot} (the state data source's {@code snapshotStartBatchId}). Spark's
   * providers rebuild it from the snapshot file of {@code snapshotVersion} plus the changes after
   * it; Strata restores {@code endVersion} from the base its lineage names, every file verified by
   * checksum, which holds the same state, so a base at {@code snapshotVersion} is not required.
   *
   * <p>Throws as {@link #openStore}; {@code CANNOT_LOAD_STATE_STORE.UNEXPECTED_VERSION} if
   * {@code snapshotVersion} is below 1 or above {@code endVersion} (as Spark's providers).
   *
   * @param readOnly a read store (its caller wraps it) instead of a write store
   */
  protected final StateStore replay(long snapshotVersion, long endVersion, boolean readOnly,
      Option<String> endCkptId) {
    if (snapshotVersion < 1) {
      throw SparkErrors.unexpectedVersion(snapshotVersion);
    }
    if (endVersion < snapshotVersion) {
      throw SparkErrors.unexpectedVersion(endVersion);
    }
    if (readOnly) {
      return (StateStore) getReadStore(endVersion, endCkptId);
    }
    return openStore(endVersion, endCkptId, false);
  }

  /**
   * The change feed of versions {@code startVersion} to {@code endVersion} for Spark's {@code
   * SupportsFineGrainedReplay.getStateStoreChangeDataReader} (the state data source's {@code
   * readChangeFeed}), read from the store's SST deltas in S3 (see {@link ChangeRows}). No local
   * database is opened.
   *
   * <p>Throws {@code org.apache.spark.SparkException}, undeclared:
   * {@code CANNOT_LOAD_STATE_STORE.UNEXPECTED_VERSION} for a start below 1 or an end before it,
   * {@code ...CANNOT_READ_STREAMING_STATE_FILE} if a version's manifest is missing, {@code
   * ...UNCATEGORIZED} for any other failure (cause names the store, version and object).
   *
   * @param family the column family, or none for {@code default}
   * @param endCkptId the checkpoint id of {@code endVersion} (checkpoint format 2), or none
   */
  protected final ChangeRows changeRows(long startVersion, long endVersion,
      Option<String> family, Option<String> endCkptId) {
    if (startVersion < 1) {
      throw SparkErrors.unexpectedVersion(startVersion);
    }
    if (endVersion < startVersion) {
      throw SparkErrors.unexpectedVersion(endVersion);
    }
    String name = family.isDefined() ? family.get() : DEFAULT_CF;
    StateStoreId stateStoreId = stateStoreId();
    FamilyCodec codec;
    try {
      codec = name.equals(DEFAULT_CF) ? defaultCodec() : codec(name, endVersion);
    } catch (IllegalStateException e) { // a family the reader did not declare
      throw SparkErrors.cannotLoad(e);
    }
    StoreIdentity identity = new StoreIdentity(stateStoreId.operatorId(),
        stateStoreId.partitionId(), stateStoreId.storeName(), location());
    ObjectStore objects = ObjectStores.open(location(), conf()::s3,
        JvmRequests.alsoStateStores(requests()));
    try {
      io.strata.sync.ChangeFeed feed = io.strata.sync.ChangeFeed.open(identity, objects,
          checkpointIdsEnabled(), startVersion, endVersion,
          Optional.ofNullable(endCkptId.isDefined() ? endCkptId.get() : null));
      return new ChangeRows(feed, objects, codec, name, identity.toString());
    } catch (StateLoadException e) {
      objects.close();
      if (e.reason() == StateLoadException.Reason.VERSION_NOT_FOUND) {
        throw SparkErrors.versionNotFound(e.getMessage(), e);
      }
      throw SparkErrors.cannotLoad(e);
    } catch (IOException | RuntimeException e) {
      objects.close();
      throw SparkErrors.cannotLoad(e);
    }
  }


  /**
   * A read-only store holding {@code version}; errors as {@link #openStore}. If the caller (the
   * same task, or outside tasks the same thread) already holds a store of that version, that
   * store: Spark 4.0's state data source opens a write store to declare a column family and then
   * a read store of the same provider, and aborts only the read store.
   */
  @Override
  public ReadStateStore getReadStore(long version, Option<String> uniqueId) {
    return (ReadStateStore) readHandle(version, uniqueId);
  }

  /**
   * Turns this task's read store into its write store without reloading (same lock, same local
   * state; Spark 4.1+ calls {@code upgradeReadStoreToWriteStore}, which forwards here). Falls
   * back to {@link #openStore} if {@code readStore} is not this provider's live read store at
   * {@code version}.
   *
   * @param forceSnapshotOnCommit as for {@link #openStore}
   */
  protected final StateStore upgradeStore(ReadStateStore readStore, long version,
      Option<String> uniqueId, boolean forceSnapshotOnCommit) {
    return (StateStore) upgradeHandle(readStore, version, uniqueId, forceSnapshotOnCommit);
  }

  @Override
  protected boolean checkpointIdsEnabled() {
    return storeConf().enableStateStoreCheckpointIds();
  }

  @Override
  protected long minVersionsToDelete() {
    return storeConf().minVersionsToDelete();
  }

  // ------------------------------------------------------------------ column families

  private FamilyCodec newCodec(String family, StructType key, StructType value,
      KeyStateEncoderSpec spec, boolean multipleValues) {
    if (!useColumnFamilies() && (spec instanceof NoPrefixKeyStateEncoderSpec
        || spec instanceof PrefixKeyScanStateEncoderSpec)) {
      if (spec instanceof PrefixKeyScanStateEncoderSpec p) {
        if (p.numColsPrefixKey() <= 0) {
          throw new IllegalArgumentException("prefix scan over " + p.numColsPrefixKey() + " of "
              + key.length() + " key columns is not supported");
        }
        return new RowCodec(key, value, p.numColsPrefixKey());
      }
      return new RowCodec(key, value, 0);
    }
    return new SparkFamilyCodec(family, key, value, spec, multipleValues,
        storeConf().stateStoreEncodingFormat(), schemaProvider);
  }

  /**
   * Registers the codec of family {@code name}: for a family being created ({@code replace}),
   * always; for one that exists, unless one is registered already (Spark's provider keeps the
   * first declaration of an existing family too).
   */
  void declareFamily(String name, StructType key, StructType value, KeyStateEncoderSpec spec,
      boolean multipleValues, boolean replace) {
    if (replace) {
      familyCodecs().put(name, newCodec(name, key, value, spec, multipleValues));
    } else {
      familyCodecs().computeIfAbsent(name, n -> newCodec(n, key, value, spec, multipleValues));
    }
  }
}
