// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.engine.SharedMemory;
import io.strata.objectstore.ConditionalWriteProbe;
import io.strata.objectstore.ObjectStore;
import io.strata.objectstore.ObjectStores;
import io.strata.objectstore.RequestListener;
import io.strata.objectstore.S3Settings;
import io.strata.testkit.S3ProxyServer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Records every HTTP request Strata sends to a real S3-compatible server (S3Proxy) and checks
 * the commit path: one create-only PUT per small commit, nothing else, no key written twice.
 */
class CommitRequestsIT {
  private static Path work;
  private static S3ProxyServer server;
  private static final List<RequestListener.Request> REQUESTS = new CopyOnWriteArrayList<>();

  @BeforeAll
  static void start() throws Exception {
    work = Files.createTempDirectory("strata-commit-it");
    server = S3ProxyServer.start(work.resolve("s3"), Map.of());
    server.createBucket("commits");
  }

  @AfterAll
  static void stop() {
    if (server != null) {
      server.close();
    }
  }

  /** A store with garbage collection on (its first round follows the first commit). */
  private SyncedStore open(String local) {
    return open(local, "s3://commits/ckpt/state/0/0", null, true);
  }

  private SyncedStore open(String local, String location) {
    return open(local, location, null);
  }

  /**
   * A store with garbage collection off: its first round, in the background after the first
   * commit (issue 43), would add requests to the windows these tests count;
   * {@link #aSmallCommitIsExactlyOneConditionalPut} counts that round.
   */
  private SyncedStore open(String local, String location, String run) {
    return open(local, location, run, false);
  }

  private SyncedStore open(String local, String location, String run, boolean gc) {
    S3Settings s3 = new S3Settings(Optional.of(server.endpoint()), "us-east-1", true,
        Optional.of(S3ProxyServer.ACCESS_KEY), Optional.of(S3ProxyServer.SECRET_KEY),
        Optional.empty(), 3, Duration.ofSeconds(30), Duration.ofSeconds(10), 8);
    ObjectStore objects = ObjectStores.open(location, s3, REQUESTS::add);
    return new SyncedStore(new StoreIdentity(0, 0, "default", location), objects,
        work.resolve(local), run == null ? settings(gc) : settings(gc).withRun(run), "{}",
        "{}");
  }

  private static StoreSettings settings(boolean gc) {
    GcSettings d = GcSettings.DEFAULT;
    return new StoreSettings(10, 4, 0, false, SharedMemory.Limits.DEFAULT, gc ? d
        : new GcSettings(false, d.versionsToRetain(), d.roundInterval(), d.gracePeriodMillis()));
  }

  /** The conditional-write probe's requests among {@code rs} (its PUTs, HEAD and DeleteObjects). */
  private static List<RequestListener.Request> probeRequests(List<RequestListener.Request> rs) {
    return rs.stream().filter(r -> r.key().contains(ConditionalWriteProbe.PREFIX)
        || (r.kind().equals("DELETE") && r.key().isEmpty())).collect(Collectors.toList());
  }

  private static Map<String, Long> kinds(List<RequestListener.Request> rs) {
    return rs.stream().collect(Collectors.groupingBy(RequestListener.Request::kind,
        Collectors.counting()));
  }

