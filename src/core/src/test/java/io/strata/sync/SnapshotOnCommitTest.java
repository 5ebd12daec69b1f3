// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.engine.SharedMemory;
import io.strata.format.Manifest;
import io.strata.format.StoreLayout;
import io.strata.objectstore.ObjectStore;
import io.strata.objectstore.ObjectStores;
import io.strata.objectstore.RequestListener;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link StoreSettings#snapshotOnCommit()}: with no {@link SyncedStore#maintenance()} at all (a
 * job whose batches come faster than Spark's maintenance interval), the commit that reaches
 * {@code snapshotInterval} versions since its base starts a base snapshot in the background, so
 * both the manifests' chains and a cold restore stay bounded; without it the chain grows with
 * every commit. Local file system.
 */
class SnapshotOnCommitTest {
  private static final int INTERVAL = 3;
  private static final int VERSIONS = 5 * INTERVAL + 1;
  @TempDir Path tmp;
  private int executors;

  private SyncedStore open(String root, boolean onCommit) {
    StoreSettings s = new StoreSettings(INTERVAL, 2, 0, false, SharedMemory.Limits.DEFAULT,
        GcSettings.DEFAULT).withSnapshotOnCommit(onCommit);
    return new SyncedStore(new StoreIdentity(0, 0, "default", root),
        ObjectStores.open(root, SyncedStoreTest.UNUSED_S3, RequestListener.NONE),
        tmp.resolve("exec-" + (executors++)), s, "{}", "{}");
  }

  private static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private long published(String root) throws IOException {
    try (ObjectStore o = ObjectStores.open(root, SyncedStoreTest.UNUSED_S3,
        RequestListener.NONE)) {
      return o.list(StoreLayout.PUBLISHED_SNAPSHOTS).size();
    }
  }

  /** Versions the stores' snapshot listeners heard of, in order (the Spark layer reports them). */
  private final java.util.List<Long> reported =
      java.util.Collections.synchronizedList(new java.util.ArrayList<>());

  /** Commits VERSIONS versions with no maintenance; returns the longest manifest chain seen. */
  private long commitWithoutMaintenance(String root, boolean onCommit) throws Exception {
    long longest = 0;
    try (SyncedStore w = open(root, onCommit)) {
      w.onSnapshotUploaded(reported::add);
      w.load(0, Optional.empty());
      for (long v = 1; v <= VERSIONS; v++) {
        w.put(b("k" + v), b("v" + v));
        w.put(b("k" + (v - 1)), b("again" + v)); // overwrite: restores must give the last value
        Manifest m = w.commit().manifest();
        longest = Math.max(longest, m.versionsSinceBase());
        // Spark's next batch comes right away; the snapshot finishes while it would run.
        assertTrue(w.awaitSnapshotUpload(30_000), "version " + v + ": the snapshot finished");
      }
    }
    return longest;
  }

  @Test
  void theCommitReachingTheIntervalStartsTheSnapshotAndChainsStayBounded() throws Exception {
    String root = tmp.resolve("on").toUri().toString();
    long longest = commitWithoutMaintenance(root, true);
    assertTrue(longest <= INTERVAL + 1, "the manifests' chains stay within the interval plus "
        + "the commit that adopts the snapshot: " + longest);
    assertTrue(published(root) >= VERSIONS / INTERVAL - 1,
        "a snapshot was published every interval: " + published(root));
    assertEquals(published(root), reported.size(), "each upload was reported: " + reported);
    for (long v : reported) {
      assertEquals(0, v % INTERVAL, "snapshots of the commits that reached the interval: "
          + reported);
    }
    try (SyncedStore cold = open(root, true)) {
      cold.load(VERSIONS, Optional.empty());
      assertTrue(cold.lastRestore().deltasReplayed() <= INTERVAL + 1,
          "a cold restore replays a bounded chain: " + cold.lastRestore());
      assertArrayEquals(b("v" + VERSIONS), cold.get(b("k" + VERSIONS)));
      assertArrayEquals(b("again" + VERSIONS), cold.get(b("k" + (VERSIONS - 1))));
      assertArrayEquals(b("again2"), cold.get(b("k1")));
    }
  }

  @Test
  void withoutItOnlyMaintenanceSnapshotsAndTheChainGrows() throws Exception {
    String root = tmp.resolve("off").toUri().toString();
    long longest = commitWithoutMaintenance(root, false);
    assertEquals(VERSIONS, longest, "every version since version 0 is in the chain");
    assertEquals(0, published(root));
    assertEquals(List.of(), reported, "nothing uploaded, nothing reported");
    try (SyncedStore cold = open(root, false)) {
      cold.load(VERSIONS, Optional.empty());
      assertEquals(VERSIONS, cold.lastRestore().deltasReplayed(), cold.lastRestore().toString());
      assertArrayEquals(b("again" + VERSIONS), cold.get(b("k" + (VERSIONS - 1))));
    }
  }
}
