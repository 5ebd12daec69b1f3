// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import io.strata.engine.CloseableIterator;
import io.strata.engine.KeyValue;
import io.strata.engine.LocalStore;
import io.strata.format.ColumnFamily;
import io.strata.metrics.CommitStats;
import io.strata.metrics.GcStats;
import io.strata.metrics.RequestCounter;
import io.strata.metrics.RestoreStats;
import io.strata.sync.CommitResult;
import io.strata.sync.LocalStateReadException;
import io.strata.sync.SyncedStore;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.streaming.state.KeyStateEncoderSpec;
import org.apache.spark.sql.execution.streaming.state.StateStore;
import org.apache.spark.sql.execution.streaming.state.StateStoreCheckpointInfo;
import org.apache.spark.sql.execution.streaming.state.StateStoreCustomMetric;
import org.apache.spark.sql.execution.streaming.state.StateStoreId;
import org.apache.spark.sql.execution.streaming.state.StateStoreIterator;
import org.apache.spark.sql.execution.streaming.state.StateStoreMetrics;
import org.apache.spark.sql.execution.streaming.state.UnsafeRowPair;
import org.apache.spark.sql.types.StructType;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import scala.collection.AbstractIterator;
import scala.collection.Iterator;
import scala.runtime.BoxedUnit;

/**
 * One task's handle on a store at one version, read-only or updating. Its life cycle is an
 * explicit state machine:
 *
 * <pre>
 * READ_ONLY --upgrade--&gt; UPDATING --commit--&gt; COMMITTED
 *     |                      |
 *     release                abort
 *     v                      v
 *  RELEASED               ABORTED
 * </pre>
 *
 * Reads are allowed in READ_ONLY and UPDATING; writes only in UPDATING. Leaving READ_ONLY or
 * UPDATING gives the provider's task lock back. {@code abort()} after commit and repeated {@code
 * abort()}/{@code release()} are no-ops (Spark calls them from task-completion paths).
 *
 * <p>This is the version-neutral part; each Spark minor version's adapter ({@code
 * StrataStateStore} under {@code src/spark-<minor>/}) adds what its Spark declares differently:
 * {@code metrics()} (the {@code StateStoreMetrics} constructor changed in 4.1) and Spark 4.2's
 * scans ({@code rangeScan}, {@code prefixScanWithMultiValues}, {@code iteratorWithMultiValues},
 * {@code allColumnFamilyNames}), which forward to the helpers here. {@code release()}, {@code
 * putList} and {@code mergeList} (4.1+) are plain public methods here, unused on 4.0.
 *
 * <p>Local read errors: a read of the local database that fails (a corrupt block, a disk error;
 * {@link LocalStateReadException}) in {@code get}, {@code valuesIterator}, any scan or a write's
 * existence check fails the task with {@link SparkErrors#cannotReadLocal}; the store marked the
 * local database damaged, so Spark's retry of the task restores the version from the object
 * store. A scan never ends early without an error.
 */
abstract class AbstractStrataStore implements StateStore {
  private static final Logger LOG = LoggerFactory.getLogger(AbstractStrataStore.class);

  enum Mode { READ_ONLY, UPDATING, COMMITTED, ABORTED, RELEASED }

  private final AbstractStrataProvider provider;
  private final SyncedStore core;
  private final long version;
  private final RequestCounter requests;
  private final RequestCounter.Counts requestsAtStart;
  private final RestoreStats restore;
  /** Version of the base snapshot named by the loaded manifest, -1 if none. */
  private final long loadedBaseVersion;
  private volatile Mode mode;
  /**
   * True once the query run may write through this store: {@link SyncedStore#prepareWrite} ran
   * (it claims the run's epoch in checkpoint format 1, once per run and store). A write load does
   * not claim it; the first change does (or the commit), so a write store that only declares
   * existing column families and aborts (Spark's state data source, with a new run id per scan)
   * writes nothing into the checkpoint and does not stop the running query's garbage collection.
   */
  private boolean writePrepared;
  private CommitResult committed;
  private RequestCounter.Counts requestsAtEnd;
  /** Memory use captured at commit, before the lock is given back (metrics() comes later). */
  private LocalStore.MemoryUsage memoryAtCommit = LocalStore.MemoryUsage.NONE;
  /** The garbage-collection round finished since the store's previous commit, if any. */
  private GcStats gcAtCommit = GcStats.NONE;
  private long gcFailuresAtCommit;

