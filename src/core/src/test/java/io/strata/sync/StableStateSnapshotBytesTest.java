// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.engine.SharedMemory;
import io.strata.objectstore.ObjectInfo;
import io.strata.objectstore.ObjectStore;
import io.strata.objectstore.ObjectStores;
import io.strata.objectstore.RequestListener;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashSet;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Bytes base snapshots write when almost nothing changes (the adversarial review of issue 45):
 * a file RocksDB keeps is uploaded at most twice (once new, once carried to {@code sst/}), not
 * again by every snapshot.
 */
class StableStateSnapshotBytesTest {
  @TempDir Path tmp;

  @Test
  void aStableFileIsUploadedAtMostTwiceWhateverTheNumberOfSnapshots() throws Exception {
    Path remote = tmp.resolve("remote");
    ObjectStore o = ObjectStores.open(remote.toUri().toString(), SyncedStoreTest.UNUSED_S3,
        RequestListener.NONE);
    StoreSettings settings = new StoreSettings(5, 2, 0, false, SharedMemory.Limits.DEFAULT,
        new GcSettings(false, 2, 1000, Duration.ofHours(1).toMillis())); // every snapshot stays
    try (SyncedStore a = new SyncedStore(new StoreIdentity(0, 1, "default", remote.toString()),
        o, tmp.resolve("local"), settings, "{}", "{}", new OffsetClock())) {
      a.load(0, Optional.empty());
      byte[] value = new byte[1024];
      new java.util.Random(1).nextBytes(value);
      java.util.Random random = new java.util.Random(2);
      for (int i = 0; i < 4000; i++) {
        byte[] x = new byte[1024];
        random.nextBytes(x);
        a.put(("stable-" + i).getBytes(StandardCharsets.UTF_8), x);
      }
      a.commit();
      long stable = o.list("v/").get(0).size();
      for (long v = 2; v <= 31; v++) {
        a.put(("k" + v).getBytes(StandardCharsets.UTF_8), value);
        a.commit();
        a.maintenance();
        a.awaitSnapshotUpload(30_000);
      }
      // Every upload of each SST content by the snapshots (inline in a .bsm, or an sst/ object).
      java.util.Map<io.strata.format.FileRef.ContentId, Set<String>> uploads =
          new java.util.HashMap<>();
      int snapshots = 0;
      for (ObjectInfo i : o.list("b/")) {
        snapshots++;
        byte[] bytes;
        try (java.io.InputStream in = o.get(i.key())) {
          bytes = in.readAllBytes();
        }
        for (io.strata.format.BaseSnapshot.BaseFile f
            : io.strata.format.PublishedSnapshotCodec.decode(bytes, i.key()).files()) {
          String k = f.file().key();
          if (f.name().endsWith(".sst") && (k.equals(i.key()) || k.startsWith("sst/"))) {
            uploads.computeIfAbsent(f.file().contentId(), x -> new HashSet<>()).add(k);
          }
        }
      }
      assertTrue(snapshots >= 5, "a snapshot every 5 versions: " + snapshots);
      long stableCopies = uploads.entrySet().stream()
          .filter(e -> e.getKey().length() >= stable / 2).mapToLong(e -> e.getValue().size())
          .sum();
      for (java.util.Map.Entry<io.strata.format.FileRef.ContentId, Set<String>> e
          : uploads.entrySet()) {
        assertTrue(e.getValue().size() <= 2, e.getKey() + " uploaded " + e.getValue().size()
            + " times by " + snapshots + " snapshots: " + e.getValue());
      }
      // The 4 MB state of the first commit (a delta, then at most one compaction output):
      // a few copies in all, not one per snapshot.
      assertTrue(stableCopies < snapshots, stableCopies + " copies of the stable state by "
          + snapshots + " snapshots: " + uploads);
    }
  }
}
