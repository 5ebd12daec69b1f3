// SPDX-License-Identifier: Apache-2.0
package io.strata.engine;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rocksdb.Cache;
import org.rocksdb.MemoryUsageType;
import org.rocksdb.MemoryUtil;
import org.rocksdb.RocksDB;

/**
 * The shared block cache and write-buffer manager: many stores in one JVM stay within one cap,
 * and closing them frees it. Each test uses its own {@link SharedMemory} so stores other tests
 * leave open in the same JVM cannot interfere.
 */
class SharedMemoryTest {
  private static final long MIB = 1L << 20;

  @TempDir Path tmp;

  private static byte[] key(int i) {
    return String.format("key-%06d", i).getBytes(StandardCharsets.UTF_8);
  }

  @Test
  void twoHundredStoresStayWithinTheCapAndClosingFreesIt() throws Exception {
    int stores = 200;
    int keysPerStore = 500;
    long cap = 8 * MIB;
    SharedMemory memory = new SharedMemory();
    SharedMemory.Limits limits = new SharedMemory.Limits(true, cap);
    List<LocalStore> open = Collections.synchronizedList(new ArrayList<>());
    long dataBytes = (long) stores * keysPerStore * 200;
    long t0 = System.nanoTime();
    // Opening and loading is fsync-bound: 8 threads (each store used by one thread at a time).
    ExecutorService pool = Executors.newFixedThreadPool(8);
    try {
      List<Future<?>> loads = new ArrayList<>();
      for (int s = 0; s < stores; s++) {
        int id = s;
        loads.add(pool.submit(() -> {
          LocalStore store = LocalStore.open(tmp.resolve("db-" + id), 0, memory, limits);
          open.add(store); // closed in finally, whatever happens
          Random random = new Random(id);
          for (int i = 0; i < keysPerStore; i++) {
            byte[] v = new byte[200]; // random bytes: LZ4 cannot shrink them
            random.nextBytes(v);
            store.put(key(i), v);
          }
          store.commitPending(store.writeDelta(tmp.resolve("delta-" + id + ".sst")));
          return null;
        }));
      }
      for (Future<?> f : loads) {
        f.get();
      }
      long t1 = System.nanoTime();
      assertTrue(dataBytes > 2 * cap, "the data (" + dataBytes + " bytes) must exceed the cap");

      // Point reads of every 10th key touch every data block (about 12 keys per 16 KB block) and
      // fill the cache; scans (fill_cache=false) check the data without filling it.
      for (LocalStore store : open) {
        for (int i = 0; i < keysPerStore; i += 10) {
          assertNotNull(store.get(key(i)));
        }
        try (CloseableIterator<KeyValue> it = store.scan(new byte[0])) {
          int n = 0;
          while (it.hasNext()) {
            it.next();
            n++;
          }
          assertEquals(keysPerStore, n);
        }
      }

      long t2 = System.nanoTime();
      System.out.printf("open+load %d ms, reads %d ms%n", (t1 - t0) / 1_000_000,
          (t2 - t1) / 1_000_000);
      List<RocksDB> dbs = open.stream().map(LocalStore::db).toList();
      Cache cache = memory.liveCache();
      assertNotNull(cache, "one shared cache while stores are open");
      Map<MemoryUsageType, Long> m = MemoryUtil.getApproximateMemoryUsageByType(dbs, Set.of(cache));
      long cacheBytes = m.get(MemoryUsageType.kCacheTotal);
      long memTables = m.get(MemoryUsageType.kMemTableTotal);
      long tableReaders = m.get(MemoryUsageType.kTableReadersTotal);
      long total = cacheBytes + memTables + tableReaders;
      System.out.printf("200 stores, %d data bytes, cap %d: cache %d, memtables %d, table readers"
          + " %d, total %d (%.1f%% of cap)%n", dataBytes, cap, cacheBytes, memTables,
          tableReaders, total, 100.0 * total / cap);
      assertTrue(cacheBytes > cap / 2, "the reads filled the cache: " + cacheBytes);
      assertTrue(cacheBytes <= cap, "block cache " + cacheBytes + " within the cap " + cap);
      // Memtables are also charged to the cache (write-buffer manager), so the sum counts them
      // twice; table readers live outside it (their index and filter blocks are in the cache),
      // about 2 KB per SST file.
      assertTrue(total <= cap + cap / 10, "cache + memtables + table readers " + total
          + " within the cap " + cap + " (+10%)");
      assertTrue(cacheBytes + tableReaders <= cap + cap / 20, "cache + table readers "
          + (cacheBytes + tableReaders) + " within the cap " + cap + " (+5%)");
      SharedMemory.Usage u = memory.usage();
      assertEquals(stores, u.stores());
      assertEquals(cap, u.capacityBytes());
      // Nothing is pinned but the write-buffer manager's reservation for the (empty) memtables,
      // made in 256 KiB units: no block stays pinned once reads and scans are done.
      assertTrue(u.pinnedBytes() <= memTables + 256 * 1024, "pinned " + u.pinnedBytes());

      // Every store reports its share; the shares add up to the shared usage.
      long shares = 0;
      for (LocalStore store : open) {
        LocalStore.MemoryUsage mu = store.memoryUsage();
        shares += mu.blockCacheBytes();
        assertTrue(mu.totalBytes() >= mu.blockCacheBytes());
      }
      long usageNow = memory.usage().usageBytes();
      assertTrue(Math.abs(shares - usageNow) <= stores, shares + " vs " + usageNow);

      // Closing half the stores keeps the cache (still shared); closing all frees it.
      for (int s = 0; s < stores / 2; s++) {
        open.get(s).close();
      }
      assertEquals(stores / 2, memory.usage().stores());
      assertTrue(memory.usage().usageBytes() <= cap);
    } finally {
      pool.shutdownNow();
      pool.awaitTermination(1, java.util.concurrent.TimeUnit.MINUTES);
      for (LocalStore store : open) {
        store.close();
      }
    }
    assertEquals(SharedMemory.Usage.NONE, memory.usage(), "closing every store frees the cache");
    assertNull(memory.liveCache());
  }

