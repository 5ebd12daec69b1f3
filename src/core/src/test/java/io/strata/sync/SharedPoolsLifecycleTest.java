// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.engine.SharedMemory;
import io.strata.objectstore.ObjectStores;
import io.strata.objectstore.RequestListener;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * SharedPools' lease life cycle: the last lease ends
 * while a commit snapshot was just queued; a new lease then restarts the pools; an owner closed
 * under open stores. Nothing may hang, throw, or lose a committed version.
 */
class SharedPoolsLifecycleTest {
  private static final int INTERVAL = 2;
  @TempDir Path tmp;
  private int dirs;

  private static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private SyncedStore open(String root, SharedPools owner) {
    StoreSettings s = new StoreSettings(INTERVAL, 2, 0, false, SharedMemory.Limits.DEFAULT,
        GcSettings.DEFAULT).withSnapshotOnCommit(true);
    return new SyncedStore(new StoreIdentity(0, 0, "default", root),
        ObjectStores.open(root, SyncedStoreTest.UNUSED_S3, RequestListener.NONE),
        tmp.resolve("exec-" + (dirs++)), s, "{}", "{}", owner);
  }

  @Test
  void lastLeaseEndsRightAfterACommitQueuedItsSnapshotThenANewLease() throws Exception {
    String root = tmp.resolve("r").toUri().toString();
    try (SharedPools owner = new SharedPools()) {
      long v = 0;
      for (int round = 0; round < 8; round++) {
        SyncedStore st = open(root, owner);
        st.load(v, Optional.empty());
        for (int i = 0; i < INTERVAL; i++) {
          st.put(b("k" + (v + 1)), b("v" + (v + 1)));
          st.commit();
          st.startLocalIngestion();
          v++;
        }
        long t0 = System.nanoTime();
        st.close(); // the last lease: the pools shut down with the snapshot queued or running
        assertTrue(System.nanoTime() - t0 < 20_000_000_000L, "close did not hang");
        assertEquals(0, owner.leases());
      }
      try (SyncedStore cold = open(root, owner)) {
        cold.load(v, Optional.empty());
        for (long k = 1; k <= v; k++) {
          assertArrayEquals(b("v" + k), cold.get(b("k" + k)), "k" + k);
        }
      }
    }
  }

  @Test
  void ownerClosedUnderAnOpenStoreCommitsStillWork() throws Exception {
    String root = tmp.resolve("c").toUri().toString();
    SharedPools owner = new SharedPools();
    try (SyncedStore st = open(root, owner)) {
      st.load(0, Optional.empty());
      owner.close();
      for (int v = 1; v <= 3 * INTERVAL; v++) {
        st.put(b("k" + v), b("v" + v));
        st.commit();
        st.startLocalIngestion(); // rejected: runs on the next call
        assertTrue(st.awaitSnapshotUpload(10_000));
        assertEquals(v, st.settledVersion());
      }
      assertEquals(-1, st.lastSnapshotVersion(), "commit snapshots skipped once closed");
    }
    try (SharedPools o2 = new SharedPools(); SyncedStore cold = open(root, o2)) {
      cold.load(3 * INTERVAL, Optional.empty());
      assertArrayEquals(b("v1"), cold.get(b("k1")));
    }
  }

  @Test
  void storesOpenAndCloseConcurrentlyOnOneOwnerNoThreadLeft() throws Exception {
    SharedPools owner = new SharedPools();
    int workers = 4;
    java.util.concurrent.ExecutorService ex =
        java.util.concurrent.Executors.newFixedThreadPool(workers);
    java.util.List<java.util.concurrent.Future<Long>> fs = new java.util.ArrayList<>();
    for (int w = 0; w < workers; w++) {
      String root = tmp.resolve("w" + w).toUri().toString();
      fs.add(ex.submit(() -> {
        long v = 0;
        for (int round = 0; round < 6; round++) {
          try (SyncedStore st = open(root, owner)) {
            st.load(v, Optional.empty());
            for (int i = 0; i < INTERVAL; i++) {
              st.put(b("k" + (v + 1)), b("v" + (v + 1)));
              st.commit();
              st.startLocalIngestion();
              v++;
            }
          }
        }
        return v;
      }));
    }
    for (java.util.concurrent.Future<Long> f : fs) {
      assertEquals(12L, f.get(120, java.util.concurrent.TimeUnit.SECONDS));
    }
    ex.shutdown();
    assertEquals(0, owner.leases());
    for (int w = 0; w < workers; w++) {
      String root = tmp.resolve("w" + w).toUri().toString();
      try (SharedPools o2 = new SharedPools(); SyncedStore cold = open(root, o2)) {
        cold.load(12, Optional.empty());
        for (long k = 1; k <= 12; k++) {
          assertArrayEquals(b("v" + k), cold.get(b("k" + k)), root + " k" + k);
        }
      }
    }
    long deadline = System.nanoTime() + 10_000_000_000L;
    long live;
    do {
      live = Thread.getAllStackTraces().keySet().stream()
          .filter(t -> t.isAlive() && (t.getName().startsWith("strata-commit-snapshot-")
              || t.getName().startsWith("strata-commit-ingest-"))).count();
      if (live > 0) {
        Thread.sleep(100);
      }
    } while (live > 0 && System.nanoTime() < deadline);
    assertEquals(0, live, "no shared-pool thread left once every lease ended");
  }
}
