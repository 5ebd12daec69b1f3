// SPDX-License-Identifier: Apache-2.0
package io.strata.bench;

import java.io.IOException;
import java.util.concurrent.TimeUnit;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.streaming.state.StateStore;
import org.apache.spark.sql.execution.streaming.state.StateStoreIterator;
import org.apache.spark.sql.execution.streaming.state.UnsafeRowPair;
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
import org.openjdk.jmh.infra.Blackhole;

/**
 * Single operations on the store of the version being built, after {@code getStore(latest)} on
 * a store pre-filled with {@code stateKeys} keys. Keys are drawn uniformly at random from the
 * existing ones. Each iteration opens the store and aborts it at the end, so the state every
 * iteration sees is the pre-filled version (writes of one iteration pile up within it: at most
 * {@code stateKeys} distinct keys).
 *
 * <p>The annotations are the full mode; the build's default {@code jmh.args} override them with
 * a quick mode.
 */
@State(Scope.Benchmark)
@Fork(1)
@Warmup(iterations = 3, time = 5)
@Measurement(iterations = 5, time = 10)
public class OperationsBenchmark {
  @Param({"strata-file", "strata-s3", "rocksdb-file", "rocksdb-changelog-file", "hdfs-file"})
  public String store;

  @Param({"100000", "1000000"})
  public int stateKeys;

  private BenchStore bench;
  private StateStore current;
  private long random = 0x9E3779B97F4A7C15L;
  private long counter;

  @Setup(Level.Trial)
  public void open() throws IOException {
    bench = BenchStore.open(StoreKind.of(store), stateKeys);
  }

  @Setup(Level.Iteration)
  public void beginVersion() {
    current = bench.begin();
  }

  @TearDown(Level.Iteration)
  public void abortVersion() {
    current.abort();
    current = null;
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

  /** xorshift64: a uniformly random existing key, a few ns. */
  private UnsafeRow randomKey() {
    long x = random;
    x ^= x << 13;
    x ^= x >>> 7;
    x ^= x << 17;
    random = x;
    return bench.key((int) Long.remainderUnsigned(x, bench.size()));
  }

  /** One put of an existing key (an update) into the version being built. */
  @Benchmark
  @BenchmarkMode(Mode.Throughput)
  @OutputTimeUnit(TimeUnit.SECONDS)
  public void put() {
    current.put(randomKey(), bench.value(++counter), BenchStore.CF);
  }

  /** One get of an existing key. */
  @Benchmark
  @BenchmarkMode(Mode.Throughput)
  @OutputTimeUnit(TimeUnit.SECONDS)
  public UnsafeRow get() {
    return current.get(randomKey(), BenchStore.CF);
  }

  /** One remove of an existing key from the version being built. */
  @Benchmark
  @BenchmarkMode(Mode.Throughput)
  @OutputTimeUnit(TimeUnit.SECONDS)
  public void remove() {
    current.remove(randomKey(), BenchStore.CF);
  }

  /** Counts rows seen by {@link #iterator}; JMH reports it as {@code iterator:rows} (rows/s). */
  @State(Scope.Thread)
  @AuxCounters(AuxCounters.Type.OPERATIONS)
  public static class ScannedRows {
    public long rows;

    @Setup(Level.Iteration)
    public void reset() {
      rows = 0;
    }
  }

  /** One full scan of the store (every key and value decoded); scans/s, and rows/s aside. */
  @Benchmark
  @BenchmarkMode(Mode.Throughput)
  @OutputTimeUnit(TimeUnit.SECONDS)
  public void iterator(ScannedRows scanned, Blackhole bh) {
    StateStoreIterator<UnsafeRowPair> it = current.iterator(BenchStore.CF);
    long n = 0;
    try {
      while (it.hasNext()) {
        UnsafeRowPair p = it.next();
        bh.consume(p.key().getInt(1));
        bh.consume(p.value().getInt(0));
        n++;
      }
    } finally {
      it.close();
    }
    if (n != bench.size()) {
      throw new IllegalStateException("scan of " + store + " saw " + n + " rows, expected "
          + bench.size());
    }
    scanned.rows += n;
  }
}
