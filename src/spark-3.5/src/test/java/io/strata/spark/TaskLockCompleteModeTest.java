// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.config.StrataConf;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.TaskContext$;
import org.apache.spark.TaskContextImpl;
import org.apache.spark.sql.execution.streaming.state.StateStore;
import org.apache.spark.sql.execution.streaming.state.StateStoreId;
import org.apache.spark.sql.internal.SQLConf;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The task lock in Spark 3.5's Complete mode: a task reads its
 * store after the commit (the lock is retaken), then the same task loads the store again (the
 * lock is taken over), then the task ends. The lock must end with exactly one permit.
 */
class TaskLockCompleteModeTest {
  private static final long TIMEOUT_MS = 400;

  @TempDir Path tmp;

  @AfterEach
  void noTask() {
    TaskContext$.MODULE$.unset();
  }

  private StrataStateStoreProvider provider() {
    SQLConf sql = new SQLConf();
    sql.setConfString(StrataConf.PREFIX + "localDir", tmp.resolve("local").toString());
    sql.setConfString(StrataConf.LOCK_TIMEOUT.fullKey(), TIMEOUT_MS + "ms");
    StrataStateStoreProvider p = new StrataStateStoreProvider();
    StoreApi.init(p, new StateStoreId(tmp.resolve("ckpt").toUri().toString(), 0, 0,
        StateStoreId.DEFAULT_STORE_NAME()), TestRows.KEY, TestRows.VALUE, sql,
        new Configuration());
    return p;
  }

  private static int drain(StateStore s) {
    int n = 0;
    var it = StoreApi.iterator(s);
    while (it.hasNext()) {
      it.next();
      n++;
    }
    return n;
  }

  private static Exception loadOnOtherThread(StrataStateStoreProvider p, long v)
      throws Exception {
    CompletableFuture<Exception> f = new CompletableFuture<>();
    new Thread(() -> {
      try {
        p.getStore(v).abort();
        f.complete(null);
      } catch (Exception e) {
        f.complete(e);
      }
    }).start();
    return f.get(30, TimeUnit.SECONDS);
  }

  @Test
  void readAfterCommitThenReloadInTheSameTaskThenTaskEnd() throws Exception {
    StrataStateStoreProvider p = provider();
    TaskContextImpl task = TaskContext$.MODULE$.empty();
    TaskContext$.MODULE$.setTaskContext(task);
    StateStore w = p.getStore(0);
    StoreApi.put(w, TestRows.row(TestRows.KEY, 1), TestRows.row(TestRows.VALUE, 1));
    assertEquals(1, w.commit());
    assertEquals(1, drain(w), "Complete mode reads the store after its commit");
    // While the task holds the lock for those reads, another caller waits.
    Exception other = loadOnOtherThread(p, 1);
    assertTrue(other != null && String.valueOf(other.getCause()).contains("another task"),
        "" + other);
    // The same task computes the partition again: it takes the lock over, no wait for itself.
    long start = System.nanoTime();
    StateStore again = p.getStore(1);
    assertTrue((System.nanoTime() - start) / 1_000_000 < TIMEOUT_MS, "took the lock over");
    assertThrows(Exception.class, () -> drain(w), "the first store can no longer be read");
    StoreApi.put(again, TestRows.row(TestRows.KEY, 2), TestRows.row(TestRows.VALUE, 2));
    assertEquals(2, again.commit());
    assertEquals(2, drain(again));
    task.markTaskCompleted(scala.Option.empty());
    TaskContext$.MODULE$.unset();
    // Exactly one permit after the task: this thread loads at once, another one then waits.
    StateStore next = p.getStore(2);
    Exception second = loadOnOtherThread(p, 2);
    assertTrue(second != null && String.valueOf(second.getCause()).contains("another task"),
        "two permits after the task? " + second);
    next.abort();
    assertEquals(null, loadOnOtherThread(p, 2), "the lock is free after the abort");
    p.close();
  }
}
