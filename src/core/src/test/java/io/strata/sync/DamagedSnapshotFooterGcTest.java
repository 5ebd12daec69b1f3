// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.strata.engine.SharedMemory;
import io.strata.format.StoreLayout;
import io.strata.metrics.GcStats;
import io.strata.objectstore.ObjectBody;
import io.strata.objectstore.ObjectStore;
import io.strata.objectstore.ObjectStores;
import io.strata.objectstore.RequestListener;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.util.Optional;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A damaged published snapshot of 64 KiB or more whose footer points its JSON past the end of
 * the object (found by the adversarial review of issue 45): it is unreadable, like any damaged
 * one, and never stops a garbage-collection round (before, every round failed on its GET).
 */
class DamagedSnapshotFooterGcTest {
  @TempDir Path tmp;

  @Test
  void aFooterPointingPastTheEndIsUnreadableAndCollectedNotAStorageError() throws Exception {
    Path remote = tmp.resolve("remote");
    ObjectStore o = ObjectStores.open(remote.toUri().toString(), SyncedStoreTest.UNUSED_S3,
        RequestListener.NONE);
    StoreSettings settings = new StoreSettings(1000, 2, 0, false, SharedMemory.Limits.DEFAULT,
        new GcSettings(true, 2, 1000, Duration.ofHours(1).toMillis()));
    try (SyncedStore a = new SyncedStore(new StoreIdentity(0, 1, "default", remote.toString()),
        o, tmp.resolve("local"), settings, "{}", "{}", new OffsetClock())) {
      a.load(0, Optional.empty());
      for (long v = 1; v <= 6; v++) {
        a.put(("k" + v).getBytes(StandardCharsets.UTF_8), new byte[10]);
        a.commit();
      }
      // 70 KiB of inline bytes, then a footer whose JSON offset lies past the end.
      int size = 70 * 1024;
      ByteBuffer b = ByteBuffer.allocate(size);
      b.position(size - 32);
      b.put("STRATABS".getBytes(StandardCharsets.US_ASCII)).putInt(1)
          .putLong(size + 100L).putInt(100_000).putLong(42L);
      String key = StoreLayout.publishedSnapshot(3, 0x1234L, StoreLayout.newUniqueName());
      o.putIfAbsent(key, ObjectBody.of(b.array()));
      age(remote, Duration.ofHours(2));
      GcStats first = a.collectGarbage();
      assertEquals(1, first.unreadablePublishedSnapshots(), first.toString());
      assertFalse(o.head(key).isPresent(), "older than the grace period and unreadable: deleted "
          + first);
      // Read without a listing's size too (the tool's verify): undecodable, not a storage error.
      StateLoadException e = assertThrows(StateLoadException.class, () -> new PublishedSnapshots(
          new StoreIdentity(0, 1, "default", remote.toString()), o).read(put(o, b.array())));
      assertEquals(StateLoadException.Reason.CORRUPT, e.reason(), e.getMessage());
    }
  }

  /**
   * A read after the object store closed (a store closing while its garbage-collection round
   * runs, as at every query stop during a round) is a storage failure: not reported or
   * remembered as a damaged snapshot, which a query stop logged at WARN for every published
   * snapshot the round had not read yet.
   */
  @Test
  void aReadAfterTheObjectStoreClosedIsAStorageErrorNotADamagedSnapshot() throws Exception {
    Path remote = tmp.resolve("remote");
    ObjectStore o = ObjectStores.open(remote.toUri().toString(), SyncedStoreTest.UNUSED_S3,
        RequestListener.NONE);
    StoreIdentity id = new StoreIdentity(0, 1, "default", remote.toString());
    String key = put(o, new byte[] {1, 2, 3});
    PublishedSnapshots published = new PublishedSnapshots(id, o);
    o.close();
    IOException e = assertThrows(IOException.class, () -> published.read(key));
    assertFalse(e instanceof StateLoadException, e.toString());
    assertFalse(published.knownUnreadable(key), "not remembered as undecodable");
  }

  private static String put(ObjectStore o, byte[] bytes) throws IOException {
    String key = StoreLayout.publishedSnapshot(4, 0x1234L, StoreLayout.newUniqueName());
    o.putIfAbsent(key, ObjectBody.of(bytes));
    return key;
  }

  private static void age(Path remote, Duration d) throws IOException {
    try (Stream<Path> files = Files.walk(remote)) {
      for (Path p : files.filter(Files::isRegularFile).toList()) {
        FileTime t = Files.getLastModifiedTime(p);
        Files.setLastModifiedTime(p, FileTime.fromMillis(t.toMillis() - d.toMillis()));
      }
    }
  }
}
