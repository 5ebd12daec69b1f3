// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.config.StrataConf;
import java.nio.file.Path;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.execution.streaming.state.StateStore;
import org.apache.spark.sql.execution.streaming.state.StateStoreId;
import org.apache.spark.sql.internal.SQLConf;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Closing a provider on the thread (outside tasks; inside them, the task) that holds its store
 * does not wait for itself: Spark 3.5 closes providers it unloads on the thread of a task that
 * loads another store, while holding its lock on every loaded provider of the executor, and a
 * wait there would stall every stateful task of the executor for the lock timeout.
 */
class CloseByHolderTest {
  @TempDir Path tmp;

  @Test
  void closeByTheHolderReturnsAtOnceAndTheStoreFailsAfterwards() throws Exception {
    SQLConf sql = new SQLConf();
    sql.setConfString(StrataConf.PREFIX + "localDir", tmp.resolve("local").toString());
    sql.setConfString(StrataConf.LOCK_TIMEOUT.fullKey(), "30s");
    StrataStateStoreProvider p = new StrataStateStoreProvider();
    StoreApi.init(p, new StateStoreId(tmp.resolve("ckpt").toUri().toString(), 0, 0,
        StateStoreId.DEFAULT_STORE_NAME()), TestRows.KEY, TestRows.VALUE, sql,
        new Configuration());
    StateStore w = SparkApi.getStore(p, 0);
    StoreApi.put(w, TestRows.row(TestRows.KEY, 1), TestRows.row(TestRows.VALUE, 1));
    long start = System.nanoTime();
    p.close();
    long ms = (System.nanoTime() - start) / 1_000_000;
    assertTrue(ms < 10_000, "close() by the holder took " + ms + " ms (lock timeout 30 s)");
    assertThrows(Exception.class, w::commit, "the closed store cannot commit");
  }
}
