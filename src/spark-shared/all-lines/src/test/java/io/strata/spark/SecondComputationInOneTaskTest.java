// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.config.StrataConf;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.TaskContext$;
import org.apache.spark.TaskContextImpl;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.streaming.state.ReadStateStore;
import org.apache.spark.sql.execution.streaming.state.StateStore;
import org.apache.spark.sql.execution.streaming.state.StateStoreId;
import org.apache.spark.sql.internal.SQLConf;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import scala.Option;

/**
 * Issue 43 part 2: one task computes the same state partition twice at once (Spark's {@code
 * rdd.zip} of a batch with itself). Each computation must read the version it loaded, never the
 * other's uncommitted writes (Spark's HDFS provider gives each load its own copy): the second
 * computation's loads get a side store, with a local database of its own. Told apart from a
 * caller's legitimate second request of the store it holds: a read store turned write store
 * (Spark 4.0's second {@code getStore}) and the state data source's write store that only
 * declares column families before its read of the same version.
 */
class SecondComputationInOneTaskTest {
  @TempDir Path tmp;

  @AfterEach
  void noTask() {
    TaskContext$.MODULE$.unset();
  }

  private StrataStateStoreProvider provider() {
    SQLConf sql = new SQLConf();
    sql.setConfString(StrataConf.PREFIX + "localDir", tmp.resolve("local").toString());
    sql.setConfString(StrataConf.LOCK_TIMEOUT.fullKey(), "400ms");
    StrataStateStoreProvider p = new StrataStateStoreProvider();
    StoreApi.init(p, new StateStoreId(tmp.resolve("ckpt").toUri().toString(), 0, 0,
        StateStoreId.DEFAULT_STORE_NAME()), TestRows.KEY, TestRows.VALUE, sql,
        new Configuration());
    return p;
  }

  private static StrataStoreBase write(StrataProviderBase p, long version) {
    return p.openHandle(version, Option.empty(), false);
  }

  private static int count(StrataStoreBase s) {
    UnsafeRow v = StoreApi.get((ReadStateStore) s, TestRows.row(TestRows.KEY, 1));
    return v == null ? 0 : v.getInt(0);
  }

  /** One computation's step: reads the key's count and writes it plus one. */
  private static void increment(StrataStoreBase s) {
    StoreApi.put((StateStore) s, TestRows.row(TestRows.KEY, 1),
        TestRows.row(TestRows.VALUE, count(s) + 1));
  }

  /** Version 1 with count 1. */
  private static void firstBatch(StrataProviderBase p) {
    StrataStoreBase w = write(p, 0);
    increment(w);
    assertEquals(1, w.commit());
  }

  private long storeDirs() throws java.io.IOException {
    Path base = tmp.resolve("local").resolve("strata");
    try (Stream<Path> s = Files.walk(base, 2)) {
      return s.filter(d -> d.getFileName().toString().startsWith("0-0-default-")).count();
    }
  }

  @Test
  void readThenWriteComputedTwiceAtOnceCountsOnce() throws Exception {
    StrataStateStoreProvider p = provider();
    firstBatch(p);
    TaskContextImpl task = TaskContext$.MODULE$.empty();
    TaskContext$.MODULE$.setTaskContext(task);
    StrataStoreBase r1 = p.readHandle(1, Option.empty());
    StrataStoreBase w1 = write(p, 1);
    assertSame(r1, w1, "the first computation's read store becomes its write store");
    StrataStoreBase r2 = p.readHandle(1, Option.empty());
    assertNotSame(w1, r2, "the second computation's read gets a store of its own");
    assertTrue(r2.isSide(), r2.toString());
    StrataStoreBase w2 = write(p, 1);
    assertSame(r2, w2, "the second computation's read store becomes its write store");
    increment(w1); // interleaved, as zip pulls from both computations in turn
    increment(w2);
    assertEquals(2, count(w1));
    assertEquals(2, count(w2), "the second computation does not see the first's write");
    assertEquals(2, w1.commit());
    assertEquals(2, w2.commit());
    assertEquals(2, storeDirs(), "the side store's database is open until the task ends");
    task.markTaskCompleted(Option.empty());
    TaskContext$.MODULE$.unset();
    assertEquals(1, storeDirs(), "the side store's database is closed at task end");
    StrataStoreBase next = p.readHandle(2, Option.empty());
    assertEquals(2, count(next), "version 2 counts the batch once, not twice");
    next.release();
    p.close();
  }

  @Test
  void aSecondDirectWriteLoadGetsItsOwnStore() throws Exception {
    StrataStateStoreProvider p = provider();
    firstBatch(p);
    TaskContextImpl task = TaskContext$.MODULE$.empty();
    TaskContext$.MODULE$.setTaskContext(task);
    StrataStoreBase w1 = write(p, 1);
    increment(w1);
    StrataStoreBase w2 = write(p, 1); // deduplication's shape: getStore, no read store first
    assertNotSame(w1, w2);
    increment(w2);
    assertEquals(2, w2.commit());
    assertEquals(2, w1.commit());
    task.markTaskCompleted(Option.empty());
    TaskContext$.MODULE$.unset();
    StrataStoreBase next = p.readHandle(2, Option.empty());
    assertEquals(2, count(next));
    next.release();
    p.close();
  }

  @Test
  void theStateDataSourcesWriteThenReadSharesTheStore() {
    StrataStateStoreProvider p = provider();
    firstBatch(p);
    TaskContextImpl task = TaskContext$.MODULE$.empty();
    TaskContext$.MODULE$.setTaskContext(task);
    StrataStoreBase w = write(p, 1); // declares column families, changes nothing
    StrataStoreBase r = p.readHandle(1, Option.empty());
    assertSame(w, r, "a read of the version the unchanged write store holds is served by it");
    assertEquals(1, count(r));
    task.markTaskCompleted(Option.empty());
    TaskContext$.MODULE$.unset();
    p.close();
  }
}
