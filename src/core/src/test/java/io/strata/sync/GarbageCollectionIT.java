// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.engine.SharedMemory;
import io.strata.format.StoreLayout;
import io.strata.metrics.GcStats;
import io.strata.objectstore.ObjectInfo;
import io.strata.objectstore.ObjectStore;
import io.strata.objectstore.ObjectStores;
import io.strata.objectstore.RequestListener;
import io.strata.objectstore.S3Settings;
import io.strata.testkit.S3ProxyServer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.MultipartUpload;

/**
 * Retention and garbage collection on a real S3-compatible server (S3Proxy): 200 versions with
 * injected failures (batches that spilled and aborted, format-1 attempts that lost the race
 * after spilling, format-2 attempts the driver never used), re-commits and base snapshots, with
 * maintenance collecting along the way under a 3 s grace period. Afterwards, with the clock
 * moved past the grace period: the bucket holds exactly the retained versions and what their
 * manifests name, versions older than the retention are gone (unless a retained manifest names
 * a delta inside them), and every retained version loads on a fresh instance with an empty
 * local directory.
 */
class GarbageCollectionIT {
  private static final int VERSIONS = 200;
  private static final int RETAIN = 100;
  private static final GcSettings GC = new GcSettings(true, RETAIN, 10, 3_000);

  private static Path work;
  private static S3ProxyServer server;
  private static S3Settings s3;
  private static final List<RequestListener.Request> REQUESTS = new CopyOnWriteArrayList<>();

  @BeforeAll
  static void start() throws Exception {
    work = Files.createTempDirectory("strata-gc-it");
    server = S3ProxyServer.start(work.resolve("s3"), Map.of());
    server.createBucket("gc-it");
    s3 = new S3Settings(Optional.of(server.endpoint()), "us-east-1", true,
        Optional.of(S3ProxyServer.ACCESS_KEY), Optional.of(S3ProxyServer.SECRET_KEY),
        Optional.empty(), 3, Duration.ofSeconds(30), Duration.ofSeconds(10), 16);
  }

  @AfterAll
  static void stop() {
    if (server != null) {
      server.close();
    }
  }

  private static String location(int partition) {
    return "s3://gc-it/ckpt/state/0/" + partition;
  }

  private static SyncedStore open(int partition, String local, boolean attemptKeys,
      OffsetClock clock) {
    ObjectStore objects = ObjectStores.open(location(partition), s3, REQUESTS::add);
    return new SyncedStore(new StoreIdentity(0, partition, "default", location(partition)),
        objects, work.resolve(local), new StoreSettings(10, 4, 2048, attemptKeys, SharedMemory.Limits.DEFAULT, GC),
        "{}", "{}", clock);
  }

  private static ObjectStore objects(int partition) {
    return ObjectStores.open(location(partition), s3, RequestListener.NONE);
  }

  private static Map<String, Long> kinds(List<RequestListener.Request> rs) {
    return rs.stream().collect(Collectors.groupingBy(RequestListener.Request::kind,
        Collectors.counting()));
  }

