// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import java.io.Serializable;
import java.util.Iterator;
import java.util.List;
import org.apache.spark.api.java.function.Function2;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.streaming.state.StateStore;
import org.apache.spark.sql.execution.streaming.state.StateStoreCheckpointInfo;
import org.apache.spark.sql.execution.streaming.state.StateStoreConf;
import org.apache.spark.sql.execution.streaming.state.StateStoreId;
import org.apache.spark.util.SerializableConfiguration;
import scala.Option;
import scala.Tuple2;

/**
 * One new state partition's write in {@link StrataRepartition}, on an executor: the rows
 * {@link StateRead} placed in partition {@code p} (the stored {@code UnsafeRow} bytes of key and
 * values, per column family) become store {@code p}'s state, written as a new version of nothing
 * else: the store opened empty at {@code emptyVersion} ({@link
 * AbstractStrataProvider#openEmptyStore}, Strata's {@code loadEmpty}), every family created as
 * the operator declares it, every row put as it was stored (a list's values merged in order),
 * then one commit of {@code emptyVersion + 1}.
 * The Hadoop configuration carries a run id of the repartition's own ({@code
 * sql.streaming.runId}), so the commit is a later query run's: it wins over any version the
 * earlier runs left at the same number.
 *
 * @param stateRoot the checkpoint's state directory ({@code <checkpoint>/state})
 * @param operatorId the stateful operator's id
 * @param storeName the store's name ({@code default} for aggregations and deduplications)
 * @param placement the store's families: their schemas and key encodings
 * @param storeConf the store settings of the batch (the offset log's, with the new count)
 * @param hadoop the Hadoop configuration with Strata's settings and the run id
 * @param emptyVersion the version the empty store stands at (the new batch's id)
 */
record StateRewrite(String stateRoot, long operatorId, String storeName,
    StatePlacement placement, StateStoreConf storeConf, SerializableConfiguration hadoop,
    long emptyVersion)
    implements Function2<Integer, Iterator<Tuple2<Integer, StateRead.Row>>, Iterator<String>>,
        Serializable {

  /**
   * Writes partition {@code partition}'s store.
   *
   * @return one line, "partition,rows,checkpoint id" (the id empty under checkpoint format 1)
   * @throws org.apache.spark.SparkException (undeclared) as Strata's load and commit do; the
   *     store is aborted and nothing of it is committed
   */
  @Override
  public Iterator<String> call(Integer partition, Iterator<Tuple2<Integer, StateRead.Row>> rows) {
    StrataStateStoreProvider provider = new StrataStateStoreProvider();
    List<StatePlacement.Family> families = placement.families();
    StatePlacement.Family first = families.get(0);
    provider.init(new StateStoreId(stateRoot, operatorId, partition, storeName),
        first.keySchema(), first.valueSchema(), first.encoderSpec(), placement.columnFamilies(),
        storeConf, hadoop.value(), false, Option.empty());
    try {
      StateStore store = provider.openEmptyStore(emptyVersion);
      long n = 0;
      StateStoreCheckpointInfo info;
      try {
        if (placement.columnFamilies()) {
          for (StatePlacement.Family f : families) {
            if (f.name().equals("default")) {
              continue; // every store has it, with init's schemas
            }
            // As the operator declares them: names starting with '$' are Spark's own indexes.
            store.createColFamilyIfAbsent(f.name(), f.keySchema(), f.valueSchema(),
                f.encoderSpec(), f.multipleValues(), f.name().startsWith("$"));
          }
        }
        while (rows.hasNext()) {
          Tuple2<Integer, StateRead.Row> r = rows.next();
          if (r._1() != partition.intValue()) {
            throw new IllegalStateException("a row for partition " + r._1() + " reached "
                + "partition " + partition);
          }
          StatePlacement.Family f = families.get(r._2().family());
          byte[] k = r._2().key();
          UnsafeRow key = new UnsafeRow(f.keySchema().length());
          key.pointTo(k, k.length);
          for (byte[] v : r._2().values()) {
            UnsafeRow value = new UnsafeRow(f.valueSchema().length());
            value.pointTo(v, v.length);
            if (f.multipleValues()) {
              store.merge(key, value, f.name());
            } else {
              store.put(key, value, f.name());
            }
          }
          n++;
        }
        store.commit();
        info = store.getStateStoreCheckpointInfo();
      } catch (RuntimeException | Error e) {
        store.abort();
        throw e;
      }
      return List.of(partition + "," + n + "," + info.stateStoreCkptId().getOrElse(() -> ""))
          .iterator();
    } finally {
      provider.close();
    }
  }
}