  /** Who loaded this handle (see {@code AbstractStrataProvider.currentOwner()}). */
  private volatile long owner;
  /** Whether commit uploaded a base snapshot because Spark asked (reported in metrics). */
  private volatile boolean forcedSnapshotUploaded;
  /** Whether commit also uploads a base snapshot of the new version (Spark 4.2). */
  private volatile boolean forceSnapshotOnCommit;

  /**
   * @param provider the provider holding the task lock for this handle
   * @param core the loaded store, at {@code version}
   * @param version the loaded version
   * @param readOnly READ_ONLY (a read store) or UPDATING (a write store)
   * @param requests the provider's S3 request counter
   * @param atStart its counts when the load started (metrics report the batch's requests)
   */
  AbstractStrataStore(AbstractStrataProvider provider, SyncedStore core, long version,
      boolean readOnly, RequestCounter requests, RequestCounter.Counts atStart) {
    this.provider = provider;
    this.core = core;
    this.version = version;
    this.requests = requests;
    this.requestsAtStart = atStart;
    this.restore = core.lastRestore();
    this.loadedBaseVersion = core.loadedManifest().flatMap(m -> m.base())
        .map(b -> b.version()).orElse(-1L);
    this.mode = readOnly ? Mode.READ_ONLY : Mode.UPDATING;
  }

  Mode mode() {
    return mode;
  }

  /** The provider that made this handle. */
  AbstractStrataProvider provider() {
    return provider;
  }

  /** Who loaded this handle: a Spark task attempt id, or a negative thread key outside tasks. */
  long owner() {
    return owner;
  }

  /** Records who loaded this handle. */
  void ownedBy(long owner) {
    this.owner = owner;
  }

  /** READ_ONLY -&gt; UPDATING, keeping the task lock (Spark 4.1 read-then-write in one task). */
  void upgrade() {
    if (mode != Mode.READ_ONLY) {
      throw SparkErrors.outOfOrder("cannot upgrade a store in state " + mode + " to a write store");
    }
    mode = Mode.UPDATING;
    writePrepared = true; // the provider ran SyncedStore#prepareWrite before upgrading
  }

  /**
   * Before the first change through this store: {@link SyncedStore#prepareWrite} (see {@link
   * #writePrepared}). Throws Spark's {@code CANNOT_LOAD_STATE_STORE} error if the run's epoch
   * cannot be claimed (another run superseded this one).
   */
  private void prepareWrite() {
    if (writePrepared) {
      return;
    }
    try {
      core.prepareWrite();
    } catch (IOException e) {
      throw SparkErrors.cannotLoad(e);
    }
    writePrepared = true;
  }

  @Override
  public StateStoreId id() {
    return provider.stateStoreId();
  }

  @Override
  public long version() {
    return version;
  }

  // ------------------------------------------------------------------ column families

  /** A family resolved for one operation: its key prefix id and its codec. */
  record Family(int id, FamilyCodec codec) { }

  /**
   * Resolves {@code name} for {@code op} with the checks (and Spark error conditions) of Spark's
   * RocksDB provider: {@code default} always exists; any other name needs column families, a
   * valid name, and a family that exists in the version being built.
   */
  Family family(String op, String name) {
    if (name == null || ColumnFamily.DEFAULT_NAME.equals(name)) {
      return new Family(ColumnFamily.DEFAULT_ID, provider.defaultCodec());
    }
    provider.checkFamilyOperation(op, name);
    Optional<ColumnFamily> cf = core.columnFamilies().byName(name);
    if (cf.isEmpty()) {
      throw SparkErrors.missingColumnFamily(op, name);
    }
    return new Family(cf.get().id(), provider.codec(name, version));
  }

