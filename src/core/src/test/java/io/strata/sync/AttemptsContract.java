// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.engine.SharedMemory;
import io.strata.format.StoreLayout;
import io.strata.objectstore.ObjectStore;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Optional;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Two attempts of the same version (a zombie or speculative copy and the attempt the driver
 * used), one delayed past the other's commit and past later versions; then a restore on a wiped
 * local directory must give exactly the expected state. Run for checkpoint format 1 ({@code
 * attemptKeys = false}: first writer wins) and format 2 (one object per attempt; the driver names
 * the one to load). Subclasses supply the object store: the local filesystem and S3Proxy.
 */
abstract class AttemptsContract {
  @TempDir Path tmp;

  /** A new object store client rooted at this test's store location (same root every call). */
  abstract ObjectStore objects(String root);

  /** A store root unique to the running test. */
  abstract String root(String test);

  private SyncedStore open(String root, String executor, boolean format2, long spillBytes) {
    return new SyncedStore(new StoreIdentity(0, 3, "default", root), objects(root),
        tmp.resolve(executor), new StoreSettings(1000, 4, spillBytes, format2, SharedMemory.Limits.DEFAULT, GcSettings.DEFAULT), "{}", "{}");
  }

  private static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  /** Version v as the real attempt writes it: key-v = "real", counter = v. */
  private static void writeReal(SyncedStore s, long v) throws Exception {
    s.put(b("key-" + v), b("real"));
    s.put(b("counter"), b(Long.toString(v)));
  }

  private static void assertReal(SyncedStore s, long v) throws Exception {
    assertArrayEquals(b(Long.toString(v)), s.get(b("counter")), "counter at version " + v);
    for (long w = 1; w <= v; w++) {
      assertArrayEquals(b("real"), s.get(b("key-" + w)), "key-" + w + " at version " + v);
    }
    assertNull(s.get(b("zombie")), "no write of the zombie attempt at version " + v);
    assertNull(s.get(b("key-" + (v + 1))), "nothing of version " + (v + 1));
    assertEquals(v + 1, s.numKeys(), "keys at version " + v);
  }

  @ParameterizedTest(name = "checkpoint format {0}")
  @ValueSource(ints = {1, 2})
  void aZombieAttemptDelayedPastLaterVersionsNeverChangesWhatLoads(int format) throws Exception {
    boolean v2 = format == 2;
    String root = root("zombie-f" + format);
    String[] attempts = new String[7];
    try (SyncedStore real = open(root, "exec-1", v2, 0);
        SyncedStore zombie = open(root, "exec-2", v2, 100)) {
      real.load(0, Optional.empty());
      for (long v = 1; v <= 3; v++) {
        writeReal(real, v);
        attempts[(int) v] = real.commit().manifest().attempt();
      }
      // A second attempt of version 4 starts on another executor from version 3 ... (it spills,
      // so part of its writes already reached the object store and its local database)
      zombie.load(3, v2 ? Optional.of(attempts[3]) : Optional.empty());
      for (int i = 0; i < 50; i++) {
        zombie.put(b("zombie-" + i), b("x".repeat(20)));
      }
      zombie.put(b("zombie"), b("yes"));
      zombie.put(b("counter"), b("zombie"));
      // ... and stalls, while the attempt the driver uses commits version 4 and then 5 and 6.
      real.load(3, v2 ? Optional.of(attempts[3]) : Optional.empty());
      for (long v = 4; v <= 6; v++) {
        writeReal(real, v);
        attempts[(int) v] = real.commit().manifest().attempt();
      }
      // Now the zombie wakes up and commits its version 4.
      CommitResult late = zombie.commit();
      if (v2) {
        assertFalse(late.lostRace(), "format 2: each attempt has its own object");
        assertEquals(StoreLayout.versionObject(4, late.manifest().attempt()), late.key());
      } else {
        assertTrue(late.lostRace(), "format 1: the first attempt to commit version 4 wins");
        assertEquals(attempts[4], late.manifest().attempt());
        // the zombie's own store now holds (or restores) the winner's state, not its spills
        zombie.load(4, Optional.empty());
        assertReal(zombie, 4);
      }
    }
    // A fresh cluster: wiped local directories, everything from the object store.
    try (SyncedStore fresh = open(root, "fresh", v2, 0)) {
      for (long v = 6; v >= 1; v--) {
        fresh.load(v, v2 ? Optional.of(attempts[(int) v]) : Optional.empty());
        assertReal(fresh, v);
        assertEquals(Optional.of(attempts[(int) v]), fresh.loadedAttempt());
      }
    }
    try (SyncedStore fresh = open(root, "fresh-latest", v2, 0)) {
      // format 1 without a checkpoint id: version 4 is the winner's
      fresh.load(4, Optional.empty());
      if (!v2) {
        assertReal(fresh, 4);
      }
    }
  }

  @ParameterizedTest(name = "checkpoint format {0}")
  @ValueSource(ints = {1, 2})
  void aRetryAfterATaskDiedPastItsPutLoadsConsistently(int format) throws Exception {
    boolean v2 = format == 2;
    String root = root("retry-f" + format);
    String first;
    try (SyncedStore dead = open(root, "exec-1", v2, 0)) {
      dead.load(0, Optional.empty());
      writeReal(dead, 1);
      first = dead.commit().manifest().attempt();
      // the executor dies here, before the task reports: the driver schedules a retry
    }
    try (SyncedStore retry = open(root, "exec-2", v2, 0)) {
      retry.load(0, Optional.empty());
      writeReal(retry, 1);
      CommitResult c = retry.commit();
      assertEquals(!v2, c.lostRace());
      if (!v2) {
        assertEquals(first, c.manifest().attempt(), "format 1 keeps the first attempt");
        assertEquals(-1, retry.loadedVersion(), "the local database ingested this attempt's "
            + "delta while its PUT was in flight: it is discarded, the next load restores the "
            + "winner");
      }
      String used = c.manifest().attempt();
      retry.load(1, v2 ? Optional.of(used) : Optional.empty());
      writeReal(retry, 2);
      String second = retry.commit().manifest().attempt();
      try (SyncedStore fresh = open(root, "fresh", v2, 0)) {
        fresh.load(2, v2 ? Optional.of(second) : Optional.empty());
        assertReal(fresh, 2);
        fresh.load(1, v2 ? Optional.of(used) : Optional.empty());
        assertReal(fresh, 1);
      }
    }
  }
}
