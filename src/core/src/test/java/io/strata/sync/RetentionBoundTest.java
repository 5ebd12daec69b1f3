// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import static io.strata.sync.GcWorkload.b;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.engine.SharedMemory;
import io.strata.format.Reachability;
import io.strata.format.StoreLayout;
import io.strata.objectstore.ObjectInfo;
import io.strata.objectstore.ObjectStore;
import io.strata.objectstore.ObjectStores;
import io.strata.objectstore.RequestListener;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 43: the objects of a store stay within the bound retention sets (docs/format.md,
 * "Retention and garbage collection", "The bound") in every rhythm, with the default grace
 * period of an hour never reached: one-batch runs (each a new instance of a new query run on a
 * new local directory, as a scheduled {@code AvailableNow} job runs, none reaching maintenance),
 * a fast trigger, and a trigger of hours. After every run or round, every kind of object is
 * counted against its bound, and the retained versions still load with their exact state.
 */
class RetentionBoundTest {
  private static final Duration GRACE = Duration.ofHours(1);
  private static final int INTERVAL = 3;
  private static final int KEYS = 12;

  @TempDir Path tmp;
  private int executors;

  private SyncedStore open(String root, String run, int retain, OffsetClock clock) {
    StoreSettings s = new StoreSettings(INTERVAL, 2, 0, false, SharedMemory.Limits.DEFAULT,
        new GcSettings(true, retain, Math.max(1, (int) Math.round(0.3 * retain)),
            GRACE.toMillis()));
    ObjectStore o = ObjectStores.open(root, SyncedStoreTest.UNUSED_S3, RequestListener.NONE);
    return new SyncedStore(new StoreIdentity(0, 2, "default", root), o,
        tmp.resolve("exec-" + (executors++)), run == null ? s : s.withRun(run), "{}", "{}",
        clock);
  }

  /** The value of key {@code k} after version {@code v}: rewritten every third version. */
  private static String value(int k, long v) {
    long last = v - ((v + k) % 3);
    return last < 1 ? null : "k" + k + "@" + last;
  }

  private static void writeVersion(SyncedStore s, long v) throws IOException {
    for (int k = 0; k < KEYS; k++) {
      if ((v + k) % 3 == 0) {
        s.put(b("key" + k), b("k" + k + "@" + v));
      }
    }
  }

  private static void assertVersion(SyncedStore s, long v) throws IOException {
    for (int k = 0; k < KEYS; k++) {
      String want = value(k, v);
      byte[] got = s.get(b("key" + k));
      if (want == null) {
        assertNull(got, "version " + v + " key" + k);
      } else {
        assertArrayEquals(want.getBytes(StandardCharsets.UTF_8), got, "version " + v + " key"
            + k + " = " + (got == null ? null : new String(got, StandardCharsets.UTF_8)));
      }
    }
  }

  /** Objects under the store's root by kind ({@code runs/} as its own kind, FOREIGN). */
  private static Map<Reachability.Kind, List<String>> census(String root) throws IOException {
    Map<Reachability.Kind, List<String>> out = new EnumMap<>(Reachability.Kind.class);
    try (ObjectStore o = ObjectStores.open(root, SyncedStoreTest.UNUSED_S3,
        RequestListener.NONE)) {
      for (ObjectInfo i : o.list("")) {
        out.computeIfAbsent(Reachability.kindOf(i.key()), x -> new ArrayList<>()).add(i.key());
      }
    }
    return out;
  }

  /**
   * The documented bound for newest version {@code n} and {@code retain} versions retained:
   * at most a published snapshot per retained version, no spill, the run claims of the newest
   * and the previous run and at most two lists of retired runs, and nothing else than what {@link #assertOnlyWhatRetentionNeeds}
   * allows (the version objects of the retained versions and what their manifests name).
   */
  private void assertWithinBound(String root, long n, int retain, String when)
      throws IOException {
    Map<Reachability.Kind, List<String>> c = census(root);
    long retained = Math.min(n, retain + 1);
    int versions = c.getOrDefault(Reachability.Kind.VERSION_OBJECT, List.of()).size();
    int published = c.getOrDefault(Reachability.Kind.PUBLISHED_SNAPSHOT, List.of()).size();
    int spills = c.getOrDefault(Reachability.Kind.SPILL, List.of()).size();
    List<String> runs = c.getOrDefault(Reachability.Kind.FOREIGN, List.of()).stream()
        .filter(k -> k.startsWith(StoreLayout.RUNS)).toList();
    String all = when + ": " + c;
    System.out.printf("%s: %d version objects, %d published snapshots, %d runs/ objects, %d "
        + "in all%n", when, versions, published, runs.size(),
        c.values().stream().mapToInt(List::size).sum());
    assertTrue(published <= retained, "published snapshots " + published + " at " + all);
    assertEquals(0, spills, all);
    assertTrue(runs.size() <= 6, "runs/: the newest run's and the previous run's claim and "
        + "marker, at most two lists of retired runs: " + all);
    assertOnlyWhatRetentionNeeds(root, n, retain, when);
  }

