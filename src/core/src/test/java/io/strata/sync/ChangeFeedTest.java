// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.engine.SharedMemory;
import io.strata.format.BaseSnapshot;
import io.strata.format.Manifest;
import io.strata.format.ManifestCodec;
import io.strata.format.VersionObjectCodec;
import io.strata.format.sst.SstReader;
import io.strata.objectstore.ObjectStore;
import io.strata.objectstore.ObjectStores;
import io.strata.objectstore.RequestListener;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.TreeMap;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The change feed read from the deltas equals, version by version, the writes each version made
 * (its last write per key: a put with its value, or a delete), across base snapshots, a batch that
 * spilled into several deltas, and both checkpoint formats; and a damaged delta is an error, not
 * a shorter feed, as is a manifest whose base snapshot is not older than itself (not a walk that
 * never ends).
 */
class ChangeFeedTest {
  @TempDir Path tmp;

  private ObjectStore objects() {
    return ObjectStores.open(tmp.resolve("remote").toUri().toString(), SyncedStoreTest.UNUSED_S3,
        RequestListener.NONE);
  }

  private SyncedStore open(boolean attemptKeys) {
    return new SyncedStore(identity(), objects(), tmp.resolve("local"), new StoreSettings(3, 4,
        4096, attemptKeys, SharedMemory.Limits.DEFAULT, GcSettings.DEFAULT), "{}", "{}");
  }

  private StoreIdentity identity() {
    return new StoreIdentity(0, 1, "default", tmp.resolve("remote").toString());
  }

  private static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  /** Version to (key to value, null for a delete): what each version changed, last write wins. */
  private static TreeMap<Long, TreeMap<String, String>> commit(SyncedStore s, int versions,
      List<String> attempts) throws IOException {
    TreeMap<Long, TreeMap<String, String>> changes = new TreeMap<>();
    Random r = new Random(17);
    s.load(0, Optional.empty());
    for (long v = 1; v <= versions; v++) {
      TreeMap<String, String> c = new TreeMap<>();
      if (v == 4) {
        // no writes at all: no delta, no changes
      } else if (v == 6) {
        // a batch that spills (4 KiB threshold) into several deltas, and writes some keys again
        // after they spilled
        for (int i = 0; i < 300; i++) {
          s.put(b("big-" + i), new byte[100]);
          c.put("big-" + i, "x".repeat(0));
        }
        for (int i = 0; i < 300; i += 7) {
          s.put(b("big-" + i), b("again-" + i));
          c.put("big-" + i, "again-" + i);
        }
        s.delete(b("big-3"));
        c.put("big-3", null);
      } else {
        for (int i = 0; i < 40; i++) {
          String k = "k" + r.nextInt(60);
          if (r.nextInt(4) == 0) {
            s.delete(b(k));
            c.put(k, null);
          } else {
            String val = "v" + v + "-" + i;
            s.put(b(k), b(val));
            c.put(k, val);
          }
        }
      }
      Manifest m = s.commit().manifest();
      attempts.add(m.attempt());
      changes.put(v, c);
      if (v == 3 || v == 8) {
        assertTrue(s.snapshotNow(), "base snapshot at version " + v);
      }
    }
    return changes;
  }

  /** The feed as the same shape, big-* values of 100 zero bytes read as "". */
  private static TreeMap<Long, TreeMap<String, String>> read(ChangeFeed feed) throws IOException {
    TreeMap<Long, TreeMap<String, String>> out = new TreeMap<>();
    String previous = null;
    long previousVersion = -1;
    for (ChangeFeed.Change c = feed.next(); c != null; c = feed.next()) {
      String k = new String(c.key(), StandardCharsets.UTF_8);
      assertTrue(c.version() > previousVersion || previous.compareTo(k) < 0,
          "order at version " + c.version() + " key " + k);
      previous = k;
      previousVersion = c.version();
      String v = c.op() == SstReader.Op.DELETE ? null
          : new String(c.value(), StandardCharsets.UTF_8);
      if (v != null && k.startsWith("big-") && !v.startsWith("again")) {
        assertEquals(100, c.value().length);
        v = "";
      }
      TreeMap<String, String> version = out.computeIfAbsent(c.version(), x -> new TreeMap<>());
      assertTrue(!version.containsKey(k), "one change per key and version: " + k);
      version.put(k, v);
    }
    assertNull(feed.next(), "stays at the end");
    return out;
  }

  private static TreeMap<Long, TreeMap<String, String>> slice(
      TreeMap<Long, TreeMap<String, String>> all, long from, long to) {
    TreeMap<Long, TreeMap<String, String>> out = new TreeMap<>();
    for (Map.Entry<Long, TreeMap<String, String>> e : all.subMap(from, true, to, true)
        .entrySet()) {
      if (!e.getValue().isEmpty()) {
        out.put(e.getKey(), e.getValue());
      }
    }
    return out;
  }

