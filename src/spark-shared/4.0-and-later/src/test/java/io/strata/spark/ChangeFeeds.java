// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.Row;

/**
 * Reads the state data source's change feed ({@code readChangeFeed}) of a checkpoint for
 * comparisons (tests).
 */
final class ChangeFeeds {
  private ChangeFeeds() { }

  /**
   * The change feed's rows as sorted strings. With {@code lastPerKey}, only the last row of each
   * key in each batch and partition, in the feed's own order: Spark's changelog providers list
   * every write of a batch in write order, Strata's deltas hold a batch's last write per key
   * (docs/operations.md, "Reading state and changes"), so that is what the two have in common.
   * A row is {@code [batch_id, change_type, key..., value, partition_id]}; its identity is every
   * column but the change type and the value.
   */
  static List<String> read(SparkS3Harness h, String checkpoint, Map<String, String> options,
      boolean lastPerKey) {
    return read(h, checkpoint, options, lastPerKey, false);
  }

  /**
   * As {@link #read(SparkS3Harness, String, Map, boolean)}; with {@code strataFileSystem}, through
   * Strata's read-only file system instead of S3A ({@link SparkS3Harness#withStrataFileSystem}).
   */
  static List<String> read(SparkS3Harness h, String checkpoint, Map<String, String> options,
      boolean lastPerKey, boolean strataFileSystem) {
    java.util.function.Supplier<List<Row>> load = () -> h.spark.read().format("statestore")
        .option("readChangeFeed", "true").options(options).load(checkpoint).collectAsList();
    List<Row> read = strataFileSystem ? h.withStrataFileSystem(load) : h.withS3A(load);
    Map<String, String> last = new LinkedHashMap<>();
    List<String> rows = new ArrayList<>();
    for (Row r : read) {
      if (!lastPerKey) {
        rows.add(r.toString());
        continue;
      }
      StringBuilder id = new StringBuilder();
      for (int i = 0; i < r.length(); i++) {
        if (i != 1 && i != r.length() - 2) {
          id.append(r.get(i)).append('|');
        }
      }
      last.remove(id.toString()); // keep the order of the last write
      last.put(id.toString(), r.toString());
    }
    if (lastPerKey) {
      rows.addAll(last.values());
    }
    rows.sort(null);
    return rows;
  }
}
