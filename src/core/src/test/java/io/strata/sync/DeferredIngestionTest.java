// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.strata.engine.LocalFiles;
import io.strata.engine.SharedMemory;
import io.strata.metrics.RestoreStats;
import io.strata.objectstore.ObjectStore;
import io.strata.objectstore.ObjectStores;
import io.strata.objectstore.RequestListener;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The local ingestion of a commit's delta runs after {@code commit()} returned, started by
 * {@code startLocalIngestion()} or, if nobody started it, by the store's next call: whatever the
 * store is asked next (a read, a write of the next version without a load, a load, a snapshot,
 * close) sees the committed version exactly; a delta staged in memory leaves nothing behind; and
 * an ingestion that fails leaves the version committed and the next load restores it from the
 * object store.
 */
class DeferredIngestionTest {
  @TempDir Path tmp;

  private SyncedStore open(String name, boolean inMemory) {
    Path remote = tmp.resolve("remote");
    ObjectStore objects = ObjectStores.open(remote.toUri().toString(), SyncedStoreTest.UNUSED_S3,
        RequestListener.NONE);
    return new SyncedStore(new StoreIdentity(0, 1, "default", remote.toString()), objects,
        tmp.resolve("local-" + name), new StoreSettings(3, 2, 0, false,
            SharedMemory.Limits.DEFAULT, GcSettings.DEFAULT).withDeltasStagedInMemory(inMemory),
        "{}", "{}");
  }

  private static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static List<Path> files(Path dir) throws Exception {
    if (!Files.isDirectory(dir)) {
      return List.of();
    }
    try (Stream<Path> s = Files.list(dir)) {
      return s.toList();
    }
  }

  @Test
  void everyCallAfterACommitSeesTheCommittedVersionAndNothingIsLeftInStaging() throws Exception {
    Optional<Path> staging = DeltaStaging.jvmDir();
    try (SyncedStore s = open("a", true)) {
      s.load(0, Optional.empty());
      for (long v = 1; v <= 7; v++) {
        // Writes of the next version straight after the commit, without a load: they must not
        // be swept away by the previous commit's ingestion clearing its pending writes.
        s.put(b("k" + v), b("v" + v));
        s.put(b("counter"), b(Long.toString(v)));
        if (v > 1) {
          assertArrayEquals(b(Long.toString(v)), s.get(b("counter")), "own write, version " + v);
          assertArrayEquals(b("v" + (v - 1)), s.get(b("k" + (v - 1))), "committed, version " + v);
        }
        assertEquals(v, s.commit().manifest().version());
        if (v % 2 == 1) {
          s.startLocalIngestion(); // on the ingest threads; even versions: by the next call
        }
        if (v == 4) {
          assertTrue(s.snapshotNow(), "a snapshot straight after a commit");
        }
      }
      assertEquals(8, s.numKeys(), "k1..k7 and the counter");
    }
    if (staging.isPresent()) {
      assertEquals(List.of(), files(staging.get()), "no staged delta left after close");
    }
    assertEquals(List.of(), files(tmp.resolve("local-a").resolve("tmp")), "no delta left");
    try (SyncedStore fresh = open("b", false)) {
      fresh.load(7, Optional.empty());
      for (long v = 1; v <= 7; v++) {
        assertArrayEquals(b("v" + v), fresh.get(b("k" + v)), "restored k" + v);
      }
      assertArrayEquals(b("7"), fresh.get(b("counter")));
      assertTrue(fresh.lastRestore().baseVersion() > 0, "restored from the snapshot: "
          + fresh.lastRestore());
    }
  }

  @Test
  void aFailedIngestionLeavesTheVersionCommittedAndTheNextLoadRestoresIt() throws Exception {
    assumeTrue(DeltaStaging.jvmDir().isPresent(), "needs a memory-backed /dev/shm");
    Path local = tmp.resolve("local-c");
    try (SyncedStore s = open("c", true)) {
      s.load(0, Optional.empty());
      s.put(b("a"), b("1"));
      s.commit();
      s.load(1, Optional.empty());
      assertEquals(RestoreStats.NONE, s.lastRestore(), "version 1 is local");
      // The delta of version 2 is staged in memory; its copy into the database's temporary
      // directory fails once that directory points into /proc (not writable, even for root).
      Path tmpDir = local.resolve("tmp");
      LocalFiles.deleteRecursively(tmpDir);
      Files.createSymbolicLink(tmpDir, Path.of("/proc"));
      s.put(b("b"), b("2"));
      s.delete(b("a"));
      assertEquals(2, s.commit().manifest().version(), "the PUT succeeded: committed");
      assertEquals(2, s.loadedVersion(), "the committed version, before its ingestion ended");
      s.startLocalIngestion();
      // Fails while the directory points into /proc: the local database is dropped.
      assertEquals(-1, s.settledVersion(), "nothing usable once the ingestion failed");
      Files.delete(tmpDir);
      s.load(2, Optional.empty());
      assertNotEquals(RestoreStats.NONE, s.lastRestore(), "restored from the object store");
      assertArrayEquals(b("2"), s.get(b("b")));
      assertNull(s.get(b("a")), "the removal of version 2 holds");
      assertEquals(1, s.numKeys());
    }
    assertEquals(List.of(), files(DeltaStaging.jvmDir().get()), "no staged delta left");
  }
}
