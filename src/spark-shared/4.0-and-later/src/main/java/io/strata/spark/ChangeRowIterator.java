// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.util.NextIterator;
import scala.Enumeration;
import scala.Tuple4;

/**
 * The change-feed iterator over {@link ChangeRows} for the Spark lines whose {@code
 * SupportsFineGrainedReplay.getStateStoreChangeDataReader} returns a plain {@code NextIterator}
 * (4.0 and 4.2; 4.1 wants a {@code StateStoreChangeDataReader}: {@code StrataChangeDataReader}).
 *
 * <p>An I/O failure while iterating is thrown as Spark's {@code CANNOT_LOAD_STATE_STORE} error,
 * undeclared.
 */
final class ChangeRowIterator
    extends NextIterator<Tuple4<Enumeration.Value, UnsafeRow, UnsafeRow, Object>> {
  private final ChangeRows rows;

  ChangeRowIterator(ChangeRows rows) {
    this.rows = rows;
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