  @Test
  void theFirstLimitsWinWhileStoresAreOpenAndNewOnesApplyAfterAllClose() throws Exception {
    SharedMemory memory = new SharedMemory();
    SharedMemory.Limits small = new SharedMemory.Limits(true, 4 * MIB);
    SharedMemory.Limits big = new SharedMemory.Limits(true, 16 * MIB);
    try (LocalStore a = LocalStore.open(tmp.resolve("a"), 0, memory, small);
        LocalStore b = LocalStore.open(tmp.resolve("b"), 0, memory, big)) {
      assertEquals(small, memory.liveLimits(), "the live cache cannot be resized");
      assertEquals(4 * MIB, memory.usage().capacityBytes());
      assertEquals(2, memory.usage().stores());
      a.put(key(1), key(1));
      a.commitPending(a.writeDelta(tmp.resolve("d.sst")));
      assertArrayEquals(key(1), a.get(key(1)));
    }
    assertNull(memory.liveLimits());
    try (LocalStore c = LocalStore.open(tmp.resolve("c"), 0, memory, big)) {
      assertEquals(big, memory.liveLimits());
    }
  }

  @Test
  void unboundedStoresHaveTheirOwnCaches() throws Exception {
    SharedMemory memory = new SharedMemory();
    SharedMemory.Limits unbounded = new SharedMemory.Limits(false, 0);
    try (LocalStore a = LocalStore.open(tmp.resolve("a"), 0, memory, unbounded);
        LocalStore b = LocalStore.open(tmp.resolve("b"), 0, memory, unbounded)) {
      assertNull(memory.liveCache(), "no shared cache");
      assertEquals(2, memory.usage().stores());
      assertEquals(2 * SharedMemory.UNBOUNDED_CACHE_BYTES, memory.usage().capacityBytes());
      a.put(key(1), key(1));
      a.commitPending(a.writeDelta(tmp.resolve("d.sst")));
      assertArrayEquals(key(1), a.get(key(1)));
      assertTrue(a.memoryUsage().blockCacheBytes() > 0, "a read block is in a's own cache");
      assertTrue(b.memoryUsage().blockCacheBytes() < a.memoryUsage().blockCacheBytes());
    }
    assertEquals(SharedMemory.Usage.NONE, memory.usage());
  }

  @Test
  void aFailedOpenGivesItsLeaseBack() throws Exception {
    SharedMemory memory = new SharedMemory();
    SharedMemory.Limits limits = new SharedMemory.Limits(true, 4 * MIB);
    try (LocalStore a = LocalStore.open(tmp.resolve("a"), 0, memory, limits)) {
      // The same directory is locked by a's RocksDB: the second open fails.
      org.junit.jupiter.api.Assertions.assertThrows(java.io.IOException.class,
          () -> LocalStore.open(tmp.resolve("a"), 0, memory, limits));
      assertEquals(1, memory.usage().stores());
    }
    assertEquals(SharedMemory.Usage.NONE, memory.usage());
  }
}
