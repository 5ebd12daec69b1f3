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
  /** Whether the scan ran to its end (a revoked scan then still ends normally). */
  private boolean exhausted;
  /** Why the store took this scan away before its end; null while it may be read. */
  private volatile String revoked;

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
    if (exhausted) {
      return false;
    }
    checkNotRevoked();
    if (!it.hasNext()) {
      exhausted = true;
      return false;
    }
    return true;
  }

  @Override
  public UnsafeRowPair next() {
    checkNotRevoked();
    return decode.apply(it.next());
  }

  /**
   * Closes the scan under its reader: if it had not reached its end, every later {@code
   * hasNext}/{@code next} throws an {@code IllegalStateException} carrying {@code why}, so a
   * reader still on it fails instead of seeing the scan end early. Idempotent.
   *
   * @param why what took the scan away (names the store and version)
   */
  void revoke(String why) {
    revoked = why;
    it.close();
  }

  private void checkNotRevoked() {
    String why = revoked;
    if (why != null) {
      throw new IllegalStateException(why);
    }
  }

  /**
   * Whether a reader may still be on this scan: it neither reached its end nor was revoked
   * (Spark 3.5 never closes a scan, so a scan not read to its end counts as in use).
   */
  boolean unfinished() {
    return !exhausted && revoked == null;
  }

  /** Closes the underlying RocksDB iterator; idempotent. */
  @Override
  public void close() {
    it.close();
  }
}
