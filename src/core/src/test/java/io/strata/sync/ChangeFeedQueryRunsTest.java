// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.engine.SharedMemory;
import io.strata.format.BaseSnapshot;
import io.strata.format.Manifest;
import io.strata.format.sst.SstReader;
import io.strata.objectstore.ObjectStore;
import io.strata.objectstore.ObjectStores;
import io.strata.objectstore.RequestListener;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Optional;
import java.util.TreeMap;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The change feed across query runs (checkpoint format 1 with epochs): a later run's rewind, and
 * a lineage whose base is an earlier run's published snapshot of a version the later run
 * re-committed.
 */
class ChangeFeedQueryRunsTest {
  @TempDir Path tmp;
  private int executors;

  private String root() {
    return tmp.resolve("remote").toUri().toString();
  }

  private ObjectStore objects() {
    return ObjectStores.open(root(), SyncedStoreTest.UNUSED_S3, RequestListener.NONE);
  }

  private StoreIdentity identity() {
    return new StoreIdentity(0, 3, "default", root());
  }

  /** A store of query run {@code run} on a fresh local directory (a new executor). */
  private SyncedStore open(String run) {
    StoreSettings s = new StoreSettings(1000, 2, 0, false, SharedMemory.Limits.DEFAULT,
        GcSettings.DEFAULT);
    return new SyncedStore(identity(), objects(), tmp.resolve("exec-" + (executors++)),
        s.withRun(run), "{}", "{}");
  }

  private static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static TreeMap<Long, TreeMap<String, String>> read(ChangeFeed f) throws IOException {
    TreeMap<Long, TreeMap<String, String>> out = new TreeMap<>();
    for (ChangeFeed.Change c = f.next(); c != null; c = f.next()) {
      out.computeIfAbsent(c.version(), v -> new TreeMap<>()).put(
          new String(c.key(), StandardCharsets.UTF_8),
          c.op() == SstReader.Op.DELETE ? null : new String(c.value(), StandardCharsets.UTF_8));
    }
    return out;
  }

  /**
   * A later query run re-runs a batch that wrote nothing (a rewind or a restart that re-runs the
   * last batch); another executor of the later run restores a later version from the published
   * snapshot the EARLIER run uploaded of that version (usable: same lineage tip, same state), and
   * its next commit names that snapshot, (version, earlier run's attempt), as its base. The
   * state is right, every load works; the change feed over that version fails instead of
   * returning the changes.
   */
  @Test
  void changeFeedAcrossAnAdoptedPublishedSnapshotOfAnEarlierRunsReCommittedVersion()
      throws Exception {
    String runA = UUID.randomUUID().toString();
    String runB = UUID.randomUUID().toString();
    try (SyncedStore a = open(runA)) {
      a.load(0, Optional.empty());
      for (long v = 1; v <= 4; v++) {
        a.put(b("k" + v), b("a" + v));
        a.commit();
      }
      a.commit(); // version 5: a batch without writes
      assertTrue(a.snapshotNow(), "run A publishes a snapshot of version 5");
    }
    try (SyncedStore b = open(runB)) {
      b.load(4, Optional.empty()); // run B re-runs batch 4 (version 5): again without writes
      assertEquals(2, b.commit().manifest().epoch());
      b.put(b("k6"), b("b6"));
      b.commit(); // version 6
    }
    Manifest m7;
    try (SyncedStore b2 = open(runB)) { // another executor of run B, cold
      b2.load(6, Optional.empty());
      assertEquals("b6", new String(b2.get(b("k6")), StandardCharsets.UTF_8));
      b2.put(b("k7"), b("b7"));
      m7 = b2.commit().manifest();
    }
    Optional<BaseSnapshot> base = m7.base();
    Manifest m5 = ChangeFeedTestSupport.manifest(identity(), objects(), false, 5);
    assertTrue(base.isPresent() && base.get().version() == 5
        && !base.get().attempt().equals(m5.attempt()),
        "version 7's base is run A's version 5, not the one a load of 5 finds: " + base);
    // Every load of version 7 works (the state is right); so must the change feed.
    try (SyncedStore reader = open(UUID.randomUUID().toString())) {
      reader.load(7, Optional.empty());
      assertEquals("b7", new String(reader.get(b("k7")), StandardCharsets.UTF_8));
    }
    ChangeFeed feed = ChangeFeed.open(identity(), objects(), false, 1, 7, Optional.empty());
    TreeMap<Long, TreeMap<String, String>> got = read(feed);
    TreeMap<Long, TreeMap<String, String>> expected = new TreeMap<>();
    for (long v : new long[] {1, 2, 3, 4}) {
      expected.put(v, new TreeMap<>(java.util.Map.of("k" + v, "a" + v)));
    }
    expected.put(6L, new TreeMap<>(java.util.Map.of("k6", "b6")));
    expected.put(7L, new TreeMap<>(java.util.Map.of("k7", "b7")));
    assertEquals(expected, got, "versions 1-4 (run A), 6 and 7 (run B); 5 wrote nothing");
  }

  /**
   * A rewind by a later run, with base snapshots on both sides: the feed of the later run's end
   * version is the visible lineage's writes.
   */
  @Test
  void changeFeedAfterARewindFollowsTheVisibleLineage() throws Exception {
    String runA = UUID.randomUUID().toString();
    String runB = UUID.randomUUID().toString();
    try (SyncedStore a = open(runA)) {
      a.load(0, Optional.empty());
      for (long v = 1; v <= 10; v++) {
        a.put(b("k" + v), b("a" + v));
        a.put(b("counter"), b("a" + v));
        a.commit();
        if (v == 3 || v == 8) {
          assertTrue(a.snapshotNow());
        }
      }
    }
    try (SyncedStore b = open(runB)) {
      b.load(6, Optional.empty());
      for (long v = 7; v <= 12; v++) {
        b.put(b("k" + v), b("b" + v));
        b.put(b("counter"), b("b" + v));
        b.commit();
        if (v == 9) {
          assertTrue(b.snapshotNow());
        }
      }
    }
    TreeMap<Long, TreeMap<String, String>> got = read(ChangeFeed.open(identity(), objects(),
        false, 1, 12, Optional.empty()));
    for (long v = 1; v <= 12; v++) {
      String w = (v <= 6 ? "a" : "b") + v;
      TreeMap<String, String> expected = new TreeMap<>();
      expected.put("k" + v, w);
      expected.put("counter", w);
      assertEquals(expected, got.get(v), "version " + v);
    }
  }
}
