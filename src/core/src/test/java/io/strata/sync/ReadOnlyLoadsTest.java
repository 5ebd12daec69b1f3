// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.engine.SharedMemory;
import io.strata.format.StoreLayout;
import io.strata.objectstore.ObjectStore;
import io.strata.objectstore.ObjectStores;
import io.strata.objectstore.RequestListener;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Optional;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A read-only load (Spark's read stores and state data source) writes nothing into the
 * checkpoint: no epoch claim under {@code runs/} and no base snapshot scheduled after a long
 * cold restore; a read store then upgraded for writing ({@link SyncedStore#prepareWrite}, Spark
 * 4.1's read-then-write) claims its epoch and schedules the snapshot then. Local file system.
 */
class ReadOnlyLoadsTest {
  private static final int INTERVAL = 3;
  @TempDir Path tmp;
  private int executors;

  private SyncedStore open(String root) {
    StoreSettings s = new StoreSettings(INTERVAL, 2, 0, false, SharedMemory.Limits.DEFAULT,
        GcSettings.DEFAULT).withRun(UUID.randomUUID().toString());
    return new SyncedStore(new StoreIdentity(0, 0, "default", root),
        ObjectStores.open(root, SyncedStoreTest.UNUSED_S3, RequestListener.NONE),
        tmp.resolve("exec-" + (executors++)), s, "{}", "{}", new OffsetClock());
  }

  private static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private long count(String root, String prefix) throws IOException {
    try (ObjectStore o = ObjectStores.open(root, SyncedStoreTest.UNUSED_S3,
        RequestListener.NONE)) {
      return o.list(prefix).size();
    }
  }

  @Test
  void aReadOnlyLongRestoreWritesNothingAndItsUpgradeSchedulesTheSnapshot() throws Exception {
    String root = tmp.resolve("remote").toUri().toString();
    try (SyncedStore w = open(root)) {
      w.load(0, Optional.empty());
      for (long v = 1; v <= 2 * INTERVAL; v++) {
        w.put(b("k" + v), b("v" + v));
        w.commit(); // no maintenance: no base snapshot, the chain grows
      }
    }
    long runs = count(root, StoreLayout.RUNS);
    assertEquals(0, count(root, StoreLayout.PUBLISHED_SNAPSHOTS));

    try (SyncedStore reader = open(root)) {
      reader.load(2 * INTERVAL, Optional.empty(), true);
      assertTrue(reader.lastRestore().deltasReplayed() >= INTERVAL, reader.lastRestore().toString());
      assertArrayEquals(b("v1"), reader.get(b("k1")));
      assertTrue(reader.awaitSnapshotUpload(30_000));
    }
    assertEquals(runs, count(root, StoreLayout.RUNS), "the reader claimed no epoch");
    assertEquals(0, count(root, StoreLayout.PUBLISHED_SNAPSHOTS), "nor scheduled a snapshot");

    try (SyncedStore upgraded = open(root)) {
      upgraded.load(2 * INTERVAL, Optional.empty(), true);
      upgraded.prepareWrite();
      assertTrue(upgraded.awaitSnapshotUpload(30_000));
      assertEquals(1, count(root, StoreLayout.PUBLISHED_SNAPSHOTS),
          "the upgrade scheduled the snapshot the long read-only restore left");
      assertEquals(runs + 2, count(root, StoreLayout.RUNS), "and claimed the run's epoch");
      upgraded.put(b("k0"), b("v0"));
      upgraded.commit();
    }
    try (SyncedStore next = open(root)) {
      next.load(2 * INTERVAL + 1, Optional.empty(), true);
      assertTrue(next.lastRestore().deltasReplayed() <= 1, "restored from the published "
          + "snapshot: " + next.lastRestore());
      assertArrayEquals(b("v0"), next.get(b("k0")));
      assertArrayEquals(b("v" + 2 * INTERVAL), next.get(b("k" + 2 * INTERVAL)));
    }
  }
}
