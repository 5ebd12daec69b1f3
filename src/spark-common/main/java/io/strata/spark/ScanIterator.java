// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import io.strata.engine.CloseableIterator;
import io.strata.engine.KeyValue;
import java.util.function.Function;
import org.apache.spark.sql.execution.streaming.state.UnsafeRowPair;
import scala.collection.AbstractIterator;

/**
 * A scan of a store's local database as Spark's iterator of {@code UnsafeRowPair}s: one pair
 * object, reused for every element (as Spark's own providers do; callers copy what they keep).
 * The underlying RocksDB iterator closes itself when the scan is exhausted ({@link
 * CloseableIterator}); {@link #close()} ends it early (Spark 4.x's {@code StateStoreIterator}
 * calls it; Spark 3.5 never does, and the store closes what is left open when it is given back).
 */
final class ScanIterator extends AbstractIterator<UnsafeRowPair> implements AutoCloseable {
  private final CloseableIterator<KeyValue> it;
  private final Function<KeyValue, UnsafeRowPair> decode;

  /**
   * @param it the scan, already failing local read errors as the task's failure
   * @param decode turns each entry into the (reused) pair
   */
  ScanIterator(CloseableIterator<KeyValue> it, Function<KeyValue, UnsafeRowPair> decode) {
    this.it = it;
    this.decode = decode;
  }

  @Override
  public boolean hasNext() {
    return it.hasNext();
  }

  @Override
  public UnsafeRowPair next() {
    return decode.apply(it.next());
  }

  /** Closes the underlying RocksDB iterator; idempotent. */
  @Override
  public void close() {
    it.close();
  }
}
