// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.format.FileRef;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A restore widens its store's transfer pool so that all its GETs run at once, within {@link
 * TransferPools#MAX_WIDTH_FACTOR} times {@code transferThreads}, and only while it runs.
 */
class TransferPoolsTest {
  private static final StoreIdentity ID = new StoreIdentity(0, 1, "default", "mem://x");

  @Test
  void aWideningRunsThatManyTasksAtOnceThenTheSizeComesBack() throws Exception {
    try (TransferPools pools = new TransferPools(ID, 2, null)) {
      ThreadPoolExecutor pool = (ThreadPoolExecutor) pools.transfers();
      try (TransferPools.Widened w = pools.widenTransfers(100)) {
        assertEquals(2 * TransferPools.MAX_WIDTH_FACTOR, pool.getMaximumPoolSize(),
            "capped at " + TransferPools.MAX_WIDTH_FACTOR + " times transferThreads");
        int tasks = 2 * TransferPools.MAX_WIDTH_FACTOR;
        CountDownLatch allRunning = new CountDownLatch(tasks);
        CountDownLatch release = new CountDownLatch(1);
        List<Future<?>> running = new ArrayList<>();
        for (int i = 0; i < tasks; i++) {
          running.add(pool.submit(() -> {
            allRunning.countDown();
            release.await();
            return null;
          }));
        }
        assertTrue(allRunning.await(10, TimeUnit.SECONDS), "every task runs at once");
        release.countDown();
        for (Future<?> f : running) {
          f.get(10, TimeUnit.SECONDS);
        }
        TransferPools.Widened inner = pools.widenTransfers(3);
        inner.close();
        assertEquals(2 * TransferPools.MAX_WIDTH_FACTOR, pool.getMaximumPoolSize(),
            "an overlapping narrower widening ends without narrowing the wider one");
      }
      assertEquals(2, pool.getCorePoolSize());
      assertEquals(2, pool.getMaximumPoolSize(), "back to transferThreads once it closes");
      TransferPools.Widened again = pools.widenTransfers(1);
      assertEquals(2, pool.getMaximumPoolSize(), "never below transferThreads");
      again.close();
      again.close(); // idempotent
      assertEquals(2, pool.getMaximumPoolSize());
    }
  }

  @Test
  void aRestoreWidensForItsSmallGetsOnlyNotForTheLargePartsOfABigBase() {
    long mib = 1L << 20;
    List<FileRef> files = new ArrayList<>();
    files.add(new FileRef("sst/big.sst", 0, 64 * mib, 1)); // cut into parts of 1 MiB or more
    for (int i = 0; i < 19; i++) {
      files.add(new FileRef("v/" + i, 0, 12_000, i)); // the chain's deltas
    }
    DownloadPlan plan = DownloadPlan.of(files, 8);
    assertTrue(plan.gets().size() >= 19 + 8, plan.gets().size() + " GETs: the parts and deltas");
    assertEquals(19, Restorer.smallGets(plan), "one thread more per delta, none per large part");
  }
}
