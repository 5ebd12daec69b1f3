// SPDX-License-Identifier: Apache-2.0
package io.strata.bench;

import java.io.IOException;
import java.util.concurrent.TimeUnit;
import org.apache.spark.sql.execution.streaming.state.StateStore;
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
 * One micro-batch's state work: {@code getStore(latest)}, {@code batchSize} puts of existing keys
 * with new values, {@code commit()}. Each commit updates the next {@code batchSize} keys of the
 * pre-filled {@code stateKeys} (wrapping around), so every version changes distinct keys and the
 * number of keys stays {@code stateKeys}. Maintenance ({@code doMaintenance}, as Spark's
 * background thread would run it) runs between iterations, not measured.
 */
@State(Scope.Benchmark)
@Fork(1)
@Warmup(iterations = 3, time = 5)
@Measurement(iterations = 5, time = 10)
public class CommitBenchmark {
  @Param({"strata-file", "strata-s3", "rocksdb-file", "rocksdb-changelog-file", "hdfs-file"})
  public String store;

  @Param({"100000", "1000000"})
  public int stateKeys;

  @Param({"10000"})
  public int batchSize;

  private BenchStore bench;
  private int next;
  private long counter;

  @Setup(Level.Trial)
  public void open() throws IOException {
    if (batchSize < 1) {
      throw new IllegalArgumentException("batchSize must be >= 1, was " + batchSize);
    }
    bench = BenchStore.open(StoreKind.of(store), stateKeys);
  }

  @TearDown(Level.Iteration)
  public void maintenance() {
    bench.maintenance();
  }

  @TearDown(Level.Trial)
  public void close() {
    try {
      bench.verify();
    } finally {
      bench.close();
    }
  }

  /** Load, {@code batchSize} puts, commit; returns the committed version. */
  @Benchmark
  @BenchmarkMode(Mode.AverageTime)
  @OutputTimeUnit(TimeUnit.MILLISECONDS)
  public long commitBatch() {
    StateStore s = bench.begin();
    try {
      int n = bench.size();
      for (int i = 0; i < batchSize; i++) {
        s.put(bench.key(next), bench.value(++counter), BenchStore.CF);
        next = next + 1 == n ? 0 : next + 1;
      }
      return bench.commit(s);
    } finally {
      if (!s.hasCommitted()) {
        s.abort(); // gives the store back if a put or the commit failed
      }
    }
  }
}