  /**
   * Loads every retained version on fresh instances with empty local directories (four in
   * parallel, each a cold restore from the object store) and checks its state.
   */
  private static void loadEveryRetainedVersion(int partition, boolean attemptKeys,
      Function<Long, Optional<String>> attempt, Function<Long, Map<String, String>> expected)
      throws Exception {
    int threads = 4;
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      List<Future<Void>> done = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        int first = t;
        done.add(pool.submit(() -> {
          try (SyncedStore fresh = open(partition, "verify-" + partition + "-" + first,
              attemptKeys, new OffsetClock())) {
            for (long v = VERSIONS - RETAIN + first; v <= VERSIONS; v += threads) {
              fresh.load(v, attempt.apply(v));
              assertTrue(fresh.lastRestore().filesDownloaded() > 0, "a cold load of " + v);
              GcWorkload.assertState(fresh, expected.apply(v), "retained version " + v);
            }
          }
          return null;
        }));
      }
      for (Future<Void> f : done) {
        f.get();
      }
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void format1With200VersionsFailedAttemptsAndSnapshotsKeepsExactlyTheRetainedVersions()
      throws Exception {
    OffsetClock clock = new OffsetClock();
    Map<Long, TreeMap<String, String>> states = new HashMap<>();
    states.put(0L, new TreeMap<>());
    String strandedUpload;
    try (S3Client raw = server.client()) {
      // A writer that died in the middle of a multipart upload under the store's prefix.
      strandedUpload = raw.createMultipartUpload(b -> b.bucket("gc-it")
          .key("ckpt/state/0/0/sst/stranded.sst")).uploadId();
    }
    int losses = 0;
    int aborts = 0;
    long roundsDuringTheRun;
    try (SyncedStore a = open(0, "a", false, clock); SyncedStore b = open(0, "b", false, clock);
        SyncedStore stale = open(0, "stale", false, clock)) {
      a.load(0, Optional.empty());
      long t0 = System.nanoTime();
      for (long v = 1; v <= VERSIONS; v++) {
        if (v % 17 == 0) {
          // A batch that spilled, then failed: its spill deltas are orphans.
          GcWorkload.writeJunk(a, 100);
          a.abort();
          a.load(v - 1, Optional.empty());
          aborts++;
        }
        TreeMap<String, String> next = GcWorkload.write(a, states.get(v - 1), v, "a");
        if (v % 29 == 0) {
          for (int i = 0; i < 60; i++) { // a large batch that spills and commits
            String k = "big-" + v + "-" + i;
            a.put(GcWorkload.b(k), GcWorkload.b("x".repeat(60)));
            next.put(k, "x".repeat(60));
          }
        }
        assertFalse(a.commit().lostRace());
        states.put(v, next);
        if (v % 23 == 0) {
          // A second attempt of version v (a speculative or retried task) spills, then loses.
          b.load(v - 1, Optional.empty());
          GcWorkload.writeJunk(b, 100);
          assertTrue(b.commit().lostRace(), "version " + v);
          losses++;
        }
        if (v == 30) {
          stale.load(30, Optional.empty()); // an executor that lost the partition afterwards
        }
        if (v == 150) {
          GcStats s = stale.collectGarbage();
          assertEquals(30, s.newestVersion(), "a stale instance windows from its own version "
              + "(it only keeps more; versions listed above it may be an earlier run's)");
        }
        a.maintenance();
      }
      System.out.printf("format 1: %d versions in %d ms%n", VERSIONS,
          (System.nanoTime() - t0) / 1_000_000);
      roundsDuringTheRun = a.lastGc().round();
      assertTrue(roundsDuringTheRun >= VERSIONS / GC.roundInterval() - 1,
          "maintenance collected along the way: " + a.lastGc());

      clock.advance(Duration.ofHours(1));
      REQUESTS.clear();
      GcStats last = a.collectGarbage();
      Map<String, Long> k = kinds(List.copyOf(REQUESTS));
      assertEquals(VERSIONS, last.newestVersion());
      assertEquals(VERSIONS - RETAIN, last.oldestRetainedVersion());
      assertEquals(2, last.listRequests(), "one LIST of objects, one of multipart uploads");
      assertEquals(2L, k.get("LIST"), "requests of the round: " + k);
      assertEquals(last.manifestReads(), k.getOrDefault("GET", 0L), "requests: " + k);
      // The owner cached every retained manifest: a round reads only manifests of versions
      // below the window that earlier rounds left (younger than the grace period then, how many
      // depends on the run's speed), whose entries the bounded cache has evicted.
      List<String> read = REQUESTS.stream().filter(r -> r.kind().equals("GET"))
          .map(RequestListener.Request::key).toList();
      for (String key : read) {
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("/v/(\\d{20})")
            .matcher(key);
        assertTrue(m.find() && Long.parseLong(m.group(1)) < last.oldestRetainedVersion(),
            "a retained manifest read, not cached: " + key + " (reads " + read + ")");
      }
      assertEquals(last.deleteRequests(), k.getOrDefault("DELETE", 0L), "requests: " + k);
      assertTrue(last.deleteRequests() <= 2, "one DeleteObjects (+ one abort): " + last);
      assertEquals(null, k.get("PUT"));
      assertEquals(null, k.get("HEAD"));
      // The files a published snapshot deleted by that round names go in the next one (see
      // the format-2 test below).
      a.collectGarbage();
    }
    assertTrue(losses >= 8 && aborts >= 11, losses + " lost races, " + aborts + " aborts");

    try (ObjectStore objects = objects(0);
        SyncedStore reader = open(0, "reader", false, new OffsetClock())) {
      Set<String> named = GcWorkload.assertOnlyRetainedAndNamedRemain(reader, objects, VERSIONS,
          RETAIN, Set.of());
      List<String> keys = objects.list("").stream().map(ObjectInfo::key).toList();
      List<Long> pinned = new ArrayList<>();
      for (long v = 1; v < VERSIONS - RETAIN; v++) {
        String key = StoreLayout.versionObject(v);
        if (keys.contains(key)) {
          assertTrue(named.contains(key), "version " + v + " is older than the retention");
          pinned.add(v);
        }
      }
      // The oldest retained versions are built from deltas after their base snapshot: those
      // version objects stay (at most about two snapshot intervals of them).
      assertTrue(pinned.size() <= 20, "old version objects a retained manifest still names: "
          + pinned);
      assertTrue(objects.list("spill/").stream().allMatch(o -> named.contains(o.key())),
          "only the spills of committed large batches remain");
      try (S3Client raw = server.client()) {
        List<MultipartUpload> uploads = raw.listMultipartUploads(x -> x.bucket("gc-it")
            .prefix("ckpt/state/0/0/")).uploads();
        assertEquals(List.of(), uploads.stream().map(MultipartUpload::uploadId).toList(),
            "the stranded upload " + strandedUpload + " was aborted");
      }
      long t1 = System.nanoTime();
      loadEveryRetainedVersion(0, false, v -> Optional.empty(), states::get);
      System.out.printf("format 1: %d cold loads in %d ms%n", RETAIN + 1,
          (System.nanoTime() - t1) / 1_000_000);
    }
  }