  /**
   * Creates the column family {@code colFamilyName} in the version being built unless it exists
   * (Spark's transformWithState calls this for every state variable in every batch). The
   * name-to-id mapping is committed in this version's manifest; the encoders are Spark's for
   * {@code keyStateEncoderSpec} (see {@link SparkFamilyCodec}).
   *
   * @throws org.apache.spark.SparkUnsupportedOperationException {@code
   *     STATE_STORE_UNSUPPORTED_OPERATION} without column families, {@code
   *     STATE_STORE_CANNOT_USE_COLUMN_FAMILY_WITH_INVALID_NAME} for an empty name, one with
   *     leading or trailing whitespace, or {@code default} unless internal, {@code
   *     STATE_STORE_CANNOT_CREATE_COLUMN_FAMILY_WITH_RESERVED_CHARS} for a non-internal name
   *     starting with {@code $}
   */
  @Override
  public void createColFamilyIfAbsent(String colFamilyName, StructType keySchema,
      StructType valueSchema, KeyStateEncoderSpec keyStateEncoderSpec,
      boolean useMultipleValuesPerKey, boolean isInternal) {
    checkUpdating("createColFamilyIfAbsent");
    provider.checkFamilyCreationOrRemoval("create_col_family", colFamilyName, isInternal);
    if (ColumnFamily.DEFAULT_NAME.equals(colFamilyName)) {
      return; // exists in every store, with the encoders given at init
    }
    boolean exists = core.columnFamilies().byName(colFamilyName).isPresent();
    provider.declareFamily(colFamilyName, keySchema, valueSchema, keyStateEncoderSpec,
        useMultipleValuesPerKey, !exists);
    if (!exists) {
      prepareWrite();
    }
    core.createColumnFamily(colFamilyName, isInternal);
  }

