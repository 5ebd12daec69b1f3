// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.engine.CloseableIterator;
import io.strata.engine.KeyValue;
import java.util.Iterator;
import java.util.List;
import org.apache.spark.sql.execution.streaming.state.UnsafeRowPair;
import org.junit.jupiter.api.Test;

/**
 * A scan the store revokes (the same task loaded the store again on Spark 3.5) fails a reader
 * still on it, and a scan already read to its end stays ended: it never looks as if it ended
 * early.
 */
class ScanIteratorTest {
  private static final class Entries implements CloseableIterator<KeyValue> {
    private final Iterator<KeyValue> it;
    int closes;

    Entries(int n) {
      KeyValue[] kvs = new KeyValue[n];
      for (int i = 0; i < n; i++) {
        kvs[i] = new KeyValue(new byte[] {(byte) i}, new byte[] {(byte) i});
      }
      it = List.of(kvs).iterator();
    }

    @Override
    public boolean hasNext() {
      return it.hasNext();
    }

    @Override
    public KeyValue next() {
      return it.next();
    }

    @Override
    public void close() {
      closes++;
    }
  }

  private static ScanIterator scan(Entries e) {
    UnsafeRowPair pair = new UnsafeRowPair(null, null);
    return new ScanIterator(e, kv -> pair);
  }

  @Test
  void aRevokedScanNotReadToItsEndFailsWithTheReason() {
    Entries e = new Entries(3);
    ScanIterator it = scan(e);
    assertTrue(it.hasNext());
    it.next();
    it.revoke("store X version 4 was loaded again");
    assertEquals(1, e.closes, "the native scan is closed");
    IllegalStateException hasNext = assertThrows(IllegalStateException.class, it::hasNext);
    assertEquals("store X version 4 was loaded again", hasNext.getMessage());
    assertThrows(IllegalStateException.class, it::next);
  }

  @Test
  void aRevokedScanThatHadEndedStaysEnded() {
    Entries e = new Entries(2);
    ScanIterator it = scan(e);
    it.next();
    it.next();
    assertFalse(it.hasNext());
    it.revoke("loaded again");
    assertFalse(it.hasNext(), "ended before it was revoked: ends, no error");
    assertFalse(it.hasNext());
  }
}
