// SPDX-License-Identifier: Apache-2.0
package io.strata.objectstore;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.testkit.S3Relay.Fault;
import io.strata.testkit.S3Relay;
import io.strata.testkit.S3ProxyServer;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * {@link S3ObjectStore} through a {@link S3Relay} in front of a real S3Proxy: the ambiguous
 * conditional PUT (applied by the server, answer lost), throttling and errors on a share of the
 * requests, a server that fails everything, and a lost write.
 */
class S3FaultsIT {
  private static Path tmp;
  private static S3ProxyServer server;
  private static S3Client admin;
  private S3Relay proxy;
  private String bucket;
  private final List<RequestListener.Request> attempts = new CopyOnWriteArrayList<>();
  private S3ObjectStore store;

  @BeforeAll
  static void startServer() throws IOException {
    tmp = Files.createTempDirectory("strata-faults-");
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
    bucket = "faults-" + UUID.randomUUID().toString().substring(0, 13);
    server.createBucket(bucket);
    proxy = new S3Relay(server.endpoint(),
        (b, k) -> admin.deleteObject(d -> d.bucket(b).key(k)));
    // short timeouts: one attempt may take 1 s, a whole call 20 s; 4 attempts
    S3Settings s = new S3Settings(Optional.of(proxy.endpoint()), "us-east-1", true,
        Optional.of(S3ProxyServer.ACCESS_KEY), Optional.of(S3ProxyServer.SECRET_KEY),
        Optional.empty(), 4, Duration.ofSeconds(20), Duration.ofSeconds(1), 8);
    store = new S3ObjectStore(SharedS3Clients.lease(s), bucket, "ckpt", attempts::add, 1000);
  }

  @AfterEach
  void close() throws IOException {
    store.close();
    proxy.close();
  }

  private static ObjectBody body(String s) {
    return ObjectBody.of(s.getBytes(UTF_8));
  }

  private static String read(InputStream in) throws IOException {
    try (in) {
      return new String(in.readAllBytes(), UTF_8);
    }
  }

  private String summary() {
    return attempts.stream().map(r -> r.kind() + " " + r.statusCode())
        .collect(Collectors.joining(", ", "[", "]"));
  }

  @Test
  void aCommitSizedPutSendsItsBodyAtOnceAndAMultiMebibytePutAwaitsTheServersGoAhead()
      throws IOException {
    store.putIfAbsent("v/1.svo", ObjectBody.of(new byte[12 * 1024]));
    store.putIfAbsent("v/2.svo", ObjectBody.of(new byte[2 * 1024 * 1024]));
    Map<String, Boolean> expect = proxy.seen().stream()
        .filter(x -> x.request().isPut() && x.request().key().contains("/v/"))
        .collect(Collectors.toMap(x -> x.request().key(), x -> x.request().expectContinue()));
    assertEquals(Map.of("ckpt/v/1.svo", false, "ckpt/v/2.svo", true), expect,
        "Expect: 100-continue only on bodies of at least 1 MiB (the SDK's threshold), so a "
            + "commit's PUT costs one round trip, not two");
    assertEquals(12 * 1024, store.get("v/1.svo").readAllBytes().length);
    assertEquals(2 * 1024 * 1024, store.get("v/2.svo").readAllBytes().length);
  }

