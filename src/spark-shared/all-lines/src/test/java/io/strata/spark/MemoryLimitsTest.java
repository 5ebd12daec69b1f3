// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.config.StrataConf;
import io.strata.engine.SharedMemory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.SparkConf;
import org.apache.spark.sql.execution.streaming.state.StateStore;
import org.apache.spark.sql.execution.streaming.state.StateStoreConf;
import org.apache.spark.sql.execution.streaming.state.StateStoreCustomMetric;
import org.apache.spark.sql.execution.streaming.state.StateStoreId;
import org.apache.spark.sql.execution.streaming.state.StateStoreMetrics;
import org.apache.spark.sql.internal.SQLConf;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import scala.Option;

/**
 * How memory.max=auto is derived from Spark's memory overhead settings, and what the provider
 * reports (memoryUsedBytes, block cache usage) and where it keeps local files.
 */
class MemoryLimitsTest {
  private static final long MIB = 1L << 20;

  @TempDir Path tmp;

  @Test
  void metricsReportMemoryAndTheBlockCacheShare() throws Exception {
    SQLConf sql = new SQLConf();
    Path local = tmp.resolve("local");
    sql.setConfString(StrataConf.PREFIX + "localDir", local.toString());
    StrataStateStoreProvider p = new StrataStateStoreProvider();
    StoreApi.init(p, new StateStoreId(tmp.resolve("ckpt").toUri().toString(), 0, 0,
        StateStoreId.DEFAULT_STORE_NAME()), TestRows.KEY, TestRows.VALUE, sql,
        new Configuration());
    try {
      StateStore w = SparkApi.getStore(p, 0);
      for (int i = 0; i < 100; i++) {
        StoreApi.put(w, TestRows.row(TestRows.KEY, i), TestRows.row(TestRows.VALUE, i));
      }
      w.commit();
      StateStore w2 = SparkApi.getStore(p, 1);
      // A read of committed state goes through the block cache.
      assertEquals(7, StoreApi.get(w2, TestRows.row(TestRows.KEY, 7)).getInt(0));
      w2.commit();
      StateStoreMetrics m = w2.metrics();
      StateStoreCustomMetric cache = StrataMetrics.BLOCK_CACHE_BYTES;
      long cacheBytes = (Long) m.customMetrics().get(cache).get();
      assertTrue(cacheBytes > 0, "block cache share " + cacheBytes);
      assertTrue(m.memoryUsedBytes() >= cacheBytes, "memoryUsedBytes " + m.memoryUsedBytes());
      assertTrue(p.supportedCustomMetrics().contains(cache));

      // The store's directory lives in this JVM's claimed directory under <localDir>/strata.
      try (Stream<Path> s = Files.list(local.resolve("strata"))) {
        List<String> names = s.map(x -> x.getFileName().toString()).sorted().toList();
        assertEquals(2, names.size(), names.toString());
        assertTrue(names.get(0).startsWith("jvm-") && names.get(1).equals(names.get(0) + ".lock"),
            names.toString());
      }
    } finally {
      p.close();
    }
  }

  @Test
  void autoIsHalfTheMemoryOverhead() {
    // Defaults: max(384m, 0.10 x 1g) = 384m overhead.
    assertEquals(192 * MIB, MemoryBudget.autoMemoryBytes(new SparkConf(false), false));
    // 0.10 x 8g = 819m overhead.
    assertEquals(409 * MIB + MIB / 2, MemoryBudget.autoMemoryBytes(
        new SparkConf(false).set("spark.executor.memory", "8g"), false));
    // An explicit overhead wins (MiB unless a unit is given).
    assertEquals(1024 * MIB, MemoryBudget.autoMemoryBytes(
        new SparkConf(false).set("spark.executor.memory", "8g")
            .set("spark.executor.memoryOverhead", "2048"), false));
    assertEquals(614 * MIB, MemoryBudget.autoMemoryBytes(
        new SparkConf(false).set("spark.executor.memory", "4g")
            .set("spark.executor.memoryOverheadFactor", "0.3"), false));
    // Local mode: tasks run in the driver, so the driver's settings apply.
    assertEquals(1024 * MIB, MemoryBudget.autoMemoryBytes(
        new SparkConf(false).set("spark.driver.memoryOverhead", "2g")
            .set("spark.executor.memoryOverhead", "8g"), true));
    // Never below 64 MiB.
    assertEquals(64 * MIB, MemoryBudget.autoMemoryBytes(
        new SparkConf(false).set("spark.executor.memoryOverhead", "100m"), false));
  }

  @Test
  void anExplicitCapAndTheUnboundedModeAreTakenAsSet() {
    StrataConf explicit = StrataConf.from(Map.of(StrataConf.PREFIX + "memory.max", "3g"),
        Map.of());
    assertEquals(new SharedMemory.Limits(true, 3L << 30),
        MemoryBudget.limits(explicit, null));
    StrataConf auto = StrataConf.from(Map.of(), Map.of());
    assertEquals(MemoryBudget.MEMORY_MAX_WITHOUT_SPARK,
        MemoryBudget.limits(auto, null).capacityBytes(), "outside Spark");
    StrataConf off = StrataConf.from(Map.of(StrataConf.PREFIX + "memory.bounded", "false"),
        Map.of());
    assertFalse(MemoryBudget.limits(off, null).bounded());
  }
}