  @Test
  void aSmallCommitIsExactlyOneConditionalPut() throws Exception {
    Set<String> written = new HashSet<>();
    try (SyncedStore s = open("a")) {
      s.load(0, Optional.empty());
      for (int v = 1; v <= 5; v++) {
        for (int i = 0; i < 100; i++) {
          s.put(("key-" + v + "-" + i).getBytes(StandardCharsets.UTF_8), new byte[16]);
        }
        if (v > 1) {
          s.delete(("key-" + (v - 1) + "-0").getBytes(StandardCharsets.UTF_8));
        }
        REQUESTS.clear();
        s.commit();
        s.awaitLocalIngestion(); // and, after the first commit, the first GC round
        // The instance's first garbage-collection round follows its first commit, in the
        // background (issue 43): one LIST of the store's root and one ListMultipartUploads of
        // it (docs/format.md, "Cost in requests"), nothing to delete yet.
        assertEquals(v == 1 ? 2 : 0, firstRound(REQUESTS, "ckpt/state/0/0/"), "commit " + v);
        // The bucket's first create-only write in this JVM runs the one-time conditional-write
        // probe first (its requests are pinned by ConditionalWriteProbeIT); commits cost the same
        // with or without it.
        List<RequestListener.Request> commit = new ArrayList<>(REQUESTS);
        List<RequestListener.Request> probe = probeRequests(commit);
        assertTrue(probe.isEmpty() || (v == 1 && probe.size() == ConditionalWriteProbe.REQUESTS),
            "the probe runs at most once, before the first commit: " + probe);
        commit.removeAll(probe);
        assertEquals(Map.of("PUT", 1L), kinds(commit), "requests of commit " + v + ": " + commit);
        RequestListener.Request put = commit.get(0);
        assertTrue(put.conditional(), "the version object is written create-only (If-None-Match)");
        assertEquals(200, put.statusCode());
        assertTrue(written.add(put.key()), "key written twice: " + put.key());
        // the next batch on the same executor reuses the local state: no request at all
        REQUESTS.clear();
        s.load(v, Optional.empty());
        assertEquals(List.of(), List.copyOf(REQUESTS), "warm load of version " + v);
      }
      REQUESTS.clear();
      s.commit(); // an idle version still commits: one PUT, no delta
      assertEquals(Map.of("PUT", 1L), kinds(REQUESTS));
    }
  }

  /**
   * A cold load lists the version's prefix once (which generation is the newest: a later query
   * run may have re-committed the version; docs/format.md, "Query runs, epochs and
   * generations"), reads the manifest, lists the published snapshots once ({@code b/}: none
   * here, so no GET of one; docs/format.md, "Published snapshots"), then reads the files the
   * manifest names. (Before layout 2 this read
   * {@code v/<version>.svo} directly and never listed: that was only right while the first
   * writer of a version won across query runs.)
   */
  @Test
  void aColdLoadListsOnlyTheVersionsPrefix() throws Exception {
    try (SyncedStore s = open("b", "s3://commits/cold/state/0/0")) {
      s.load(0, Optional.empty());
      for (int v = 1; v <= 3; v++) {
        s.put(("k" + v).getBytes(StandardCharsets.UTF_8), new byte[8]);
        s.commit();
      }
      s.awaitLocalIngestion(); // and its first GC round (issue 43), before the next window
    }
    REQUESTS.clear();
    try (SyncedStore fresh = open("c", "s3://commits/cold/state/0/0")) {
      fresh.load(3, Optional.empty());
      Map<String, Long> k = kinds(REQUESTS);
      assertEquals(2L, k.get("LIST"), "one LIST of v/<version>/ and one of b/: " + REQUESTS);
      assertTrue(REQUESTS.stream().filter(r -> r.kind().equals("LIST"))
          .allMatch(r -> r.key().contains("v/00000000000000000003/")
              || r.key().endsWith("/b/")), "of the version's prefix and the published "
          + "snapshots': " + REQUESTS);
      assertEquals(null, k.get("PUT"));
      assertEquals(null, k.get("HEAD"));
      assertTrue(k.get("GET") >= 1 + 3, "manifest tail + 3 deltas: " + k);
    }
  }

