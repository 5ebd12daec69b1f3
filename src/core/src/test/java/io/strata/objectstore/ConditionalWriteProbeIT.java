// SPDX-License-Identifier: Apache-2.0
package io.strata.objectstore;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.testkit.S3Relay.Fault;
import io.strata.testkit.S3Relay;
import io.strata.testkit.S3ProxyServer;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * {@link ConditionalWriteProbe} against a real S3Proxy behind a {@link S3Relay}: on a server
 * that honours {@code If-None-Match: *} the probe costs its {@value ConditionalWriteProbe#REQUESTS}
 * requests once per JVM, endpoint and bucket and later creates cost one PUT; on a server that
 * ignores it ({@link Fault#IGNORE_CONDITIONAL}) every create-only write fails at once with the
 * clear error and nothing is written or overwritten; a probe object that cannot be deleted is
 * left with a WARN; an SDK retry of the probe's own applied PUT does not fool it; a probe that
 * cannot decide (S3 throttling) is not kept; a server that drops user metadata is a verdict too. Every test uses a new bucket: verdicts are JVM-wide.
 */
class ConditionalWriteProbeIT {
  private static Path tmp;
  private static S3ProxyServer server;
  private static S3Client admin;
  private S3Relay proxy;
  private String bucket;
  private S3Settings settings;
  private final List<RequestListener.Request> requests = new CopyOnWriteArrayList<>();
  private final List<S3ObjectStore> stores = new ArrayList<>();

  @BeforeAll
  static void startServer() throws IOException {
    tmp = Files.createTempDirectory("strata-probe-");
    server = S3ProxyServer.start(tmp.resolve("s3"), Map.of());
    admin = server.client();
  }

  @AfterAll
  static void stopServer() {
    if (admin != null) {
      admin.close();
    }
    if (server != null) {
      server.close();
    }
  }

  @BeforeEach
  void open() throws IOException {
    bucket = "probe-" + UUID.randomUUID().toString().substring(0, 13);
    server.createBucket(bucket);
    proxy = new S3Relay(server.endpoint(),
        (b, k) -> admin.deleteObject(d -> d.bucket(b).key(k)));
    // 1 s per attempt, 4 attempts: the faults below resolve within seconds
    settings = new S3Settings(Optional.of(proxy.endpoint()), "us-east-1", true,
        Optional.of(S3ProxyServer.ACCESS_KEY), Optional.of(S3ProxyServer.SECRET_KEY),
        Optional.empty(), 4, Duration.ofSeconds(20), Duration.ofSeconds(1), 8);
  }

  @AfterEach
  void close() throws IOException {
    stores.forEach(S3ObjectStore::close);
    proxy.close();
  }

  private S3ObjectStore store(String prefix) {
    S3ObjectStore s = new S3ObjectStore(SharedS3Clients.lease(settings), bucket, prefix,
        requests::add, 1000);
    stores.add(s);
    return s;
  }

  private static ObjectBody body(String s) {
    return ObjectBody.of(s.getBytes(UTF_8));
  }

  private String read(String fullKey) throws IOException {
    try (InputStream in = admin.getObject(g -> g.bucket(bucket).key(fullKey))) {
      return new String(in.readAllBytes(), UTF_8);
    }
  }

  /** Every key in the bucket, read directly from the server (not through the proxy). */
  private List<String> bucketKeys() {
    return admin.listObjectsV2Paginator(l -> l.bucket(bucket)).contents().stream()
        .map(o -> o.key()).sorted().collect(Collectors.toList());
  }

  private static boolean isProbe(RequestListener.Request r) {
    return r.key().contains(ConditionalWriteProbe.PREFIX)
        || (r.kind().equals("DELETE") && r.key().isEmpty()); // DeleteObjects names no key
  }

  /**
   * "KIND status" per request; the racing PUTs of one race of the probe (key ending in {@code
   * -race<n>}, in any order) become one entry "RACE w won r refused" where its first PUT was.
   */
  static List<String> summary(List<RequestListener.Request> rs) {
    List<String> out = new ArrayList<>();
    Map<String, int[]> rounds = new java.util.LinkedHashMap<>();
    Map<String, Integer> at = new java.util.HashMap<>();
    for (RequestListener.Request r : rs) {
      if (r.kind().equals("PUT") && r.key().matches(".*-race[0-9]+")) {
        int[] c = rounds.computeIfAbsent(r.key(), k -> new int[3]);
        c[r.statusCode() == 200 ? 0 : r.statusCode() == 412 ? 1 : 2]++;
        at.computeIfAbsent(r.key(), k -> {
          out.add(k);
          return out.size() - 1;
        });
      } else {
        out.add(r.kind() + " " + r.statusCode());
      }
    }
    for (Map.Entry<String, Integer> e : at.entrySet()) {
      int[] c = rounds.get(e.getKey());
      out.set(e.getValue(), "RACE " + c[0] + " won " + c[1] + " refused"
          + (c[2] > 0 ? " " + c[2] + " other" : ""));
    }
    return out;
  }

  /**
   * The summary of a probe on a server that honours conditional writes atomically, followed by
   * {@code after}.
   */
  static List<String> honoured(String... after) {
    List<String> l = new ArrayList<>(List.of("PUT 200", "PUT 412", "HEAD 200"));
    int perRound = ConditionalWriteProbe.RACES / ConditionalWriteProbe.ROUNDS;
    for (int i = 0; i < ConditionalWriteProbe.ROUNDS * perRound; i++) {
      l.add("RACE 1 won " + (ConditionalWriteProbe.RACERS - 1) + " refused");
    }
    for (int i = 0; i < ConditionalWriteProbe.RACES; i++) {
      l.add("HEAD 200");
    }
    l.add("DELETE 200");
    l.addAll(List.of(after));
    return l;
  }

  @Test
  void anHonouringServerCostsTheProbeOnceThenOnePutPerCreate() throws IOException {
    S3ObjectStore store = store("ckpt/state/0/0");
    store.putIfAbsent("v/1.svo", body("one"));
    List<RequestListener.Request> first = List.copyOf(requests);
    assertEquals(honoured("PUT 200"),
        summary(first), "the probe (" + ConditionalWriteProbe.REQUESTS + " requests), then the"
            + " create: " + first);
    assertEquals(ConditionalWriteProbe.REQUESTS, first.stream().filter(r -> isProbe(r)).count());
    String probeKey = first.get(0).key();
    assertTrue(probeKey.startsWith("ckpt/state/0/0/" + ConditionalWriteProbe.PREFIX),
        "the probe object is under the store's root: " + probeKey);
    assertTrue(first.get(0).conditional() && first.get(1).conditional(),
        "both probe PUTs are create-only");
    assertEquals(first.get(0).key(), first.get(1).key(), "the same key twice");
    assertEquals(List.of("ckpt/state/0/0/v/1.svo"), bucketKeys(), "the probe object is gone");
    assertTrue(ConditionalWriteProbe.verified(proxy.endpoint().toString(), bucket));

    // Later creates, by this store or any other store of the bucket: one PUT each.
    requests.clear();
    store.putIfAbsent("v/2.svo", body("two"));
    store("ckpt/state/0/1").putIfAbsent("v/1.svo", body("other partition"));
    assertEquals(List.of("PUT 200", "PUT 200"), summary(requests));
    requests.clear();
    store.put("plain", body("x"));
    assertEquals(List.of("PUT 200"), summary(requests), "a plain put is never probed");
  }

  @Test
  void anIgnoringServerFailsEveryCreateAtOnceAndNothingIsOverwritten() throws Exception {
    proxy.rule(r -> Fault.IGNORE_CONDITIONAL);
    // A committed version object (the winner); a zombie attempt then tries to create it again.
    admin.putObject(p -> p.bucket(bucket).key("ckpt/state/0/0/v/1.svo"),
        RequestBody.fromString("winner"));
    S3ObjectStore store = store("ckpt/state/0/0");
    ConditionalWritesUnsupportedException e = assertThrows(
        ConditionalWritesUnsupportedException.class,
        () -> store.putIfAbsent("v/1.svo", body("zombie")));
    String m = e.getMessage();
    assertTrue(m.startsWith("Cannot use S3 endpoint " + proxy.endpoint() + " bucket " + bucket
        + " for Strata: a second create-only PUT (If-None-Match: *) of s3://" + bucket
        + "/ckpt/state/0/0/" + ConditionalWriteProbe.PREFIX), m);
    assertTrue(m.contains("succeeded instead of failing with 412 Precondition Failed; this server"
        + " ignores conditional writes, which Strata needs"), m);
    assertTrue(m.contains("docs/operations.md#a-server-that-ignores-conditional-writes"), m);
    assertFalse(e.retryable(), "never retried");
    assertFalse(ObjectAlreadyExistsException.class.isInstance(e), "not a lost race");
    assertFalse(stackTrace(e).contains(S3ProxyServer.SECRET_KEY), "no credentials");
    assertEquals(List.of("PUT 200", "PUT 200", "DELETE 200"), summary(requests),
        "the probe's two PUTs both succeeded; its object was deleted; the zombie sent nothing");
    assertEquals("winner", read("ckpt/state/0/0/v/1.svo"), "the committed object is unchanged");
    assertEquals(List.of("ckpt/state/0/0/v/1.svo"), bucketKeys(), "nothing else was written");

    // The verdict is kept: later creates of any store of the bucket fail with no request.
    requests.clear();
    S3ObjectStore other = store("ckpt/state/0/1");
    ConditionalWritesUnsupportedException again = assertThrows(
        ConditionalWritesUnsupportedException.class,
        () -> other.putIfAbsent("v/1.svo", body("x")));
    assertEquals(m, again.getMessage());
    assertEquals(List.of(), summary(requests), "no request for a known verdict");
    assertEquals(List.of("ckpt/state/0/0/v/1.svo"), bucketKeys());
  }

  @Test
  void concurrentFirstWritersWaitForOneProbe() throws Exception {
    proxy.rule(r -> Fault.IGNORE_CONDITIONAL);
    int writers = 8;
    ExecutorService pool = Executors.newFixedThreadPool(writers);
    try {
      CountDownLatch go = new CountDownLatch(1);
      List<Future<Throwable>> results = new ArrayList<>();
      for (int i = 0; i < writers; i++) {
        S3ObjectStore s = store("ckpt/state/0/" + i);
        results.add(pool.submit(() -> {
          go.await();
          try {
            s.putIfAbsent("v/1.svo", body("x"));
            return null;
          } catch (IOException failed) {
            return failed;
          }
        }));
      }
      go.countDown();
      for (Future<Throwable> f : results) {
        assertInstanceOf(ConditionalWritesUnsupportedException.class, f.get());
      }
    } finally {
      pool.shutdownNow();
    }
    assertEquals(2, requests.stream().filter(r -> r.kind().equals("PUT")).count(),
        "one probe (two PUTs) for eight writers: " + summary(requests));
    assertEquals(List.of(), bucketKeys());
  }

  @Test
  void aProbeObjectThatCannotBeDeletedIsLeftWithAWarning() throws IOException {
    // DeleteObjects is POST /bucket?delete: refuse it, as a policy without s3:DeleteObject does
    proxy.rule(r -> r.method().equals("POST") && r.query().contains("delete")
        ? Fault.ACCESS_DENIED : Fault.NONE);
    S3ObjectStore store = store("ckpt/state/0/0");
    store.putIfAbsent("v/1.svo", body("one"));
    List<String> expected = honoured("PUT 200");
    expected.set(expected.size() - 2, "DELETE 403");
    assertEquals(expected, summary(requests));
    List<String> keys = bucketKeys();
    assertEquals(2 + ConditionalWriteProbe.RACES, keys.size(), keys.toString());
    assertTrue(keys.get(0).startsWith("ckpt/state/0/0/" + ConditionalWriteProbe.PREFIX), keys
        .toString());
    assertTrue(Files.size(server.dataDir().resolve(bucket).resolve(keys.get(0))) < 100,
        "the probe object is tiny");
    assertEquals("one", read("ckpt/state/0/0/v/1.svo"));
  }

  @Test
  void anSdkRetryOfTheProbesOwnAppliedPutDoesNotFoolIt() throws IOException {
    // 3 s per attempt (a loaded machine must answer a PUT within it), answers held for 8 s
    settings = new S3Settings(Optional.of(proxy.endpoint()), "us-east-1", true,
        Optional.of(S3ProxyServer.ACCESS_KEY), Optional.of(S3ProxyServer.SECRET_KEY),
        Optional.empty(), 4, Duration.ofSeconds(40), Duration.ofSeconds(3), 8);
    proxy.holdMillis = 8_000;
    // The first probe PUT is applied but its answer lost; its retry meets the object (412).
    proxy.rule(r -> r.isPut() && r.key().contains(ConditionalWriteProbe.PREFIX)
        && proxy.injected(Fault.APPLY_THEN_DROP) == 0 ? Fault.APPLY_THEN_DROP : Fault.NONE);
    S3ObjectStore store = store("ckpt/state/0/0");
    store.putIfAbsent("v/1.svo", body("one"));
    List<String> answered = summary(requests).stream().filter(a -> !a.endsWith(" -1")).toList();
    assertEquals("PUT -1", summary(requests).get(0), "the first probe PUT's answer was lost");
    // Normally the retry meets the applied object: 412, resolved by its put id (HEAD). On a
    // very slow server the retry can overtake the held attempt and create the object itself.
    List<String> retryMet412 = honoured("PUT 200");
    retryMet412.set(0, "PUT 412");
    retryMet412.add(1, "HEAD 200");
    List<String> retryCreated = honoured("PUT 200");
    assertTrue(answered.equals(retryMet412) || answered.equals(retryCreated),
        "the retry's 412 was recognised as the probe's own write, the second PUT was refused: "
            + summary(requests));
    assertTrue(ConditionalWriteProbe.verified(proxy.endpoint().toString(), bucket));
    assertEquals(List.of("ckpt/state/0/0/v/1.svo"), bucketKeys());

    // The same retry on a server that ignores the header still gets the verdict.
    requests.clear();
    String ignoring = "probe-" + UUID.randomUUID().toString().substring(0, 13);
    server.createBucket(ignoring);
    bucket = ignoring;
    int[] probePuts = {0};
    proxy.rule(r -> {
      if (!(r.isPut() && r.key().contains(ConditionalWriteProbe.PREFIX))) {
        return Fault.NONE;
      }
      return ++probePuts[0] == 1 ? Fault.APPLY_THEN_DROP : Fault.IGNORE_CONDITIONAL;
    });
    S3ObjectStore other = store("ckpt/state/0/0");
    assertThrows(ConditionalWritesUnsupportedException.class,
        () -> other.putIfAbsent("v/1.svo", body("one")));
    assertEquals(List.of(), bucketKeys());
  }

  @Test
  void aBucketRootedStorePutsTheProbeAtTheCheckpointRoot() throws IOException {
    S3ObjectStore store = store(""); // as the checkpoint file manager opens s3://bucket
    store.putIfAbsent("ckpt/offsets/0", body("v1"));
    assertTrue(requests.get(0).key().startsWith("ckpt/" + ConditionalWriteProbe.PREFIX),
        "out of offsets/, which Spark's verifyCheckpointDirectoryEmptyOnStart requires empty: "
            + requests.get(0).key());
    assertEquals(List.of("ckpt/offsets/0"), bucketKeys());
  }

  @Test
  void probesOfSparksCheckpointDirectoriesGoToTheCheckpointRoot() {
    assertEquals("ckpt/", ProbeRequests.checkpointDirOf("ckpt/offsets/"));
    assertEquals("a/b/ckpt/", ProbeRequests.checkpointDirOf("a/b/ckpt/commits/"));
    assertEquals("ckpt/", ProbeRequests.checkpointDirOf("ckpt/sources/0/"));
    assertEquals("", ProbeRequests.checkpointDirOf("sources/12/"));
    assertEquals("", ProbeRequests.checkpointDirOf("offsets/"));
    assertEquals("ckpt/", ProbeRequests.checkpointDirOf("ckpt/"));
    assertEquals("", ProbeRequests.checkpointDirOf(""));
    assertEquals("ckpt/mysources/1/", ProbeRequests.checkpointDirOf("ckpt/mysources/1/"));
    assertEquals("ckpt/sources/x/", ProbeRequests.checkpointDirOf("ckpt/sources/x/"));
  }

  @Test
  void aServerThatDropsUserMetadataFailsEveryCreateAtOnce() throws Exception {
    proxy.rule(r -> Fault.DROP_METADATA);
    S3ObjectStore store = store("ckpt/state/0/0");
    ConditionalWritesUnsupportedException e = assertThrows(
        ConditionalWritesUnsupportedException.class,
        () -> store.putIfAbsent("v/1.svo", body("one")));
    String m = e.getMessage();
    assertTrue(m.startsWith("Cannot use S3 endpoint " + proxy.endpoint() + " bucket " + bucket
        + " for Strata: s3://" + bucket + "/ckpt/state/0/0/" + ConditionalWriteProbe.PREFIX), m);
    assertTrue(m.contains("but a HEAD of it returns no such metadata"), m);
    assertEquals(List.of("PUT 200", "PUT 412", "HEAD 200", "DELETE 200"), summary(requests));
    assertEquals(List.of(), bucketKeys(), "the probe object was deleted, nothing written");

    // A verdict, kept: the next create fails with no request (no probe on every write).
    requests.clear();
    assertThrows(ConditionalWritesUnsupportedException.class,
        () -> store.putIfAbsent("v/1.svo", body("one")));
    assertEquals(List.of(), summary(requests));
  }

  @Test
  void aProbeThatCannotDecideIsNotKept() throws IOException {
    proxy.rule(r -> Fault.SLOW_DOWN);
    S3ObjectStore store = store("ckpt/state/0/0");
    ObjectStoreException e = assertThrows(ObjectStoreException.class,
        () -> store.putIfAbsent("v/1.svo", body("one")));
    assertFalse(e instanceof ConditionalWritesUnsupportedException, e.getMessage());
    assertTrue(e.retryable(), e.getMessage());
    assertTrue(e.getMessage().startsWith("Cannot create s3://" + bucket
        + "/ckpt/state/0/0/v/1.svo at " + proxy.endpoint() + ": could not first check"),
        e.getMessage());
    assertTrue(e.getMessage().contains("503 SlowDown"), e.getMessage());
    assertFalse(ConditionalWriteProbe.verified(proxy.endpoint().toString(), bucket));

    proxy.heal();
    requests.clear();
    store.putIfAbsent("v/1.svo", body("one"));
    assertEquals(honoured("PUT 200"), summary(requests), "the next create probes again");
  }

  private static String stackTrace(Throwable t) {
    StringWriter w = new StringWriter();
    t.printStackTrace(new PrintWriter(w));
    return w.toString();
  }
}
