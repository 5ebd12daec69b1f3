// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.Optional;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.function.PairFlatMapFunction;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.streaming.state.ReadStateStore;
import org.apache.spark.sql.execution.streaming.state.StateStoreConf;
import org.apache.spark.sql.execution.streaming.state.StateStoreId;
import org.apache.spark.sql.execution.streaming.state.UnsafeRowPair;
import org.apache.spark.util.SerializableConfiguration;
import org.apache.spark.util.TaskCompletionListener;
import scala.Option;
import scala.Tuple2;

/**
 * One old state partition's read in {@link StrataRepartition}, on an executor: store {@code
 * partition} at {@code version} (restored from S3 by Strata, checked by checksum), every row of
 * every column family paired with the new partition the query's own shuffle gives its key
 * ({@link StatePlacement.Family#newPartition}). The rows are copied out as the stored {@code
 * UnsafeRow} bytes; a multi-valued key (a ListState's) as one row with its values in order.
 * Spark's state data source is not used for the rows: on Spark 4.0 and 4.1 it finds a batch's
 * partitions by listing directories, which after a repartition to fewer partitions names old
 * ones.
 *
 * @param stateRoot the checkpoint's state directory
 * @param operatorId the operator's id
 * @param storeName the store's name
 * @param placement the store's families: their schemas, key encodings and partition keys
 * @param storeConf the store settings of the batch read
 * @param hadoop the Hadoop configuration with Strata's settings
 * @param version the version to read ({@code N + 1} for batch {@code N})
 * @param checkpointIds per old partition, the version's checkpoint id (format 2), or null
 * @param newCount the new number of partitions
 */
record StateRead(String stateRoot, long operatorId, String storeName, StatePlacement placement,
    StateStoreConf storeConf, SerializableConfiguration hadoop, long version,
    String[] checkpointIds, int newCount)
    implements PairFlatMapFunction<Integer, Integer, StateRead.Row>, Serializable {

  /**
   * One key of a family, as stored.
   *
   * @param family the family's place in {@link StatePlacement#families}
   * @param key the key's {@code UnsafeRow} bytes
   * @param values the value's {@code UnsafeRow} bytes: one, or a list's values in order
   */
  record Row(int family, byte[] key, byte[][] values) implements Serializable {
    private static final long serialVersionUID = 1L;
  }

  /**
   * Reads partition {@code partition}.
   *
   * @return (new partition, row) per key
   * @throws org.apache.spark.SparkException (undeclared) as Strata's load does
   */
  @Override
  public Iterator<Tuple2<Integer, Row>> call(Integer partition) {
    StrataStateStoreProvider provider = new StrataStateStoreProvider();
    StatePlacement.Family first = placement.families().get(0);
    provider.init(new StateStoreId(stateRoot, operatorId, partition, storeName), first.keySchema(),
        first.valueSchema(), first.encoderSpec(), placement.columnFamilies(), storeConf,
        hadoop.value(), false, Option.empty());
    ReadStateStore store;
    try {
      if (placement.columnFamilies()) {
        for (StatePlacement.Family f : placement.families()) {
          if (f.name().equals("default")) {
            continue; // declared by init
          }
          provider.declareFamily(f.name(), f.keySchema(), f.valueSchema(), f.encoderSpec(),
              f.multipleValues(), false);
        }
      }
      store = provider.getReadStore(version, checkpointIds == null
          ? Option.empty() : Option.apply(checkpointIds[partition]));
    } catch (RuntimeException | Error e) {
      provider.close();
      throw e;
    }
    // Rows stream to the shuffle; the store and provider close when the task ends, read or not.
    TaskContext.get().addTaskCompletionListener(new TaskCompletionListener() {
      @Override
      public void onTaskCompletion(TaskContext context) {
        try {
          store.abort();
        } finally {
          provider.close();
        }
      }
    });
    List<StatePlacement.Family> families = placement.families();
    java.util.Set<String> names = ((AbstractStrataStore) store).familyNames();
    return new Iterator<>() {
      private int family = -1;
      private scala.collection.Iterator<UnsafeRowPair> rows;
      private UnsafeRowPair pending; // a multi-valued family's next key's first pair

      @Override
      public boolean hasNext() {
        while (pending == null && (rows == null || !rows.hasNext())) {
          if (++family >= families.size()) {
            return false;
          }
          StatePlacement.Family f = families.get(family);
          if (!names.contains(f.name())) {
            // Listed in the schema file but never created (4.1's ListState with TTL keeps no
            // $rowCounter_ family): nothing to read.
            rows = null;
            continue;
          }
          rows = f.multipleValues()
              ? ((AbstractStrataStore) store).multiValueScan(Optional.empty(), f.name())
              : store.iterator(f.name());
        }
        return true;
      }

      @Override
      public Tuple2<Integer, Row> next() {
        if (!hasNext()) {
          throw new NoSuchElementException();
        }
        StatePlacement.Family f = families.get(family);
        UnsafeRowPair r = pending != null ? pending : rows.next();
        pending = null;
        UnsafeRow key = r.key().copy();
        List<byte[]> values = new ArrayList<>();
        values.add(r.value().copy().getBytes());
        // One pair per value, a key's values together in order: gather them.
        while (f.multipleValues() && rows.hasNext()) {
          UnsafeRowPair more = rows.next();
          if (!more.key().equals(key)) {
            pending = new UnsafeRowPair(more.key().copy(), more.value().copy());
            break;
          }
          values.add(more.value().copy().getBytes());
        }
        return new Tuple2<>(f.newPartition(key, newCount),
            new Row(family, key.getBytes(), values.toArray(new byte[0][])));
      }
    };
  }
}
