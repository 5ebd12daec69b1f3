// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.streaming.state.StateStoreChangeDataReader;
import scala.Enumeration;
import scala.Option;
import scala.Tuple4;

/**
 * Spark 4.1's change-feed iterator over {@link ChangeRows}: Spark 4.1's {@code
 * SupportsFineGrainedReplay.getStateStoreChangeDataReader} returns a {@code
 * StateStoreChangeDataReader}, whose changelog-file machinery Strata does not use (its deltas are
 * in S3, read by {@link ChangeRows}); the superclass gets no file manager or codec, and none of its
 * file methods is called.
 *
 * <p>An I/O failure while iterating is thrown as Spark's {@code CANNOT_LOAD_STATE_STORE} error,
 * undeclared.
 */
final class StrataChangeDataReader extends StateStoreChangeDataReader {
  private final ChangeRows rows;

  StrataChangeDataReader(ChangeRows rows, Path stateLocation, long startVersion, long endVersion,
      Option<String> family) {
    super(null, stateLocation, startVersion, endVersion, null, family);
    this.rows = rows;
  }

  @Override
  public String changelogSuffix() {
    return "svo";
  }

  @Override
  public Tuple4<Enumeration.Value, UnsafeRow, UnsafeRow, Object> getNext() {
    Tuple4<Enumeration.Value, UnsafeRow, UnsafeRow, Object> next = rows.nextForSpark();
    if (next == null) {
      finished_$eq(true);
    }
    return next;
  }

  @Override
  public void close() {
    rows.close();
  }
}