  @Test
  void format2UnusedAttemptsAreCollectedOnceOlderThanTheRetention() throws Exception {
    OffsetClock clock = new OffsetClock();
    Map<String, TreeMap<String, String>> byAttempt = new HashMap<>();
    Map<Long, String> used = new HashMap<>();
    List<String> unused = new ArrayList<>();
    try (SyncedStore a = open(1, "f2", true, clock)) {
      a.load(0, Optional.empty());
      TreeMap<String, String> state = new TreeMap<>();
      for (long v = 1; v <= VERSIONS; v++) {
        Optional<String> parent = Optional.ofNullable(used.get(v - 1));
        if (v % 31 == 0) {
          GcWorkload.writeJunk(a, 100);
          a.abort();
          a.load(v - 1, parent);
        }
        if (v % 13 == 0) {
          // An attempt whose task failed after its commit: the driver re-runs the batch and
          // uses the re-commit's checkpoint id.
          GcWorkload.write(a, state, v, "x");
          unused.add(a.commit().key());
          a.load(v - 1, parent);
        }
        TreeMap<String, String> next = GcWorkload.write(a, state, v, "a");
        CommitResult c = a.commit();
        used.put(v, c.manifest().attempt());
        byAttempt.put(c.manifest().attempt(), next);
        state = next;
        a.maintenance();
      }
      clock.advance(Duration.ofHours(1));
      GcStats last = a.collectGarbage();
      assertEquals(VERSIONS, last.newestVersion());
      // A round that deletes a published snapshot no retained version can use keeps the files
      // it names until a later round (GarbageCollector: they go once it is gone). Whether the
      // last round above deleted one depends on how many of the loop's rounds saw it older than
      // the grace period, that is on the machine's speed; a second round settles it.
      a.collectGarbage();
    }
    try (ObjectStore objects = objects(1);
        SyncedStore reader = open(1, "f2-reader", true, new OffsetClock())) {
      Set<String> named = GcWorkload.assertOnlyRetainedAndNamedRemain(reader, objects, VERSIONS,
          RETAIN, Set.of());
      Set<String> keys = objects.list("").stream().map(ObjectInfo::key)
          .collect(Collectors.toSet());
      long pinned = keys.stream().filter(x -> StoreLayout.versionOf(x) >= 1
          && StoreLayout.versionOf(x) < VERSIONS - RETAIN).peek(x -> assertTrue(named.contains(x),
              x + " is older than the retention")).count();
      assertTrue(pinned <= 20, pinned + " old version objects a retained manifest still names");
      for (String key : unused) {
        long v = StoreLayout.versionOf(key);
        assertEquals(v >= VERSIONS - RETAIN, keys.contains(key),
            "the unused attempt of version " + v + " stays only within the retention");
      }
      loadEveryRetainedVersion(1, true, v -> Optional.of(used.get(v)),
          v -> byAttempt.get(used.get(v)));
    }
  }
}