  /**
   * Removes the column family and every key in it from the version being built (each key gets a
   * tombstone in this version's delta); its id is never reused.
   *
   * @return false if it does not exist
   * @throws org.apache.spark.SparkUnsupportedOperationException as {@link
   *     #createColFamilyIfAbsent} for a non-internal family (so {@code default} and names
   *     starting with {@code $} are refused, as Spark's RocksDB provider refuses them)
   */
  @Override
  public boolean removeColFamilyIfExists(String colFamilyName) {
    checkUpdating("removeColFamilyIfExists");
    provider.checkFamilyCreationOrRemoval("remove_col_family", colFamilyName, false);
    prepareWrite();
    try {
      // The codec stays registered: an abort brings the family back, and a re-creation
      // replaces the codec (createColFamilyIfAbsent of a family that does not exist).
      return core.removeColumnFamily(colFamilyName);
    } catch (LocalStateReadException e) {
      throw readFailed(e);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  // ------------------------------------------------------------------ reads

  @Override
  public UnsafeRow get(UnsafeRow key, String colFamilyName) {
    checkReadable("get");
    checkKey(key);
    Family f = family("get", colFamilyName);
    return f.codec().decodeValue(read(f.codec().encodeKey(f.id(), key)));
  }

  /**
   * Every value of {@code key} in a multi-valued family (transformWithState's ListState), in
   * the order they were put or merged; empty if the key has none.
   *
   * @throws IllegalStateException if the family is not multi-valued
   */
  @Override
  public Iterator<UnsafeRow> valuesIterator(UnsafeRow key, String colFamilyName) {
    checkReadable("valuesIterator");
    checkKey(key);
    Family f = family("valuesIterator", colFamilyName);
    if (!f.codec().multipleValues()) {
      throw new IllegalStateException("valuesIterator requires a encoder that supports multiple "
          + "values for a single key.");
    }
    return f.codec().decodeValues(read(f.codec().encodeKey(f.id(), key)));
  }

  @Override
  public StateStoreIterator<UnsafeRowPair> prefixScan(UnsafeRow prefixKey, String colFamilyName) {
    checkReadable("prefixScan");
    Family f = family("prefixScan", colFamilyName);
    if (!f.codec().supportsPrefixScan()) {
      throw new IllegalArgumentException("requirement failed: Prefix scan requires setting "
          + "prefix key! (" + provider + ", column family " + colFamilyName + ")");
    }
    return scan(f.codec(), f.codec().encodePrefix(f.id(), prefixKey));
  }

  /**
   * Every key of the family in unsigned byte order of its encoding (for a range-scan encoding,
   * ordered by the ordering columns), committed state overlaid with this version's writes as
   * they are when the iterator is created.
   */
  @Override
  public StateStoreIterator<UnsafeRowPair> iterator(String colFamilyName) {
    checkReadable("iterator");
    Family f = family("iterator", colFamilyName);
    return scan(f.codec(), ColumnFamily.keyPrefix(f.id()));
  }

  // ------------------------------------------------------------------ Spark 4.2 scans

  /**
   * Pairs with keys in {@code [start, end)} in the order of the family's key encoding (Spark
   * 4.2's {@code rangeScan}, used by transformWithState timers and TTL; the encoding must be
   * order-preserving, e.g. a range-scan spec). Committed state overlaid with this version's
   * writes as they are when the iterator is created.
   *
   * @param start first key, inclusive; empty to start at the family's first key
   * @param end end key, exclusive; empty to run to the family's last key
   * @param multipleValues expand a multi-valued key into one pair per value ({@code
   *     rangeScanWithMultiValues})
   * @throws IllegalArgumentException if the family's key encoding does not support range scans
   * @throws IllegalStateException if {@code multipleValues} and the family is not multi-valued
   */
  final StateStoreIterator<UnsafeRowPair> rangeScan(Optional<UnsafeRow> start,
      Optional<UnsafeRow> end, String colFamilyName, boolean multipleValues) {
    String op = multipleValues ? "rangeScanWithMultiValues" : "rangeScan";
    checkReadable(op);
    Family f = family(op, colFamilyName);
    if (!f.codec().supportsRangeScan()) {
      throw new IllegalArgumentException("requirement failed: Range scan requires an encoder "
          + "that supports range scanning! (" + provider + ", column family " + colFamilyName
          + ")");
    }
    byte[] prefix = ColumnFamily.keyPrefix(f.id());
    byte[] from = start.map(k -> f.codec().encodeKey(f.id(), k)).orElse(null);
    byte[] until = end.map(k -> f.codec().encodeKey(f.id(), k)).orElse(null);
    CloseableIterator<KeyValue> it = failingAsTask(() -> core.scan(prefix, from, until));
    return multipleValues ? expanded(multiValued(f), it) : pairs(f.codec(), it);
  }

  /**
   * Every (key, value) pair of a multi-valued family, one pair per value, keys in encoding order
   * (Spark 4.2's {@code iteratorWithMultiValues}, or its {@code prefixScanWithMultiValues} when
   * {@code prefixKey} is present).
   *
   * @throws IllegalStateException if the family is not multi-valued
   * @throws IllegalArgumentException for a prefix on a family without a prefix-scan encoding
   */
  final StateStoreIterator<UnsafeRowPair> multiValueScan(Optional<UnsafeRow> prefixKey,
      String colFamilyName) {
    String op = prefixKey.isPresent() ? "prefixScanWithMultiValues" : "iteratorWithMultiValues";
    checkReadable(op);
    Family f = family(op, colFamilyName);
    FamilyCodec codec = multiValued(f);
    byte[] prefix;
    if (prefixKey.isPresent()) {
      if (!codec.supportsPrefixScan()) {
        throw new IllegalArgumentException("requirement failed: prefixScanWithMultiValues "
            + "requires encoder supporting prefix scan! (" + provider + ", column family "
            + colFamilyName + ")");
      }
      prefix = codec.encodePrefix(f.id(), prefixKey.get());
    } else {
      prefix = ColumnFamily.keyPrefix(f.id());
    }
    return expanded(codec, failingAsTask(() -> core.scan(prefix)));
  }

  /**
   * The names of the column families of the version being built, {@code default} included
   * (Spark 4.2's {@code allColumnFamilyNames}).
   */
  final java.util.Set<String> familyNames() {
    java.util.Set<String> names = new java.util.LinkedHashSet<>();
    names.add(ColumnFamily.DEFAULT_NAME);
    for (ColumnFamily cf : core.columnFamilies().families()) {
      names.add(cf.name());
    }
    return names;
  }

  private static FamilyCodec multiValued(Family f) {
    if (!f.codec().multipleValues()) {
      throw new IllegalStateException("Multi-value iterator operation requires an encoder which "
          + "supports multiple values for a single key");
    }
    return f.codec();
  }

  private static StateStoreIterator<UnsafeRowPair> expanded(FamilyCodec codec,
      CloseableIterator<KeyValue> it) {
    UnsafeRowPair pair = new UnsafeRowPair(null, null);
    Iterator<UnsafeRowPair> rows = new AbstractIterator<>() {
      private UnsafeRow key;
      private Iterator<UnsafeRow> values = scala.collection.Iterator$.MODULE$.empty();

      @Override
      public boolean hasNext() {
        while (!values.hasNext() && it.hasNext()) {
          KeyValue kv = it.next();
          key = codec.decodeKey(kv.key());
          values = codec.decodeValues(kv.value());
        }
        return values.hasNext();
      }

      @Override
      public UnsafeRowPair next() {
        if (!hasNext()) {
          throw new java.util.NoSuchElementException();
        }
        return pair.withRows(key, values.next());
      }
    };
    return new StateStoreIterator<>(rows, () -> {
      it.close();
      return BoxedUnit.UNIT;
    });
  }

  private byte[] read(byte[] key) {
    try {
      return core.get(key);
    } catch (LocalStateReadException e) {
      throw readFailed(e);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private StateStoreIterator<UnsafeRowPair> scan(FamilyCodec codec, byte[] prefix) {
    return pairs(codec, failingAsTask(() -> core.scan(prefix)));
  }

  /** The task failure for a local read error; see the class comment. */
  private RuntimeException readFailed(LocalStateReadException e) {
    return SparkErrors.cannotReadLocal(provider.toString(), e);
  }

  /**
   * Opens a scan of the core store whose creation, {@code hasNext} and {@code next} fail a local
   * read error as {@link #readFailed}.
   */
  private CloseableIterator<KeyValue> failingAsTask(
      java.util.function.Supplier<CloseableIterator<KeyValue>> open) {
    CloseableIterator<KeyValue> it;
    try {
      it = open.get();
    } catch (LocalStateReadException e) {
      throw readFailed(e);
    }
    return new CloseableIterator<>() {
      @Override
      public boolean hasNext() {
        try {
          return it.hasNext();
        } catch (LocalStateReadException e) {
          throw readFailed(e);
        }
      }

      @Override
      public KeyValue next() {
        try {
          return it.next();
        } catch (LocalStateReadException e) {
          throw readFailed(e);
        }
      }

      @Override
      public void close() {
        it.close();
      }
    };
  }

  private static StateStoreIterator<UnsafeRowPair> pairs(FamilyCodec codec,
      CloseableIterator<KeyValue> it) {
    UnsafeRowPair pair = new UnsafeRowPair(null, null);
    Iterator<UnsafeRowPair> rows = new AbstractIterator<>() {
      @Override
      public boolean hasNext() {
        return it.hasNext();
      }

      @Override
      public UnsafeRowPair next() {
        KeyValue kv = it.next();
        return pair.withRows(codec.decodeKey(kv.key()), codec.decodeValue(kv.value()));
      }
    };
    return new StateStoreIterator<>(rows, () -> {
      it.close();
      return BoxedUnit.UNIT;
    });
  }

  // ------------------------------------------------------------------ writes

  @Override
  public void put(UnsafeRow key, UnsafeRow value, String colFamilyName) {
    checkUpdating("put");
    checkKey(key);
    if (value == null) {
      throw new IllegalArgumentException("Cannot put a null value for key " + key + " in "
          + provider);
    }
    Family f = family("put", colFamilyName);
    write(f.codec().encodeKey(f.id(), key), f.codec().encodeValue(value));
  }

  @Override
  public void remove(UnsafeRow key, String colFamilyName) {
    checkUpdating("remove");
    checkKey(key);
    Family f = family("remove", colFamilyName);
    prepareWrite();
    try {
      core.delete(f.codec().encodeKey(f.id(), key));
    } catch (LocalStateReadException e) {
      throw readFailed(e);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * Replaces the values of {@code key} in a multi-valued family with {@code values} (in order).
   *
   * @throws IllegalArgumentException for a null or empty array or a null element
   * @throws IllegalStateException if the family is not multi-valued
   */
  public void putList(UnsafeRow key, UnsafeRow[] values, String colFamilyName) {
    checkUpdating("putList");
    checkKey(key);
    checkValues(values, "put");
    Family f = family("put", colFamilyName);
    if (!f.codec().multipleValues()) {
      throw new IllegalStateException("Multi-value put operation requires an encoder which "
          + "supports multiple values for a single key");
    }
    write(f.codec().encodeKey(f.id(), key), SparkFamilyCodec.append(null, encode(f, values)));
  }

  /**
   * Appends {@code value} to the values of {@code key} in a multi-valued family. Read-modify-
   * write within the version being built: this version's delta carries the whole new list.
   *
   * @throws IllegalStateException if the family is not multi-valued
   */
  @Override
  public void merge(UnsafeRow key, UnsafeRow value, String colFamilyName) {
    checkUpdating("merge");
    Family f = family("merge", colFamilyName);
    checkMergeable(f);
    checkKey(key);
    if (value == null) {
      throw new IllegalArgumentException("requirement failed: Cannot merge a null value");
    }
    append(f, key, List.of(f.codec().encodeValue(value)));
  }

  /** Appends every element of {@code values}, in order; see {@link #merge}. */
  public void mergeList(UnsafeRow key, UnsafeRow[] values, String colFamilyName) {
    checkUpdating("mergeList");
    Family f = family("merge", colFamilyName);
    checkMergeable(f);
    checkKey(key);
    checkValues(values, "merge");
    append(f, key, encode(f, values));
  }

  private void append(Family f, UnsafeRow key, List<byte[]> encoded) {
    byte[] k = f.codec().encodeKey(f.id(), key);
    write(k, SparkFamilyCodec.append(read(k), encoded));
  }

  private void write(byte[] key, byte[] value) {
    prepareWrite();
    try {
      core.put(key, value);
    } catch (LocalStateReadException e) {
      throw readFailed(e);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static List<byte[]> encode(Family f, UnsafeRow[] values) {
    List<byte[]> out = new ArrayList<>(values.length);
    for (UnsafeRow v : values) {
      out.add(f.codec().encodeValue(v));
    }
    return out;
  }

  private static void checkMergeable(Family f) {
    if (!f.codec().multipleValues()) {
      throw new IllegalStateException("Merge operation requires an encoder which supports "
          + "multiple values for a single key");
    }
  }

  private static void checkKey(UnsafeRow key) {
    if (key == null) {
      throw new IllegalStateException("Key cannot be null");
    }
  }

  private static void checkValues(UnsafeRow[] values, String op) {
    if (values == null) {
      throw new IllegalArgumentException("requirement failed: Cannot " + op + " a null value");
    }
    if (values.length == 0) {
      throw new IllegalArgumentException("requirement failed: Cannot " + op
          + " an empty list of values");
    }
    for (UnsafeRow v : values) {
      if (v == null) {
        throw new IllegalArgumentException("requirement failed: Cannot " + op
            + " a null value in the array");
      }
    }
  }

  // ------------------------------------------------------------------ life cycle

  @Override
  public long commit() {
    checkUpdating("commit");
    try {
      if (!writePrepared) { // a version without changes: the run claims its epoch now
        core.prepareWrite();
        writePrepared = true;
      }
      committed = core.commit();
    } catch (IOException | RuntimeException e) {
      throw SparkErrors.cannotCommit(toString(), e);
    }
    if (forceSnapshotOnCommit) {
      snapshotAfterCommit();
    }
    requestsAtEnd = requests.snapshot();
    memoryAtCommit = core.memoryUsage();
    gcAtCommit = provider.takeUnreportedGc();
    gcFailuresAtCommit = provider.takeUnreportedGcFailures();
    mode = Mode.COMMITTED;
    try {
      provider.afterCommit(this, committed.manifest().version());
    } finally {
      // Only after the report to Spark's coordinator, so that the ingestion's thread does not
      // compete with it for the cores (see SyncedStore#startLocalIngestion).
      core.startLocalIngestion();
    }
    return committed.manifest().version();
  }

  @Override
  public void abort() {
    Mode m = mode;
    if (m == Mode.UPDATING) {
      core.abort();
      mode = Mode.ABORTED;
      provider.releaseTaskLock(this);
    } else if (m == Mode.READ_ONLY) {
      mode = Mode.ABORTED;
      provider.releaseTaskLock(this);
    }
    // COMMITTED, ABORTED, RELEASED: nothing to undo (Spark may abort after commit).
  }

  /**
   * Gives back a read store on the success path (Spark 4.1+ {@code ReadStateStore.release()});
   * on a write store that has not committed, the same as {@link #abort()}. Idempotent.
   */
  public void release() {
    Mode m = mode;
    if (m == Mode.READ_ONLY) {
      mode = Mode.RELEASED;
      provider.releaseTaskLock(this);
    } else if (m == Mode.UPDATING) {
      abort();
    }
  }

  /** Called when the task ends: gives back what the task did not. */
  void onTaskCompletion() {
    if (mode == Mode.READ_ONLY) {
      release();
    } else if (mode == Mode.UPDATING) {
      abort();
    }
  }

  @Override
  public boolean hasCommitted() {
    return mode == Mode.COMMITTED;
  }

  /**
   * What this store reports for its batch; each adapter's {@code metrics()} turns it into Spark's
   * {@code StateStoreMetrics}. Spark asks after commit, when the store may already serve the
   * next task or be closed: after a commit this reports what was captured at commit and never
   * touches the local database.
   */
  final StrataMetrics.Batch metricsBatch() {
    RequestCounter.Counts end = requestsAtEnd != null ? requestsAtEnd : requests.snapshot();
    if (committed != null) {
      var m = committed.manifest();
      return new StrataMetrics.Batch(m.numKeys(), memoryAtCommit,
          committed.stats(), restore, end.minus(requestsAtStart), committed.lostRace() ? 1 : 0,
          m.base().map(b -> b.version()).orElse(-1L), gcAtCommit, gcFailuresAtCommit,
          partitionId(), storeName(),
          forcedSnapshotUploaded ? 1 : 0);
    }
    return new StrataMetrics.Batch(core.numKeys(), core.memoryUsage(),
        CommitStats.NONE, restore, end.minus(requestsAtStart), 0, loadedBaseVersion,
        GcStats.NONE, 0, partitionId(), storeName(), 0);
  }

  /** Sets whether {@link #commit()} uploads a base snapshot of the new version (Spark 4.2). */
  final void forceSnapshotOnCommit(boolean force) {
    this.forceSnapshotOnCommit = force;
  }

  /**
   * The forced snapshot of Spark 4.2's {@code forceSnapshotOnCommit}, taken after the version's
   * PUT succeeded, while the task still holds the store. The commit is durable already, so a
   * failed snapshot upload is logged and left to maintenance (which retries when due), not
   * thrown: failing the batch would not make its state any safer.
   */
  private void snapshotAfterCommit() {
    try {
      if (core.snapshotNow()) {
        forcedSnapshotUploaded = true;
        provider.reportSnapshotIfNew(core.lastSnapshotVersion());
      }
    } catch (IOException | RuntimeException e) {
      LOG.warn("{}: the forced snapshot after commit failed; maintenance will retry", this, e);
    }
  }

  @Override
  public StateStoreCheckpointInfo getStateStoreCheckpointInfo() {
    int partition = provider.stateStoreId().partitionId();
    if (committed == null) {
      Optional<String> attempt = core.loadedAttempt();
      return new StateStoreCheckpointInfo(partition, version, Scala.some(attempt.orElse(null)),
          Scala.none());
    }
    return new StateStoreCheckpointInfo(partition, committed.manifest().version(),
        Scala.some(committed.manifest().attempt()),
        Scala.some(committed.manifest().parentAttempt().orElse(null)));
  }

  private void checkReadable(String op) {
    Mode m = mode;
    if (m != Mode.READ_ONLY && m != Mode.UPDATING) {
      throw SparkErrors.outOfOrder(op + " on " + provider + " version " + version
          + " after the store was " + m.name().toLowerCase(java.util.Locale.ROOT));
    }
  }

  private void checkUpdating(String op) {
    Mode m = mode;
    if (m != Mode.UPDATING) {
      throw SparkErrors.outOfOrder(op + " on " + provider + " version " + version
          + " in state " + m + "; updates are allowed only before commit or abort");
    }
  }

  @Override
  public String toString() {
    return "StrataStateStore[" + provider + ", version " + version + ", " + mode + "]";
  }

  private int partitionId() {
    return provider.stateStoreId().partitionId();
  }

  private String storeName() {
    return provider.stateStoreId().storeName();
  }

}