  @Test
  void aConditionalPutThatTimedOutAfterTheServerAppliedItIsRecognisedAsOurOwnWrite()
      throws IOException {
    proxy.holdMillis = 3_000; // longer than the 1 s attempt timeout: the SDK times out
    // (the bucket's one-time conditional-write probe runs first and is not faulted)
    proxy.rule(r -> r.isPut() && r.key().endsWith("v/7.svo")
        && proxy.seen().stream().noneMatch(s -> s.request().isPut()
            && s.request().key().endsWith("v/7.svo")) ? Fault.APPLY_THEN_DROP : Fault.NONE);
    store.putIfAbsent("v/7.svo", body("version seven"));
    assertEquals(1, proxy.injected(Fault.APPLY_THEN_DROP), "the first PUT was applied, answer lost");
    assertTrue(Files.exists(server.dataDir().resolve(bucket).resolve("ckpt/v/7.svo")),
        "the first attempt was applied");
    List<String> puts = proxy.seen().stream().filter(s -> s.request().isPut()
        && s.request().key().endsWith("v/7.svo")).map(s -> s.fault().name()).toList();
    assertEquals(List.of("APPLY_THEN_DROP", "NONE"), puts, "the SDK retried the PUT once");
    assertTrue(summary().contains("PUT 412"), "the retry found the object: " + summary());
    assertTrue(summary().endsWith("HEAD 200]"), "and a HEAD read its put id: " + summary());
    assertEquals("version seven", read(store.get("v/7.svo")));

    // Another writer's object under a new key is still a conflict.
    admin.putObject(p -> p.bucket(bucket).key("ckpt/v/8.svo"),
        software.amazon.awssdk.core.sync.RequestBody.fromString("theirs"));
    assertThrows(ObjectAlreadyExistsException.class,
        () -> store.putIfAbsent("v/8.svo", body("mine")));
  }

  @Test
  void aShareOfThrottlingErrorsAndResetsIsRetriedToTheExactResult() throws IOException {
    proxy.rule(S3Relay.randomShare(0.2, 42, Fault.SLOW_DOWN, Fault.INTERNAL_ERROR,
        Fault.RESET));
    for (int i = 0; i < 30; i++) {
      store.putIfAbsent("d/" + i, body("value " + i));
    }
    for (int i = 0; i < 30; i++) {
      assertEquals("value " + i, read(store.get("d/" + i)));
    }
    assertEquals(30, store.list("d/").size());
    int injected = proxy.injected(Fault.SLOW_DOWN) + proxy.injected(Fault.INTERNAL_ERROR)
        + proxy.injected(Fault.RESET);
    assertTrue(injected >= 5, "faults were injected: " + injected);
    long failed = attempts.stream().filter(r -> r.statusCode() >= 500 || r.statusCode() <= 0)
        .count();
    assertTrue(failed >= injected - 2,
        "the listener saw the failed attempts (" + failed + " of " + injected + "): "
            + summary());
  }

  @Test
  void aServerThatThrottlesEverythingFailsWithAClearRetryableError() {
    proxy.rule(r -> Fault.SLOW_DOWN);
    long t0 = System.nanoTime();
    ObjectStoreException e = assertThrows(ObjectStoreException.class,
        () -> store.putIfAbsent("v/1.svo", body("x")));
    long ms = (System.nanoTime() - t0) / 1_000_000;
    String m = e.getMessage();
    assertTrue(m.contains("S3 is throttling requests"), m);
    assertTrue(m.contains("503 SlowDown"), m);
    assertTrue(m.contains("s3://" + bucket + "/ckpt/v/1.svo"), "names bucket and key: " + m);
    assertTrue(m.contains(proxy.endpoint().toString()), "names the endpoint: " + m);
    assertTrue(m.contains("after 4 attempts"), m);
    assertTrue(e.retryable());
    assertTrue(ms < 20_000, "gives up within the retry budget: " + ms + " ms");

    proxy.rule(r -> Fault.INTERNAL_ERROR);
    e = assertThrows(ObjectStoreException.class, () -> store.get("v/1.svo"));
    assertTrue(e.getMessage().contains("S3 is unavailable: 500 InternalError"), e.getMessage());
    proxy.rule(r -> Fault.RESET);
    e = assertThrows(ObjectStoreException.class, () -> store.head("v/1.svo"));
    assertTrue(e.getMessage().contains("S3 is unreachable or unavailable"), e.getMessage());
    proxy.heal();
    assertFalse(Files.exists(server.dataDir().resolve(bucket).resolve("ckpt/v/1.svo")));
  }

  @Test
  void aLostWriteLooksLikeSuccessToTheWriterAndTheObjectIsAbsent() throws IOException {
    // Lose the data write, not the one-time probe's (a lost probe write would read as a server
    // ignoring conditional writes, and the probe would refuse the bucket).
    proxy.rule(r -> r.isPut() && !r.key().contains(ConditionalWriteProbe.PREFIX)
        ? Fault.LOSE_WRITE : Fault.NONE);
    store.putIfAbsent("v/3.svo", body("lost"));
    assertEquals(1, proxy.injected(Fault.LOSE_WRITE));
    proxy.heal();
    assertTrue(store.head("v/3.svo").isEmpty(), "nothing was stored");
    assertThrows(ObjectNotFoundException.class, () -> read(store.get("v/3.svo")));
  }

