// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import java.nio.file.Path;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.streaming.state.NoPrefixKeyStateEncoderSpec;
import org.apache.spark.sql.execution.streaming.state.ReadStateStore;
import org.apache.spark.sql.execution.streaming.state.StateStore;
import org.apache.spark.sql.execution.streaming.state.StateStoreConf;
import org.apache.spark.sql.execution.streaming.state.StateStoreId;
import org.apache.spark.sql.execution.streaming.state.StateStoreIterator;
import org.apache.spark.sql.execution.streaming.state.UnsafeRowPair;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import scala.Option;

/**
 * Spark's maintenance thread may close a provider while a task still reads it (the provider
 * closes anyway after lockAcquireTimeout). The reads must then fail with a clear exception, never
 * crash the JVM in native code (a use-after-free found by an adversarial review).
 */
class CloseWhileReadingTest {
  @TempDir Path tmp;

  static final StructType KEY = TestRows.KEY;
  static final StructType VALUE = TestRows.VALUE;

  static UnsafeRow row(StructType t, int i) {
    return TestRows.row(t, i);
  }

  @Test
  void readWhileClosing() throws Exception {
    int rounds = Integer.getInteger("rounds", 60);
    AtomicLong errors = new AtomicLong();
    AtomicReference<Throwable> sample = new AtomicReference<>();
    for (int round = 0; round < rounds; round++) {
      SQLConf sql = new SQLConf();
      sql.setConfString("spark.sql.streaming.stateStore.strata.localDir",
          tmp.resolve("l" + round).toString());
      sql.setConfString("spark.sql.streaming.stateStore.strata.lockAcquireTimeout", "1ms");
      StrataStateStoreProvider p = new StrataStateStoreProvider();
      p.init(new StateStoreId(tmp.resolve("ckpt" + round).toUri().toString(), 0, 0,
          StateStoreId.DEFAULT_STORE_NAME()), KEY, VALUE, new NoPrefixKeyStateEncoderSpec(KEY),
          false, new StateStoreConf(sql, Scala.map(java.util.Map.of())), new Configuration(),
          false, Option.empty());
      StateStore w = SparkApi.getStore(p, 0);
      for (int i = 0; i < 200; i++) {
        w.put(row(KEY, i), row(VALUE, i), "default");
      }
      w.commit();
      ReadStateStore r = p.getReadStore(1, Option.empty());
      UnsafeRow k = row(KEY, 7);
      Thread task = new Thread(() -> {
        try {
          while (true) {
            r.get(k, "default");
            StateStoreIterator<UnsafeRowPair> it = r.iterator("default");
            while (it.hasNext()) {
              it.next();
            }
            ((StateStore) r).metrics();
          }
        } catch (Throwable t) {
          errors.incrementAndGet();
          if (!(t instanceof IllegalStateException || t instanceof org.apache.spark.SparkException
              || t.getCause() instanceof IllegalStateException)) {
            sample.compareAndSet(null, t);
          }
        }
      });
      task.start();
      Thread.sleep(ThreadLocalRandom.current().nextInt(3));
      p.close();
      task.join(5000);
    }
    // Reaching this line means no native crash; every failure the readers saw was a clear one.
    org.junit.jupiter.api.Assertions.assertNull(sample.get(), "unexpected failure kind");
    org.junit.jupiter.api.Assertions.assertTrue(errors.get() > 0, "readers saw the close");
  }
}