  /**
   * A cold load that restores from a published snapshot (docs/format.md, "Published snapshots")
   * spends one LIST of {@code b/} and one GET of the published object more than one from the
   * manifest alone, and downloads only the snapshot's files and the deltas after it; a commit
   * after it is still one PUT, and it writes nothing else.
   */
  @Test
  void aColdLoadFromAPublishedSnapshotListsAndReadsItOnce() throws Exception {
    String location = "s3://commits/published/state/0/0";
    try (SyncedStore s = open("p", location)) {
      s.load(0, Optional.empty());
      for (int v = 1; v <= 4; v++) {
        s.put(("k" + v).getBytes(StandardCharsets.UTF_8), new byte[8]);
        s.commit();
      }
      assertTrue(s.snapshotNow(), "a snapshot of version 4");
      s.awaitLocalIngestion(); // and its first GC round (issue 43), before the next window
    }
    REQUESTS.clear();
    try (SyncedStore fresh = open("p-3", location)) {
      fresh.load(4, Optional.empty());
      Map<String, Long> k = kinds(REQUESTS);
      assertEquals(2L, k.get("LIST"), "v/<4>/ and b/: " + REQUESTS);
      // One GET of its JSON (the object's tail), one of its inline files (back to back: one
      // ranged GET).
      assertEquals(2L, REQUESTS.stream().filter(r -> r.kind().equals("GET")
          && r.key().contains("/b/")).count(), "two GETs of the published snapshot: "
          + REQUESTS);
      assertEquals(null, k.get("PUT"));
      assertTrue(fresh.lastRestore().fromPublishedSnapshot(), "restored from it: "
          + fresh.lastRestore());
      assertEquals(0, fresh.lastRestore().deltasReplayed());
      fresh.put("k5".getBytes(StandardCharsets.UTF_8), new byte[8]);
      REQUESTS.clear();
      CommitResult c = fresh.commit();
      assertEquals(Map.of("PUT", 1L), kinds(REQUESTS), "commit after it: " + REQUESTS);
      assertEquals(4, c.manifest().base().orElseThrow().version(),
          "the commit names the published snapshot as its base");
    }
  }

  /**
   * Checkpoint format 1 under a query run (docs/format.md, "Query runs, epochs and
   * generations"): the first load of an instance lists {@code runs/} once, and a run new to the
   * store claims its epoch with two create-only PUTs; a commit is still one PUT, a warm load
   * nothing, a cold load one LIST of the version's prefix; a later run's re-commit of a version
   * costs one GET and one PUT more (and the HEAD of any 412, comparing put ids).
   */
  @Test
  void underAQueryRunACommitIsStillOnePut() throws Exception {
    String location = "s3://commits/runs/state/0/0";
    String runA = java.util.UUID.randomUUID().toString();
    try (SyncedStore s = open("run-a", location, runA)) {
      REQUESTS.clear();
      s.load(0, Optional.empty());
      assertEquals(Map.of("LIST", 1L, "PUT", 2L), kinds(REQUESTS), "claim: " + REQUESTS);
      for (int v = 1; v <= 3; v++) {
        s.put(("k" + v).getBytes(StandardCharsets.UTF_8), new byte[8]);
        REQUESTS.clear();
        s.commit();
        assertEquals(Map.of("PUT", 1L), kinds(REQUESTS), "commit " + v + ": " + REQUESTS);
        REQUESTS.clear();
        s.load(v, Optional.empty());
        assertEquals(List.of(), List.copyOf(REQUESTS), "warm load of version " + v);
      }
    }
    try (SyncedStore same = open("run-a-2", location, runA)) {
      REQUESTS.clear();
      same.load(3, Optional.empty());
      Map<String, Long> k = kinds(REQUESTS);
      assertEquals(3L, k.get("LIST"), "runs/ (this run's epoch), v/<3>/ and b/: " + REQUESTS);
      assertEquals(null, k.get("PUT"), "another instance of the run claims nothing");
    }
    try (SyncedStore b = open("run-b", location, java.util.UUID.randomUUID().toString())) {
      b.load(2, Optional.empty());
      b.put("k3".getBytes(StandardCharsets.UTF_8), new byte[9]);
      REQUESTS.clear();
      CommitResult c = b.commit();
      // a 412, its put-id HEAD, the earlier run's manifest (tail GET), generation 2's PUT
      assertEquals(Map.of("PUT", 2L, "HEAD", 1L, "GET", 1L), kinds(REQUESTS), "re-commit: "
          + REQUESTS);
      assertEquals(io.strata.format.StoreLayout.generationVersionObject(3, 2), c.key());
    }
  }

  /**
   * Removes from {@code requests} those of an instance's first garbage-collection round (the
   * LIST and the ListMultipartUploads of the store's root {@code rootKey}) and returns how many
   * there were.
   */
  private static int firstRound(java.util.Collection<RequestListener.Request> requests,
      String rootKey) {
    int before = requests.size();
    requests.removeIf(r -> r.kind().equals("LIST") && r.key().equals(rootKey));
    return before - requests.size();
  }
}
