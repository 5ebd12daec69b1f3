// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import java.io.Serializable;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import org.apache.spark.sql.execution.streaming.state.KeyStateEncoderSpec;
import org.apache.spark.sql.execution.streaming.state.NoPrefixKeyStateEncoderSpec;
import org.apache.spark.sql.execution.streaming.state.PrefixKeyScanStateEncoderSpec;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * Where {@link StrataRepartition} places one store's state keys, and how the store encodes them:
 * the decision of which leading fields of a state key are the operator's partition key (the
 * fields the query's shuffle hashes), per operator and store, as Spark 4.2's offline
 * repartitioning decides it ({@code StatePartitionKeyExtractorFactory}):
 *
 * <ul>
 *   <li>streaming aggregations ({@code stateStoreSave}), {@code dropDuplicates} ({@code dedupe},
 *       {@code dedupeWithinWatermark}) and {@code flatMapGroupsWithState} (and {@code
 *       applyInPandasWithState}): the whole key;
 *   <li>session windows ({@code sessionWindowStateStoreSaveExec}): every field but the last
 *       (the session's start), which are also the store's prefix-scan columns ({@code
 *       PrefixKeyScanStateEncoderSpec}, with which Strata encodes the key);
 *   <li>stream-stream joins ({@code symmetricHashJoin}) in join state formats 1 and 2 (four
 *       stores): {@code <side>-keyToNumValues} the whole key (the join key), {@code
 *       <side>-keyWithIndexToValue} every field but the last (the value's index).
 * </ul>
 *
 * <p>Refused by name: {@code transformWithState} (its column families and timers), joins in
 * state format 3 or later (column families in one store), and operators with no grouping key
 * (Spark keeps a global aggregation's state in partition 0 whatever the count).
 *
 * @param partitionKeyFields how many leading key fields the query's shuffle hashes, at least 1
 * @param prefixScanFields the store's prefix-scan key columns, 0 for none
 * @param storeIndex the store's place in a partition's list of checkpoint ids in the commit log
 *     (checkpoint format 2): 0, or for a join {@code left-keyToNumValues}, {@code
 *     left-keyWithIndexToValue}, {@code right-keyToNumValues}, {@code right-keyWithIndexToValue}
 *     (Spark's {@code SymmetricHashJoinStateManager.allStateStoreNames} order)
 */
record StatePlacement(int partitionKeyFields, int prefixScanFields, int storeIndex)
    implements Serializable {
  /** The operators whose partition key is their whole state key. */
  static final Set<String> WHOLE_KEY = Set.of("stateStoreSave", "dedupe",
      "dedupeWithinWatermark", "flatMapGroupsWithState", "applyInPandasWithState");
  static final String SESSION_WINDOW = "sessionWindowStateStoreSaveExec";
  static final String JOIN = "symmetricHashJoin";
  /** A join's stores in the order of its checkpoint ids (join state formats 1 and 2). */
  static final List<String> JOIN_STORES = List.of("left-keyToNumValues",
      "left-keyWithIndexToValue", "right-keyToNumValues", "right-keyWithIndexToValue");
  private static final long serialVersionUID = 1L;

  /**
   * The placement of store {@code s}'s keys.
   *
   * @param checkpoint the checkpoint, for messages
   * @param s the store
   * @param keySchema its state key's schema
   * @throws StrataRepartition.Refused for an operator or store this job does not rewrite,
   *     naming it and what the job covers
   */
  static StatePlacement of(String checkpoint, StrataRepartition.Store s, StructType keySchema) {
    check(checkpoint, s);
    int n = keySchema.length();
    String op = s.operatorName();
    StatePlacement p;
    if (SESSION_WINDOW.equals(op)) {
      p = new StatePlacement(n - 1, n - 1, 0);
    } else if (JOIN.equals(op)) {
      boolean indexed = s.storeName().endsWith("-keyWithIndexToValue");
      p = new StatePlacement(indexed ? n - 1 : n, 0, JOIN_STORES.indexOf(s.storeName()));
    } else {
      p = new StatePlacement(n, 0, 0);
    }
    if (p.partitionKeyFields() < 1) {
      throw new StrataRepartition.Refused(checkpoint + ": operator " + s.operatorId() + " ("
          + op + ") has no grouping key (a global aggregation): Spark keeps its state in "
          + "partition 0 whatever the count, which this job does not rewrite; to change this "
          + "query's partitions, start it on a new checkpoint");
    }
    return p;
  }

  /**
   * Refuses a store this job does not rewrite, before its schema is read.
   *
   * @throws StrataRepartition.Refused naming the operator or store and what the job covers
   */
  static void check(String checkpoint, StrataRepartition.Store s) {
    String op = s.operatorName();
    if (JOIN.equals(op) && !JOIN_STORES.contains(s.storeName())) {
      throw new StrataRepartition.Refused(checkpoint + ": operator " + s.operatorId() + " ("
          + op + ") keeps its state in store " + s.storeName() + " (join state format 3 or "
          + "later, column families in one store), which this job cannot repartition; it "
          + "covers joins in state formats 1 and 2 (" + JOIN_STORES + ")");
    }
    if (!WHOLE_KEY.contains(op) && !SESSION_WINDOW.equals(op) && !JOIN.equals(op)) {
      throw new StrataRepartition.Refused(checkpoint + ": operator " + s.operatorId() + " is "
          + op + ", whose state this job cannot repartition; it covers streaming "
          + "aggregations (stateStoreSave), dropDuplicates (dedupe, dedupeWithinWatermark), "
          + "flatMapGroupsWithState, session windows (" + SESSION_WINDOW + ") and stream-"
          + "stream joins (" + JOIN + ", state formats 1 and 2); to change this query's "
          + "partitions, start it on a new checkpoint");
    }
  }

  /** The leading {@link #partitionKeyFields} fields of {@code keySchema}: what is hashed. */
  StructType partitionKey(StructType keySchema) {
    StructField[] fields = keySchema.fields();
    return new StructType(Arrays.copyOf(fields, partitionKeyFields));
  }

  /** The key encoding the store was written with, which reading and writing it must use. */
  KeyStateEncoderSpec encoderSpec(StructType keySchema) {
    return prefixScanFields == 0 ? new NoPrefixKeyStateEncoderSpec(keySchema)
        : new PrefixKeyScanStateEncoderSpec(keySchema, prefixScanFields);
  }
}
