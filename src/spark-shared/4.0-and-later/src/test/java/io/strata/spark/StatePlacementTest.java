// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.execution.streaming.state.KeyStateEncoderSpec;
import org.apache.spark.sql.execution.streaming.state.NoPrefixKeyStateEncoderSpec;
import org.apache.spark.sql.execution.streaming.state.StateStoreColFamilySchema;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;
import org.junit.jupiter.api.Test;
import scala.Option;

/**
 * {@link StatePlacement}'s placement of transformWithState's column families, without Spark
 * running: each family's partition key is the grouping key, wherever its key keeps it, and a
 * user's state variable is placed by its type whatever its name ends with (issue 44's review: a
 * map named {@code seen_timestampToKey} was taken for a timer index and placed by its user key).
 */
class StatePlacementTest {
  private static final StructType GROUPING = new StructType().add("value", DataTypes.StringType);
  private static final StructType USER_KEY = new StructType().add("value", DataTypes.StringType);
  private static final StrataRepartition.Store STORE =
      new StrataRepartition.Store(0, "transformWithStateExec", "default");

  private static StateStoreColFamilySchema family(String name, StructType key) {
    KeyStateEncoderSpec spec = new NoPrefixKeyStateEncoderSpec(key);
    return new StateStoreColFamilySchema(name, (short) 0, key, (short) 0,
        new StructType().add("v", DataTypes.LongType), Option.apply(spec), Option.empty());
  }

  private static StatePlacement place(List<StateStoreColFamilySchema> families,
      Map<String, String> variables) throws Exception {
    StringBuilder json = new StringBuilder("{\"timeMode\":\"EventTime\",\"stateVariables\":[");
    String sep = "";
    for (Map.Entry<String, String> v : variables.entrySet()) {
      json.append(sep).append("{\"stateName\":\"").append(v.getKey())
          .append("\",\"stateVariableType\":\"").append(v.getValue())
          .append("\",\"ttlEnabled\":false}");
      sep = ",";
    }
    json.append("]}");
    return StatePlacement.transformWithState("ckpt", STORE, families,
        new ObjectMapper().readTree(json.toString()));
  }

  private static InternalRow grouping(String g) {
    return new GenericInternalRow(new Object[] {UTF8String.fromString(g)});
  }

  @Test
  void everyFamilyIsPlacedByItsGroupingKeyWhateverItsVariableIsNamed() throws Exception {
    StructType composite = new StructType().add("key", GROUPING).add("userKey", USER_KEY);
    StructType byKey = new StructType().add("key", GROUPING)
        .add("expiryTimestampMs", DataTypes.LongType);
    StructType byTime = new StructType().add("expiryTimestampMs", DataTypes.LongType)
        .add("key", GROUPING);
    List<StateStoreColFamilySchema> families = new ArrayList<>(List.of(
        family("seen_timestampToKey", composite), family("count_keyToTimestamp", GROUPING),
        family("$eventTimers_keyToTimestamp", byKey),
        family("$eventTimers_timestampToKey", byTime)));
    Map<String, String> variables = new TreeMap<>(Map.of("seen_timestampToKey", "MapState",
        "count_keyToTimestamp", "ValueState", "$eventTimers_keyToTimestamp", "TimerState"));
    StatePlacement p = place(families, variables);
    assertEquals(4, p.families().size());
    for (String g : List.of("k00", "k07", "k13", "k24", "")) {
      int expected = StatePlacement.of("ckpt", new StrataRepartition.Store(0, "dedupe",
          "default"), GROUPING, GROUPING).families().get(0).newPartition(grouping(g), 7);
      InternalRow user = new GenericInternalRow(new Object[] {UTF8String.fromString("u-" + g)});
      List<InternalRow> keys = List.of(
          new GenericInternalRow(new Object[] {grouping(g), user}),
          grouping(g),
          new GenericInternalRow(new Object[] {grouping(g), 1_000L}),
          new GenericInternalRow(new Object[] {2_000L, grouping(g)}));
      for (int i = 0; i < keys.size(); i++) {
        StatePlacement.Family f = p.families().get(i);
        assertEquals(expected, f.newPartition(keys.get(i), 7), f.name() + " of " + g);
      }
    }
  }

  @Test
  void aFamilyThatIsNeitherAVariableNorAnIndexIsRefusedByName() {
    StrataRepartition.Refused e = assertThrows(StrataRepartition.Refused.class,
        () -> place(List.of(family("mystery", GROUPING)), Map.of("count", "ValueState")));
    assertTrue(e.getMessage().contains("mystery"), e.getMessage());
  }
}
