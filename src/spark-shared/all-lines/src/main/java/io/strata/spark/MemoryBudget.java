// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import io.strata.config.StrataConf;
import io.strata.engine.SharedMemory;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkEnv;

/**
 * The native memory budget of this JVM's local stores ({@code memory.max}, {@code
 * memory.bounded}), derived from Spark's memory settings when {@code memory.max=auto}. Read by
 * every provider at {@code init}; pure functions of the settings, no state.
 */
final class MemoryBudget {
  private MemoryBudget() { }

  /** Cap used for {@code memory.max=auto} outside Spark (no SparkEnv), bytes. */
  static final long MEMORY_MAX_WITHOUT_SPARK = 512L << 20;
  /** Lower bound of the {@code auto} cap, bytes ({@link StrataConf#MEMORY_AUTO_MIN_BYTES}). */
  static final long MEMORY_AUTO_MIN = StrataConf.MEMORY_AUTO_MIN_BYTES;

  /**
   * The native memory limits of this JVM's local stores: {@code memory.max} when set, else
   * ({@code auto}) half of the memory overhead Spark budgets for this JVM outside the heap, which
   * is where RocksDB's native memory lives in a YARN or Kubernetes container.
   *
   * @param conf Strata's settings ({@code memory.max}, {@code memory.bounded})
   * @param env the executor's SparkEnv, or null outside Spark ({@value #MEMORY_MAX_WITHOUT_SPARK}
   *     bytes then)
   * @return the limits every local store of this JVM shares
   */
  static SharedMemory.Limits limits(StrataConf conf, SparkEnv env) {
    long cap;
    if (conf.memoryMaxBytes().isPresent()) {
      cap = conf.memoryMaxBytes().get();
    } else if (env == null) {
      cap = MEMORY_MAX_WITHOUT_SPARK;
    } else {
      // "driver" is SparkContext.DRIVER_IDENTIFIER: local mode, tasks run in the driver JVM.
      cap = autoMemoryBytes(env.conf(), "driver".equals(env.executorId()));
    }
    return new SharedMemory.Limits(conf.memoryBounded(), cap);
  }

  /**
   * Half of the JVM's memory overhead, at least {@value #MEMORY_AUTO_MIN} bytes. The overhead is
   * Spark's: {@code spark.<role>.memoryOverhead} if set, else {@code
   * max(spark.<role>.minMemoryOverhead (384m), spark.<role>.memoryOverheadFactor (0.10) *
   * spark.<role>.memory (1g))}, with role {@code driver} in local mode (tasks run in the driver)
   * and {@code executor} otherwise. The other half stays for the JVM's own native memory.
   *
   * @param sc Spark's configuration
   * @param driver whether tasks run in the driver JVM (local mode)
   * @return the cap, bytes
   */
  static long autoMemoryBytes(SparkConf sc, boolean driver) {
    String role = driver ? "spark.driver." : "spark.executor.";
    long overheadMiB;
    if (sc.contains(role + "memoryOverhead")) {
      overheadMiB = sc.getSizeAsMb(role + "memoryOverhead");
    } else {
      long heapMiB = sc.getSizeAsMb(role + "memory", "1g");
      double factor = sc.getDouble(role + "memoryOverheadFactor", 0.10);
      long minMiB = sc.getSizeAsMb(role + "minMemoryOverhead", "384m");
      overheadMiB = Math.max(minMiB, (long) (factor * heapMiB));
    }
    return Math.max(MEMORY_AUTO_MIN, (overheadMiB << 20) / 2);
  }
}