  @ParameterizedTest(name = "checkpoint format 2: {0}")
  @ValueSource(booleans = {false, true})
  void everyRangeEqualsTheWritesOfItsVersions(boolean attemptKeys) throws Exception {
    List<String> attempts = new ArrayList<>();
    TreeMap<Long, TreeMap<String, String>> written;
    try (SyncedStore s = open(attemptKeys)) {
      written = commit(s, 10, attempts);
    }
    ObjectStore objects = objects();
    for (long[] range : new long[][] {{1, 10}, {1, 3}, {4, 8}, {3, 4}, {6, 6}, {9, 10},
        {10, 10}, {4, 4}}) {
      for (boolean withAttempt : new boolean[] {false, true}) {
        Optional<String> end = withAttempt ? Optional.of(attempts.get((int) range[1] - 1))
            : Optional.empty();
        ChangeFeed feed = ChangeFeed.open(identity(), objects, attemptKeys, range[0], range[1],
            end);
        assertEquals(slice(written, range[0], range[1]), read(feed),
            "versions " + range[0] + " to " + range[1] + (withAttempt ? " by attempt" : ""));
      }
    }
    ChangeFeed spilled = ChangeFeed.open(identity(), objects, attemptKeys, 6, 6,
        Optional.empty());
    assertTrue(spilled.plan().get(0)[1] >= 2, "version 6 spilled into several deltas");
  }

  @ParameterizedTest(name = "checkpoint format 2: {0}")
  @ValueSource(booleans = {false, true})
  void aDamagedOrMissingDeltaIsAnErrorThatNamesTheVersion(boolean attemptKeys) throws Exception {
    List<String> attempts = new ArrayList<>();
    try (SyncedStore s = open(attemptKeys)) {
      commit(s, 5, attempts);
    }
    ObjectStore objects = objects();
    // Flip one byte inside version 2's delta (offset 0 of its version object).
    Manifest m2 = ChangeFeedTestSupport.manifest(identity(), objects, attemptKeys, 2);
    Path object = tmp.resolve("remote").resolve(m2.deltas().get(m2.deltas().size() - 1).file()
        .key());
    byte[] bytes = Files.readAllBytes(object);
    bytes[10] ^= 0x40;
    Files.write(object, bytes);
    ChangeFeed feed = ChangeFeed.open(identity(), objects, attemptKeys, 1, 5, Optional.empty());
    IOException e = assertThrows(IOException.class, () -> {
      while (feed.next() != null) {
        // drain
      }
    });
    assertTrue(e.getMessage().contains("version 2") && e.getMessage().contains("xxhash64"),
        e.getMessage());
    Files.delete(object);
    ChangeFeed gone = ChangeFeed.open(identity(), objects, attemptKeys, 1, 1, Optional.empty());
    assertEquals(1, read(gone).size(), "version 1 is still readable");
    ChangeFeed missing = ChangeFeed.open(identity(), objects, attemptKeys, 1, 5,
        Optional.empty());
    IOException e2 = assertThrows(IOException.class, () -> {
      while (missing.next() != null) {
        // drain
      }
    });
    assertTrue(e2.getMessage().contains("version 2"), e2.getMessage());
  }

  @ParameterizedTest(name = "checkpoint format 2: {0}")
  @ValueSource(booleans = {false, true})
  void aBaseNotOlderThanItsManifestIsAnErrorNotAnEndlessWalk(boolean attemptKeys)
      throws Exception {
    List<String> attempts = new ArrayList<>();
    try (SyncedStore s = open(attemptKeys)) {
      commit(s, 5, attempts);
    }
    ObjectStore objects = objects();
    // Swap version 5's object for one whose manifest names a base snapshot of version 5 itself
    // (its own attempt): following the lineage from it would read the same object forever.
    VersionObjectReader reader = new VersionObjectReader(identity(), objects, attemptKeys,
        new ManifestCache(4));
    String key = reader.locate(5).key();
    Manifest m5 = reader.read(5, Optional.empty());
    BaseSnapshot own = new BaseSnapshot(5, m5.attempt(), m5.base().orElseThrow().files());
    Path object = tmp.resolve("remote").resolve(key);
    byte[] old = Files.readAllBytes(object);
    VersionObjectCodec.Footer footer = VersionObjectCodec.footer(old, old.length);
    byte[] manifest = ManifestCodec.encode(m5.rebasedOn(own));
    byte[] tail = VersionObjectCodec.manifestAndFooter(manifest, footer.manifestOffset());
    byte[] swapped = java.util.Arrays.copyOf(old, (int) footer.manifestOffset() + tail.length);
    System.arraycopy(tail, 0, swapped, (int) footer.manifestOffset(), tail.length);
    Files.write(object, swapped);

    for (Optional<String> end : List.of(Optional.<String>empty(),
        Optional.of(attempts.get(4)))) {
      IOException e = assertTimeoutPreemptively(Duration.ofSeconds(20), () -> assertThrows(
          IOException.class, () -> ChangeFeed.open(identity(), objects, attemptKeys, 1, 5, end)),
          "the walk ends");
      String msg = e.getMessage();
      assertTrue(msg.contains(identity().toString()) && msg.contains("version 5")
          && msg.contains(objects.describe(key)) && msg.contains("base snapshot of version 5"),
          msg);
    }
    // The versions before it are unaffected.
    assertEquals(4, ChangeFeed.open(identity(), objects, attemptKeys, 1, 4, Optional.empty())
        .plan().size());
  }
}
