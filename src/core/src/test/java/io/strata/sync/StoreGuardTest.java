// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

/** The store's monitor as a type: its rule is checked, its one wait loop times out. */
class StoreGuardTest {
  @Test
  void theGuardAssertsItIsHeldAndWaitsWithATimeout() {
    StoreGuard guard = new StoreGuard();
    assertThrows(IllegalStateException.class, guard::assertHeld);
    synchronized (guard) {
      guard.assertHeld();
      assertEquals(StoreGuard.Wait.DONE, guard.awaitUntil(() -> true, 0));
      assertEquals(StoreGuard.Wait.TIMED_OUT, guard.awaitUntil(() -> false, 20));
    }
    assertEquals(Integer.valueOf(7), guard.locked(() -> 7));
  }
}
