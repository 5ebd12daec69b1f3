// SPDX-License-Identifier: Apache-2.0
package io.strata.bench;

import java.io.IOException;
import java.nio.file.Path;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.apache.spark.sql.execution.streaming.state.StateStore;
import org.apache.spark.sql.execution.streaming.state.StateStoreProvider;
import org.openjdk.jmh.annotations.AuxCounters;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Restore from the S3 server: a fresh provider instance with an empty local directory (a new
 * executor) loads the newest version with {@code getStore(version)}, the Spark API call that
 * makes either provider download and open the state. The checkpoint was built by pre-filling
 * {@code stateKeys} keys, then {@code updateBatches} commits of {@code batchSize} updated keys,
 * then one {@code doMaintenance()} (background snapshot upload, as Spark's maintenance thread
 * would do it) and {@code updateBatches} more commits: so Strata restores a base snapshot plus
 * SST deltas, Spark's RocksDB provider a snapshot plus (with changelog checkpointing) changelog
 * files it replays row by row.
 *
 * <p>Reported: restores per second (primary) and {@code restoredBytes} per second, where a
 * restore counts the logical state size, {@code stateKeys} × (key + value UnsafeRow bytes),
 * the same for every provider; divide by 10^6 for MB/s. Opening the instance before and closing
 * it after each restore are not measured.
 */
@State(Scope.Benchmark)
@Fork(1)
@Warmup(iterations = 2, time = 5)
@Measurement(iterations = 5, time = 10)
public class RestoreBenchmark {
  @Param({"strata-s3", "rocksdb-s3", "rocksdb-changelog-s3"})
  public String store;

  @Param({"100000", "1000000"})
  public int stateKeys;

  @Param({"10000"})
  public int batchSize;

  @Param({"10"})
  public int updateBatches;

  private BenchStore bench;
  private StateStoreProvider replica;
  private Path replicaDir;
  private long logicalBytes;

  /** Counts restored logical bytes; JMH reports them as {@code restoredBytes} per second. */
  @State(Scope.Thread)
  @AuxCounters(AuxCounters.Type.OPERATIONS)
  public static class Restored {
    public long restoredBytes;

    @Setup(Level.Iteration)
    public void reset() {
      restoredBytes = 0;
    }
  }

  @Setup(Level.Trial)
  public void open() throws IOException {
    StoreKind kind = StoreKind.of(store);
    if (!kind.isS3()) {
      throw new IllegalArgumentException("RestoreBenchmark restores from the S3 server: store "
          + "must be one of strata-s3, rocksdb-s3, rocksdb-changelog-s3, was " + store);
    }
    bench = BenchStore.open(kind, stateKeys);
    int next = 0;
    long counter = 0;
    for (int round = 0; round < 2; round++) {
      for (int b = 0; b < updateBatches; b++) {
        StateStore s = bench.begin();
        for (int i = 0; i < batchSize; i++) {
          s.put(bench.key(next), bench.value(++counter), BenchStore.CF);
          next = (next + 1) % bench.size();
        }
        bench.commit(s);
      }
      if (round == 0) {
        bench.maintenance();
      }
    }
    logicalBytes = (long) stateKeys * (bench.key(0).getSizeInBytes()
        + bench.value(0).getSizeInBytes());
  }

  @Setup(Level.Invocation)
  public void newExecutor() {
    replicaDir = bench.dir().resolve("replica-" + UUID.randomUUID());
    replica = bench.openReplica(replicaDir);
  }

  @TearDown(Level.Invocation)
  public void closeExecutor() {
    try {
      replica.close();
    } finally {
      replica = null;
      BenchStore.deleteRecursively(replicaDir); // Strata leaves its local directory in place
    }
  }

  @TearDown(Level.Trial)
  public void close() {
    bench.close();
  }

  /** Loads the newest version on the fresh instance; checks one key; gives the store back. */
  @Benchmark
  @BenchmarkMode(Mode.Throughput)
  @OutputTimeUnit(TimeUnit.SECONDS)
  public Object restore(Restored restored) {
    StateStore s = replica.getStore(bench.version(), scala.Option.empty());
    try {
      Object v = s.get(bench.key(bench.size() - 1), BenchStore.CF);
      if (v == null) {
        throw new IllegalStateException("restored " + store + " version " + bench.version()
            + " lacks key " + (bench.size() - 1));
      }
      restored.restoredBytes += logicalBytes;
      return v;
    } finally {
      s.abort();
    }
  }
}
