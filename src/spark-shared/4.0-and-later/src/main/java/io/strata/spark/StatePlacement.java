// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.Murmur3HashFunction;
import org.apache.spark.sql.execution.streaming.state.KeyStateEncoderSpec;
import org.apache.spark.sql.execution.streaming.state.NoPrefixKeyStateEncoderSpec;
import org.apache.spark.sql.execution.streaming.state.PrefixKeyScanStateEncoderSpec;
import org.apache.spark.sql.execution.streaming.state.StateStoreColFamilySchema;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * Where {@link StrataRepartition} places one store's state keys, and how the store encodes them:
 * the decision of which part of a state key is the operator's partition key (the fields the
 * query's shuffle hashes), per operator, store and column family, as Spark 4.2's offline
 * repartitioning decides it ({@code StatePartitionKeyExtractorFactory} and {@code
 * TransformWithStatePartitionKeyExtractorFactory}):
 *
 * <ul>
 *   <li>streaming aggregations with a grouping key ({@code stateStoreSave}), {@code
 *       dropDuplicates} ({@code dedupe}, {@code dedupeWithinWatermark}) and {@code
 *       flatMapGroupsWithState} (and {@code applyInPandasWithState}): the whole key;
 *   <li>session windows ({@code sessionWindowStateStoreSaveExec}): every field but the last
 *       (the session's start), which are also the store's prefix-scan columns ({@code
 *       PrefixKeyScanStateEncoderSpec}, with which Strata encodes the key);
 *   <li>stream-stream joins ({@code symmetricHashJoin}) in join state formats 1 and 2 (four
 *       stores): {@code <side>-keyToNumValues} the whole key (the join key), {@code
 *       <side>-keyWithIndexToValue} every field but the last (the value's index);
 *   <li>{@code transformWithState} (one store, a column family per state variable and index;
 *       {@link #transformWithState}): the grouping key, which is the whole key of a value or
 *       list state, of a list's entry counter and of the TTL count and minimum indexes, the
 *       {@code key} struct of a map
 *       state's key and of a timer's key, the {@code elementKey} of a TTL index (for a map
 *       state, that element's {@code key}), and the {@code key} struct after the expiry of a
 *       timer's by-time index.
 * </ul>
 *
 * <p>Operators without a grouping key, a global aggregation ({@code stateStoreSave} with an
 * empty key) and a streaming limit ({@code globalLimit}), keep their state in partition 0
 * whatever the count (Spark gathers their input into one partition, {@code AllTuples}): their
 * store is rewritten as it is, in partition 0 alone ({@link #singlePartition}). Spark 4.2's
 * runner hashes their empty key like any other, which places it in partition {@code 42 mod M}.
 *
 * <p>Refused by name: joins in state format 3 or later (column families in one store).
 *
 * @param columnFamilies whether the store has column families (transformWithState), opened with
 *     {@code useColumnFamilies}
 * @param families the store's families: {@code default} alone without column families, and
 *     first with them if the store lists it
 * @param singlePartition whether the operator keeps its state in partition 0 alone, whatever the
 *     count (no grouping key): read from and written to partition 0 only
 * @param storeIndex the store's place in a partition's list of checkpoint ids in the commit log
 *     (checkpoint format 2): 0, or for a join {@code left-keyToNumValues}, {@code
 *     left-keyWithIndexToValue}, {@code right-keyToNumValues}, {@code right-keyWithIndexToValue}
 *     (Spark's {@code SymmetricHashJoinStateManager.allStateStoreNames} order)
 */
record StatePlacement(boolean columnFamilies, List<Family> families, boolean singlePartition,
    int storeIndex) implements Serializable {
  /** The operators whose partition key is their whole state key. */
  static final Set<String> WHOLE_KEY = Set.of("stateStoreSave", "dedupe",
      "dedupeWithinWatermark", "flatMapGroupsWithState", "applyInPandasWithState");
  static final String SESSION_WINDOW = "sessionWindowStateStoreSaveExec";
  static final String JOIN = "symmetricHashJoin";
  /** A streaming limit's operator: one count in partition 0. */
  static final String GLOBAL_LIMIT = "globalLimit";
  /** Spark's names of the transformWithState operators (JVM, Pandas, PySpark). */
  static final Set<String> TRANSFORM_WITH_STATE = Set.of("transformWithStateExec",
      "transformWithStateInPandasExec", "transformWithStateInPySparkExec");
  /**
   * transformWithState's timer index families by grouping key, by their exact names (a user's
   * state variable may end the same way; only names starting with {@code $} are Spark's).
   */
  static final Set<String> TIMER_BY_KEY = Set.of("$procTimers_keyToTimestamp",
      "$eventTimers_keyToTimestamp");
  /** transformWithState's timer index families by expiry time, by their exact names. */
  static final Set<String> TIMER_BY_TIME = Set.of("$procTimers_timestampToKey",
      "$eventTimers_timestampToKey");
  /** A join's stores in the order of its checkpoint ids (join state formats 1 and 2). */
  static final List<String> JOIN_STORES = List.of("left-keyToNumValues",
      "left-keyWithIndexToValue", "right-keyToNumValues", "right-keyWithIndexToValue");
  private static final long serialVersionUID = 2L;

  /**
   * One column family of a store and where its keys go.
   *
   * @param name the family's name ({@code default} in a store without column families)
   * @param keySchema its key's schema
   * @param valueSchema its value's schema
   * @param encoderSpec the key encoding it was written with, which reading and writing it use
   * @param multipleValues whether a key holds a list of values (a ListState's family)
   * @param keyPath the struct fields, outermost first, that lead from the key to the row whose
   *     leading {@code keyFields} fields are the partition key; empty for the key itself
   * @param keyFields how many leading fields of that row the query's shuffle hashes (0 for an
   *     operator without grouping key, whose rows all go to partition 0)
   */
  record Family(String name, StructType keySchema, StructType valueSchema,
      KeyStateEncoderSpec encoderSpec, boolean multipleValues, List<Integer> keyPath,
      int keyFields) implements Serializable {
    private static final long serialVersionUID = 1L;

    /**
     * The new partition of a state key, as Spark's shuffle places the row the key was grouped
     * by: {@code pmod(Murmur3Hash(fields, seed 42), count)} of the partition key's fields, hashed
     * in order with the running seed, as {@code Murmur3Hash} does for several grouping
     * expressions (a struct's fields hash the same way, so a grouping key kept as a struct
     * hashes as its fields).
     *
     * @param key a key of this family, as the store decodes it
     * @param count the new number of partitions
     * @return 0 to {@code count - 1}
     */
    int newPartition(InternalRow key, int count) {
      InternalRow row = key;
      StructType schema = keySchema;
      for (int i : keyPath) {
        StructType inner = (StructType) schema.fields()[i].dataType();
        row = row.getStruct(i, inner.length());
        schema = inner;
      }
      StructField[] fields = schema.fields();
      StructType hashed = schema;
      if (keyFields < fields.length) {
        // Spark's hash of a struct walks the row's fields, not the schema's: hash a row of the
        // leading fields alone.
        Object[] values = new Object[keyFields];
        StructField[] lead = new StructField[keyFields];
        for (int i = 0; i < keyFields; i++) {
          values[i] = row.get(i, fields[i].dataType());
          lead[i] = fields[i];
        }
        row = new GenericInternalRow(values);
        hashed = new StructType(lead);
      }
      int hash = (int) Murmur3HashFunction.hash(row, hashed, 42L);
      return ((hash % count) + count) % count;
    }
  }

  /**
   * The placement of store {@code s}'s keys, for a store without column families.
   *
   * @param checkpoint the checkpoint, for messages
   * @param s the store
   * @param keySchema its state key's schema
   * @param valueSchema its state value's schema
   * @throws StrataRepartition.Refused for an operator or store this job does not rewrite,
   *     naming it and what the job covers
   */
  static StatePlacement of(String checkpoint, StrataRepartition.Store s, StructType keySchema,
      StructType valueSchema) {
    check(checkpoint, s);
    int n = keySchema.length();
    String op = s.operatorName();
    int keyFields = n;
    int prefixScan = 0;
    int storeIndex = 0;
    if (TRANSFORM_WITH_STATE.contains(op)) {
      throw new IllegalArgumentException("transformWithState has column families: "
          + "StatePlacement.transformWithState places them");
    } else if (SESSION_WINDOW.equals(op)) {
      keyFields = n - 1;
      prefixScan = n - 1;
    } else if (JOIN.equals(op)) {
      keyFields = s.storeName().endsWith("-keyWithIndexToValue") ? n - 1 : n;
      storeIndex = JOIN_STORES.indexOf(s.storeName());
    }
    boolean single = GLOBAL_LIMIT.equals(op) || ("stateStoreSave".equals(op) && n == 0);
    if (single) {
      keyFields = 0;
    } else if (keyFields < 1) {
      throw new StrataRepartition.Refused(checkpoint + ": operator " + s.operatorId() + " ("
          + op + ", store " + s.storeName() + ") has a state key of " + n + " fields, too few "
          + "for its partition key: not a layout this job knows");
    }
    KeyStateEncoderSpec spec = prefixScan == 0 ? new NoPrefixKeyStateEncoderSpec(keySchema)
        : new PrefixKeyScanStateEncoderSpec(keySchema, prefixScan);
    return new StatePlacement(false, List.of(new Family("default", keySchema, valueSchema, spec,
        false, List.of(), keyFields)), single, storeIndex);
  }

  /**
   * The placement of a transformWithState store's keys, family by family, as Spark 4.2's
   * {@code TransformWithStatePartitionKeyExtractorFactory} places them.
   *
   * @param checkpoint the checkpoint, for messages
   * @param s the store
   * @param schemas the store's column families as the operator's state schema file lists them
   * @param properties the operator's properties ({@code operatorPropertiesJson} of its
   *     metadata: {@code stateVariables}, each with {@code stateName}, {@code
   *     stateVariableType} and {@code ttlEnabled})
   * @throws StrataRepartition.Refused for a family this job cannot place, naming it
   */
  static StatePlacement transformWithState(String checkpoint, StrataRepartition.Store s,
      List<StateStoreColFamilySchema> schemas, JsonNode properties) {
    Map<String, String> types = new TreeMap<>();
    for (JsonNode v : properties.path("stateVariables")) {
      types.put(v.path("stateName").asText(), v.path("stateVariableType").asText());
    }
    List<Family> families = new ArrayList<>();
    for (StateStoreColFamilySchema f : schemas) {
      String name = f.colFamilyName();
      StructType key = f.keySchema();
      KeyStateEncoderSpec spec = f.keyStateEncoderSpec().isDefined()
          ? f.keyStateEncoderSpec().get() : new NoPrefixKeyStateEncoderSpec(key);
      List<Integer> path;
      if ("default".equals(name)) { // the grouping key; Spark keeps nothing in it
        path = List.of();
      } else if (TIMER_BY_KEY.contains(name)) { // (key, expiryTimestampMs)
        path = List.of(0);
      } else if (TIMER_BY_TIME.contains(name)) { // (expiryTimestampMs, key)
        path = List.of(1);
      } else if (name.startsWith("$ttl_")) { // (expirationMs, elementKey)
        path = "MapState".equals(types.get(name.substring(5))) ? List.of(1, 0) : List.of(1);
      } else if (name.startsWith("$min_") || name.startsWith("$count_")
          || name.startsWith("$rowCounter_")) { // the grouping key
        path = List.of();
      } else if ("MapState".equals(types.get(name))) { // (key, userKey)
        path = List.of(0);
      } else if ("ValueState".equals(types.get(name)) || "ListState".equals(types.get(name))) {
        path = List.of();
      } else {
        throw new StrataRepartition.Refused(checkpoint + ": operator " + s.operatorId() + " ("
            + s.operatorName() + ") has column family " + name + ", which is not a state "
            + "variable (" + types + ") or one of their timer and TTL indexes: this job cannot "
            + "place its keys");
      }
      StructType partitionRow = key;
      for (int i : path) {
        partitionRow = (StructType) partitionRow.fields()[i].dataType();
      }
      boolean list = "ListState".equals(types.get(name));
      // default first: the store is opened with its schemas (the family every store has)
      families.add("default".equals(name) ? 0 : families.size(), new Family(name, key,
          f.valueSchema(), spec, list, path, partitionRow.length()));
    }
    if (families.isEmpty()) {
      throw new StrataRepartition.Refused(checkpoint + ": operator " + s.operatorId() + " ("
          + s.operatorName() + ") lists no column family in its state schema file");
    }
    return new StatePlacement(true, List.copyOf(families), false, 0);
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
    if (!WHOLE_KEY.contains(op) && !SESSION_WINDOW.equals(op) && !JOIN.equals(op)
        && !TRANSFORM_WITH_STATE.contains(op) && !GLOBAL_LIMIT.equals(op)) {
      throw new StrataRepartition.Refused(checkpoint + ": operator " + s.operatorId() + " is "
          + op + ", whose state this job cannot repartition; it covers streaming "
          + "aggregations (stateStoreSave), dropDuplicates (dedupe, dedupeWithinWatermark), "
          + "flatMapGroupsWithState, session windows (" + SESSION_WINDOW + "), stream-"
          + "stream joins (" + JOIN + ", state formats 1 and 2), transformWithState and "
          + "streaming limits (" + GLOBAL_LIMIT + "); to change this query's partitions, start "
          + "it on a new checkpoint");
    }
  }
}
