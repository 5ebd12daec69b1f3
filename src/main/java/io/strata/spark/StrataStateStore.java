package io.strata.spark;

import io.strata.engine.CloseableIterator;
import io.strata.engine.KeyValue;
import io.strata.metrics.CommitStats;
import io.strata.metrics.RequestCounter;
import io.strata.metrics.RestoreStats;
import io.strata.sync.SyncedStore;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Optional;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.streaming.state.StateStore;
import org.apache.spark.sql.execution.streaming.state.StateStoreCheckpointInfo;
import org.apache.spark.sql.execution.streaming.state.StateStoreCustomMetric;
import org.apache.spark.sql.execution.streaming.state.StateStoreId;
import org.apache.spark.sql.execution.streaming.state.StateStoreIterator;
import org.apache.spark.sql.execution.streaming.state.StateStoreMetrics;
import org.apache.spark.sql.execution.streaming.state.UnsafeRowPair;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.execution.streaming.state.KeyStateEncoderSpec;
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
 */
final class StrataStateStore implements StateStore {
  enum Mode { READ_ONLY, UPDATING, COMMITTED, ABORTED, RELEASED }

  private final StrataStateStoreProvider provider;
  private final SyncedStore core;
  private final RowCodec codec;
  private final long version;
  private final RequestCounter requests;
  private final RequestCounter.Counts requestsAtStart;
  private final RestoreStats restore;
  private volatile Mode mode;
  private SyncedStore.Committed committed;
  private RequestCounter.Counts requestsAtEnd;
  /** Memory use captured at commit, before the lock is given back (metrics() comes later). */
  private long memoryAtCommit;

  StrataStateStore(StrataStateStoreProvider provider, SyncedStore core, RowCodec codec,
      long version, boolean readOnly, RequestCounter requests, RequestCounter.Counts atStart) {
    this.provider = provider;
    this.core = core;
    this.codec = codec;
    this.version = version;
    this.requests = requests;
    this.requestsAtStart = atStart;
    this.restore = core.lastRestore();
    this.mode = readOnly ? Mode.READ_ONLY : Mode.UPDATING;
  }

  Mode mode() {
    return mode;
  }

  /** READ_ONLY -&gt; UPDATING, keeping the task lock (Spark 4.1 read-then-write in one task). */
  void upgrade() {
    if (mode != Mode.READ_ONLY) {
      throw SparkErrors.outOfOrder("cannot upgrade a store in state " + mode + " to a write store");
    }
    mode = Mode.UPDATING;
  }

  @Override
  public StateStoreId id() {
    return provider.stateStoreId();
  }

  @Override
  public long version() {
    return version;
  }

  // ------------------------------------------------------------------ reads

  @Override
  public UnsafeRow get(UnsafeRow key, String colFamilyName) {
    checkReadable("get");
    try {
      byte[] v = core.get(codec.encodeKey(provider.familyId(colFamilyName), key));
      return v == null ? null : codec.decodeValue(v);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @Override
  public Iterator<UnsafeRow> valuesIterator(UnsafeRow key, String colFamilyName) {
    throw provider.multipleValuesUnsupported("valuesIterator");
  }

  @Override
  public StateStoreIterator<UnsafeRowPair> prefixScan(UnsafeRow prefixKey, String colFamilyName) {
    checkReadable("prefixScan");
    if (!codec.supportsPrefixScan()) {
      throw new UnsupportedOperationException("prefixScan on " + provider
          + " needs a PrefixKeyScanStateEncoderSpec");
    }
    return scan(codec.encodePrefix(provider.familyId(colFamilyName), prefixKey));
  }

  @Override
  public StateStoreIterator<UnsafeRowPair> iterator(String colFamilyName) {
    checkReadable("iterator");
    return scan(RowCodec.familyPrefix(provider.familyId(colFamilyName)));
  }

  private StateStoreIterator<UnsafeRowPair> scan(byte[] prefix) {
    CloseableIterator<KeyValue> it = core.scan(prefix);
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
    if (value == null) {
      throw new IllegalArgumentException("Cannot put a null value for key " + key + " in "
          + provider);
    }
    try {
      core.put(codec.encodeKey(provider.familyId(colFamilyName), key), RowCodec.encodeValue(value));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @Override
  public void remove(UnsafeRow key, String colFamilyName) {
    checkUpdating("remove");
    try {
      core.delete(codec.encodeKey(provider.familyId(colFamilyName), key));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @Override
  public void putList(UnsafeRow key, UnsafeRow[] values, String colFamilyName) {
    throw provider.multipleValuesUnsupported("putList");
  }

  @Override
  public void merge(UnsafeRow key, UnsafeRow value, String colFamilyName) {
    throw provider.multipleValuesUnsupported("merge");
  }

  @Override
  public void mergeList(UnsafeRow key, UnsafeRow[] values, String colFamilyName) {
    throw provider.multipleValuesUnsupported("mergeList");
  }

  @Override
  public boolean removeColFamilyIfExists(String colFamilyName) {
    throw provider.columnFamiliesUnsupported("removeColFamilyIfExists");
  }

  @Override
  public void createColFamilyIfAbsent(String colFamilyName, StructType keySchema,
      StructType valueSchema, KeyStateEncoderSpec keyStateEncoderSpec,
      boolean useMultipleValuesPerKey, boolean isInternal) {
    throw provider.columnFamiliesUnsupported("createColFamilyIfAbsent");
  }

  // ------------------------------------------------------------------ life cycle

  @Override
  public long commit() {
    checkUpdating("commit");
    try {
      committed = core.commit();
    } catch (IOException | RuntimeException e) {
      throw SparkErrors.cannotCommit(toString(), e);
    }
    requestsAtEnd = requests.snapshot();
    memoryAtCommit = core.memoryUsageBytes();
    mode = Mode.COMMITTED;
    provider.afterCommit(this, committed.manifest().version());
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

  @Override
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

  @Override
  public StateStoreMetrics metrics() {
    RequestCounter.Counts end = requestsAtEnd != null ? requestsAtEnd : requests.snapshot();
    if (committed != null) {
      // Spark asks after commit, when the store may already serve the next task or be closed:
      // report what was captured at commit, never touch the local database here.
      return StrataMetrics.build(committed.manifest().numKeys(), memoryAtCommit,
          committed.stats(), restore, end.minus(requestsAtStart));
    }
    return StrataMetrics.build(core.numKeys(), core.memoryUsageBytes(), CommitStats.NONE,
        restore, end.minus(requestsAtStart));
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

  /** Custom metric definitions used by this store (same as the provider's). */
  static scala.collection.immutable.Seq<StateStoreCustomMetric> customMetrics() {
    return Scala.seq(StrataMetrics.ALL);
  }
}
