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

  private SyncedStore open(String local) {
    return open(local, "s3://commits/ckpt/state/0/0");
  }

  private SyncedStore open(String local, String location) {
    S3Settings s3 = new S3Settings(Optional.of(server.endpoint()), "us-east-1", true,
        Optional.of(S3ProxyServer.ACCESS_KEY), Optional.of(S3ProxyServer.SECRET_KEY),
        Optional.empty(), 3, Duration.ofSeconds(30), Duration.ofSeconds(10), 8);
    ObjectStore objects = ObjectStores.open(location, s3, REQUESTS::add);
    return new SyncedStore(new StoreIdentity(0, 0, "default", location), objects,
        work.resolve(local), new StoreSettings(10, 4, 0, false, SharedMemory.Limits.DEFAULT, GcSettings.DEFAULT), "{}", "{}");
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

  @Test
  void aColdLoadNeverLists() throws Exception {
    try (SyncedStore s = open("b", "s3://commits/cold/state/0/0")) {
      s.load(0, Optional.empty());
      for (int v = 1; v <= 3; v++) {
        s.put(("k" + v).getBytes(StandardCharsets.UTF_8), new byte[8]);
        s.commit();
      }
    }
    REQUESTS.clear();
    try (SyncedStore fresh = open("c", "s3://commits/cold/state/0/0")) {
      fresh.load(3, Optional.empty());
      Map<String, Long> k = kinds(REQUESTS);
      assertEquals(null, k.get("LIST"), "format 1 reads v/<version>.svo directly: " + REQUESTS);
      assertEquals(null, k.get("PUT"));
      assertEquals(null, k.get("HEAD"));
      assertTrue(k.get("GET") >= 1 + 3, "manifest tail + 3 deltas: " + k);
    }
  }
}