  /**
   * Every object is a retained version object, named by a retained manifest or a published
   * snapshot a retained version can use, named by another listed published snapshot (its files
   * go in the round after it), a run claim, or written after the oldest retained version (in
   * flight, or not yet settled).
   */
  private void assertOnlyWhatRetentionNeeds(String root, long n, int retain, String when)
      throws IOException {
    try (SyncedStore reader = open(root, null, retain, new OffsetClock());
        ObjectStore objects = ObjectStores.open(root, SyncedStoreTest.UNUSED_S3,
            RequestListener.NONE)) {
      List<ObjectInfo> listing = objects.list("");
      long oldestRoot = Long.MAX_VALUE;
      for (ObjectInfo o : listing) {
        if (StoreLayout.versionOf(o.key()) >= n - retain) {
          oldestRoot = Math.min(oldestRoot, o.lastModifiedMillis());
        }
      }
      java.util.Set<String> allowed = new java.util.HashSet<>();
      for (ObjectInfo o : listing) {
        if (o.key().startsWith(StoreLayout.RUNS)
            || o.lastModifiedMillis() + Reachability.SETTLE_MARGIN_MILLIS > oldestRoot) {
          allowed.add(o.key());
        }
        if (Reachability.kindOf(o.key()) == Reachability.Kind.PUBLISHED_SNAPSHOT) {
          try (java.io.InputStream in = objects.get(o.key())) {
            allowed.addAll(Reachability.namedKeys(io.strata.format.PublishedSnapshotCodec
                .decode(in.readAllBytes(), o.key()), o.key()));
          } catch (io.strata.format.ManifestFormatException e) {
            throw new IOException(e);
          }
        }
      }
      reader.load(0, Optional.empty());
      try {
        GcWorkload.assertOnlyRetainedAndNamedRemain(reader, objects, n, retain, allowed);
      } catch (AssertionError e) {
        throw new AssertionError(when + ": " + e.getMessage(), e);
      }
    }
  }

  @Test
  void oneBatchRunsEachANewRunAndInstanceStayWithinTheBound() throws Exception {
    String root = tmp.resolve("remote").toUri().toString();
    OffsetClock clock = new OffsetClock();
    int retain = 10;
    List<String> runIds = new ArrayList<>();
    for (long v = 1; v <= 50; v++) {
      String run = UUID.randomUUID().toString();
      runIds.add(run);
      Thread.sleep(150); // S3 times are whole seconds: retention spans a second or more
      try (SyncedStore s = open(root, run, retain, clock)) {
        s.load(v - 1, Optional.empty());
        writeVersion(s, v);
        s.commit();
        s.awaitLocalIngestion(); // the ingestion and the first GC round: what an exit waits for
        assertTrue(s.awaitSnapshotUpload(30_000), "snapshot upload");
        assertEquals(0, s.gcFailedRounds(), "run " + v + ": the first round failed");
        assertTrue(s.lastGc().round() >= 1, "run " + v + ": the first round ran");
      }
      assertWithinBound(root, v, retain, "after run " + v);
    }
    for (long v = 50 - retain; v <= 50; v++) {
      try (SyncedStore s = open(root, null, retain, clock)) {
        s.load(v, Optional.empty());
        assertVersion(s, v);
      }
    }
    // A zombie of an early run whose claim was retired opens a new instance: fenced, not given
    // a new epoch that would supersede the live run.
    try (SyncedStore zombie = open(root, runIds.get(3), retain, clock)) {
      StateLoadException e = assertThrows(StateLoadException.class,
          () -> zombie.load(50, Optional.empty()));
      assertEquals(StateLoadException.Reason.FENCED, e.reason(), e.getMessage());
      assertTrue(e.getMessage().contains(runIds.get(3)), e.getMessage());
    }
    try (SyncedStore s = open(root, null, retain, clock)) {
      s.load(50, Optional.empty());
      assertVersion(s, 50);
    }
  }

  @Test
  void aFastTriggerAndATriggerOfHoursStayWithinTheBound() throws Exception {
    for (Duration between : List.of(Duration.ZERO, Duration.ofHours(3))) {
      String root = tmp.resolve("remote-" + between.toHours()).toUri().toString();
      OffsetClock clock = new OffsetClock();
      int retain = 10;
      try (SyncedStore s = open(root, UUID.randomUUID().toString(), retain, clock)) {
        s.load(0, Optional.empty());
        for (long v = 1; v <= 60; v++) {
          writeVersion(s, v);
          s.commit();
          s.awaitLocalIngestion(); // as a trigger of hours would: nothing overlaps the next batch
          clock.advance(between);
          if (between.isZero()) {
            Thread.sleep(150); // S3 times are whole seconds: retention spans a second or more
          }
          s.maintenance(); // Spark's maintenance thread: a snapshot and a round when due
          assertTrue(s.awaitSnapshotUpload(30_000), "snapshot upload");
          if (v % 10 == 0) {
            s.collectGarbage();
            assertWithinBound(root, v, retain, between + " between batches, version " + v);
          }
        }
      }
      try (SyncedStore s = open(root, null, retain, clock)) {
        for (long v = 60 - retain; v <= 60; v++) {
          s.load(v, Optional.empty());
          assertVersion(s, v);
        }
      }
    }
  }
}
