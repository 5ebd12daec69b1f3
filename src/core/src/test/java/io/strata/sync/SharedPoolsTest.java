// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The owner of the pools stores share: leases, and who stops the threads. */
class SharedPoolsTest {
  @Test
  void leasesShareOnePoolAndTheLastOneStopsIt() throws Exception {
    try (SharedPools owner = new SharedPools()) {
      SharedPools.Lease a = owner.lease();
      SharedPools.Lease b = owner.lease();
      assertSame(a.ingest(), b.ingest(), "one ingest pool for both leases");
      assertSame(a.commitSnapshots(), b.commitSnapshots(), "one commit-snapshot pool");
      assertEquals(2, owner.leases());
      a.close();
      a.close(); // idempotent: still one lease
      assertEquals(1, owner.leases());
      assertFalse(b.ingest().isShutdown(), "a lease is still held");
      ExecutorService ingest = b.ingest();
      b.close();
      assertEquals(0, owner.leases());
      assertTrue(ingest.isShutdown(), "the last lease stopped the pool");
      assertTrue(ingest.awaitTermination(10, TimeUnit.SECONDS));
      SharedPools.Lease c = owner.lease();
      assertFalse(c.ingest().isShutdown(), "a new lease starts new pools");
      c.close();
    }
  }

  @Test
  void closingTheOwnerStopsThePoolsAndRefusesLeases() {
    SharedPools owner = new SharedPools();
    SharedPools.Lease held = owner.lease();
    owner.close();
    assertTrue(held.ingest().isShutdown(), "the owner's close stopped the ingest pool");
    assertTrue(held.commitSnapshots().isShutdown(), "and the commit-snapshot pool");
    assertThrows(IllegalStateException.class, owner::lease);
    held.close(); // harmless after the owner's close
    owner.close(); // idempotent
  }

  @Test
  void atMostFourCommitSnapshotsRunAtOnce() {
    try (SharedPools owner = new SharedPools(); SharedPools.Lease l = owner.lease()) {
      java.util.concurrent.ThreadPoolExecutor p =
          (java.util.concurrent.ThreadPoolExecutor) l.commitSnapshots();
      assertEquals(SharedPools.COMMIT_SNAPSHOTS_AT_ONCE, p.getMaximumPoolSize());
      assertEquals(4, SharedPools.COMMIT_SNAPSHOTS_AT_ONCE);
    }
  }
}