  @Test
  void aDelayedRequestLongerThanTheAttemptTimeoutIsRetried() throws IOException {
    proxy.delayMillis = 1_500;
    proxy.rule(r -> r.isPut() && r.key().endsWith("v/4.svo") && proxy.injected(Fault.DELAY) == 0
        ? Fault.DELAY : Fault.NONE);
    store.putIfAbsent("v/4.svo", body("late"));
    assertEquals("late", read(store.get("v/4.svo")));
    assertEquals(1, proxy.injected(Fault.DELAY));
  }

  /**
   * Issue 43, part 8: behind a store that hides a new object from GET, HEAD and LIST for 1.5 s
   * after its PUT ({@link S3Relay#lag}), a create-only PUT answered 412
   * whose HEAD misses looks again until the object shows (another writer's: the clear
   * already-exists error, not "has since been deleted"; this write's own, by its put id: done),
   * and a 412 for an object hidden longer than the lookups last fails after them.
   */
  @Test
  void a412ThatALaggingStoreStillHidesIsResolvedByLookingAgain() throws IOException {
    store.putIfAbsent("v/0.svo", body("zero")); // the bucket's probe, before the lag
    proxy.lag(1_500);
    store.putIfAbsent("v/1.svo", body("first"));
    assertFalse(store.list("v/").stream().anyMatch(o -> o.key().endsWith("v/1.svo")),
        "a listing right after the PUT misses it");
    attempts.clear();
    long t0 = System.nanoTime();
    ObjectAlreadyExistsException e = assertThrows(ObjectAlreadyExistsException.class,
        () -> store.putIfAbsent("v/1.svo", body("second")));
    long ms = (System.nanoTime() - t0) / 1_000_000;
    assertTrue(e.getMessage().contains("the object already exists (written by another writer"),
        e.getMessage());
    List<String> kinds = attempts.stream().map(r -> r.kind() + " " + r.statusCode()).toList();
    assertEquals("PUT 412", kinds.get(0), summary());
    assertEquals("HEAD 404", kinds.get(1), "the lag hid it at first: " + summary());
    assertEquals("HEAD 200", kinds.get(kinds.size() - 1), summary());
    assertTrue(kinds.size() <= 1 + S3ObjectStore.LOOKUP_ATTEMPTS, summary());
    assertTrue(ms < S3ObjectStore.lookupBudgetMillis() + 5_000, "bounded: " + ms + " ms");
    assertTrue(proxy.lagged() > 0);

    // The same write's own retry (its first attempt applied): recognised by its put id.
    store.putIfAbsent("v/2.svo", body("two"), "put-2");
    store.putIfAbsent("v/2.svo", body("two"), "put-2");
    assertEquals("two", read(store.get("v/2.svo")));

    // Hidden for longer than the lookups last (as good as gone): answered 412 (the server has
    // it), then every lookup misses; the error says what was tried.
    proxy.lag(60_000);
    store.put("v/4.svo", body("hidden for a minute"));
    long t1 = System.nanoTime();
    ObjectAlreadyExistsException gone = assertThrows(ObjectAlreadyExistsException.class,
        () -> store.putIfAbsent("v/4.svo", body("again")));
    long goneMs = (System.nanoTime() - t1) / 1_000_000;
    assertTrue(gone.getMessage().contains("the object already existed (412 Precondition Failed)"
        + " but " + S3ObjectStore.LOOKUP_ATTEMPTS + " lookups over "
        + S3ObjectStore.lookupBudgetMillis() + " ms did not find it: it has since been deleted,"
        + " or the store's reads lag behind its writes by more than that"), gone.getMessage());
    assertTrue(goneMs >= S3ObjectStore.lookupBudgetMillis(), goneMs + " ms");
  }
}
