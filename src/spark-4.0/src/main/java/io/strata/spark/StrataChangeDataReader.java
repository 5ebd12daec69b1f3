// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import java.io.IOException;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.util.NextIterator;
import scala.Enumeration;
import scala.Tuple4;

/**
 * Spark 4.0's change-feed iterator over {@link ChangeRows} (Spark 4.0's {@code
 * SupportsFineGrainedReplay.getStateStoreChangeDataReader} returns a plain {@code NextIterator}).
 *
 * <p>An I/O failure while iterating is thrown as Spark's {@code CANNOT_LOAD_STATE_STORE} error,
 * undeclared.
 */
final class StrataChangeDataReader
    extends NextIterator<Tuple4<Enumeration.Value, UnsafeRow, UnsafeRow, Object>> {
  private final ChangeRows rows;

  StrataChangeDataReader(ChangeRows rows) {
    this.rows = rows;
  }

  @Override
  public Tuple4<Enumeration.Value, UnsafeRow, UnsafeRow, Object> getNext() {
    Tuple4<Enumeration.Value, UnsafeRow, UnsafeRow, Object> next;
    try {
      next = rows.next();
    } catch (IOException e) {
      throw SparkErrors.cannotLoad(e);
    }
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
