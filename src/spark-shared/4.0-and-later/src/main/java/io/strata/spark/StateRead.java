// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import java.io.Serializable;
import java.util.Iterator;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.function.PairFlatMapFunction;
import org.apache.spark.sql.catalyst.expressions.Murmur3HashFunction;
import org.apache.spark.sql.execution.streaming.state.ReadStateStore;
import org.apache.spark.sql.execution.streaming.state.StateStore;
import org.apache.spark.sql.execution.streaming.state.StateStoreConf;
import org.apache.spark.sql.execution.streaming.state.StateStoreId;
import org.apache.spark.sql.execution.streaming.state.UnsafeRowPair;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.util.SerializableConfiguration;
import org.apache.spark.util.TaskCompletionListener;
import scala.Option;
import scala.Tuple2;

/**
 * One old state partition's read in {@link StrataRepartition}, on an executor: store {@code
 * partition} at {@code version} (restored from S3 by Strata, checked by checksum), every row
 * paired with the new partition the query's own shuffle gives its key: Spark's {@code
 * HashPartitioning} of the key's partition-key fields ({@link StatePlacement}), {@code
 * pmod(Murmur3Hash(fields, seed 42), newCount)} (the fields hashed in order with the running
 * seed, as {@code Murmur3Hash} does for several grouping expressions; a struct's fields hash the
 * same way). The rows are copied out as the
 * stored {@code UnsafeRow} bytes. Spark's state data source is not used for the rows: on Spark
 * 4.0 and 4.1 it finds a batch's partitions by listing directories, which after a repartition
 * to fewer partitions names old ones.
 *
 * @param stateRoot the checkpoint's state directory
 * @param operatorId the operator's id
 * @param storeName the store's name
 * @param keySchema the state key's schema
 * @param valueSchema the state value's schema
 * @param placement which key fields are hashed, and the store's key encoding
 * @param storeConf the store settings of the batch read
 * @param hadoop the Hadoop configuration with Strata's settings
 * @param version the version to read ({@code N + 1} for batch {@code N})
 * @param checkpointIds per old partition, the version's checkpoint id (format 2), or null
 * @param newCount the new number of partitions
 */
record StateRead(String stateRoot, long operatorId, String storeName, StructType keySchema,
    StructType valueSchema, StatePlacement placement, StateStoreConf storeConf, SerializableConfiguration hadoop,
    long version, String[] checkpointIds, int newCount)
    implements PairFlatMapFunction<Integer, Integer, Tuple2<byte[], byte[]>>, Serializable {

  /**
   * The new partition of a state key, as Spark's shuffle places the key's row.
   *
   * @param partitionKey the leading key fields the shuffle hashes ({@link
   *     StatePlacement#partitionKey}); the key's later fields are not read
   */
  static int newPartition(org.apache.spark.sql.catalyst.InternalRow key, StructType partitionKey,
      int count) {
    org.apache.spark.sql.catalyst.InternalRow hashed = key;
    int n = partitionKey.length();
    if (n < key.numFields()) {
      // Spark's hash of a struct walks the row's fields, not the schema's: hash a row of the
      // leading fields alone.
      Object[] values = new Object[n];
      for (int i = 0; i < n; i++) {
        values[i] = key.get(i, partitionKey.fields()[i].dataType());
      }
      hashed = new org.apache.spark.sql.catalyst.expressions.GenericInternalRow(values);
    }
    int hash = (int) Murmur3HashFunction.hash(hashed, partitionKey, 42L);
    return ((hash % count) + count) % count;
  }

  /**
   * Reads partition {@code partition}.
   *
   * @return (new partition, (key bytes, value bytes)) per row
   * @throws org.apache.spark.SparkException (undeclared) as Strata's load does
   */
  @Override
  public Iterator<Tuple2<Integer, Tuple2<byte[], byte[]>>> call(Integer partition) {
    StrataStateStoreProvider provider = new StrataStateStoreProvider();
    provider.init(new StateStoreId(stateRoot, operatorId, partition, storeName), keySchema,
        valueSchema, placement.encoderSpec(keySchema), false, storeConf,
        hadoop.value(), false, Option.empty());
    ReadStateStore store;
    try {
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
    StructType partitionKey = placement.partitionKey(keySchema);
    scala.collection.Iterator<UnsafeRowPair> rows =
        store.iterator(StateStore.DEFAULT_COL_FAMILY_NAME());
    return new Iterator<>() {
      @Override
      public boolean hasNext() {
        return rows.hasNext();
      }

      @Override
      public Tuple2<Integer, Tuple2<byte[], byte[]>> next() {
        UnsafeRowPair r = rows.next();
        return new Tuple2<>(newPartition(r.key(), partitionKey, newCount),
            new Tuple2<>(r.key().copy().getBytes(), r.value().copy().getBytes()));
      }
    };
  }
}
