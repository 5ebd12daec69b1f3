// SPDX-License-Identifier: Apache-2.0
package io.strata.objectstore;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.strata.testkit.S3ProxyServer;
import io.strata.testkit.S3TestServer;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.Callable;
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
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link S3ObjectStore} against a real S3 server (one server per class, a bucket per test):
 * S3Proxy 4.1.0 here, Adobe's S3Mock in {@link S3MockObjectStoreIT}, which runs every test of
 * this class against it. These are the S3 behaviours Strata relies on: create-only writes and
 * their race, ranged and suffix reads, listings with pagination and with a delimiter,
 * multi-object delete, multipart uploads (and aborting them), server-side encryption headers
 * where the server supports them, and the errors of a wrong key, a missing bucket and an
 * unreachable endpoint.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class S3ObjectStoreIT {
  private static final String PREFIX = "ckpt/q1";
  @TempDir static Path tmp;
  private S3TestServer server;

  private String bucket;
  private S3Settings settings;
  private final Recorder requests = new Recorder();
  private S3ObjectStore store;

  /** The server this class runs against. */
  S3TestServer.Kind kind() {
    return S3TestServer.Kind.S3PROXY;
  }

  @BeforeAll
  void startServer() throws IOException {
    server = kind().start(tmp.resolve("s3-" + kind()));
  }

  @AfterAll
  void stopServer() {
    if (server != null) {
      server.close();
    }
  }

  @BeforeEach
  void createBucketAndStore() {
    bucket = "it-" + UUID.randomUUID().toString().substring(0, 13);
    server.createBucket(bucket);
    if (!server.atomicCreateOnly()) {
      // S3Mock fails the probe's racing rounds (ConditionalWriteProbeRaceIT); the tests here
      // pin everything else against it, create-only writes without races included.
      ConditionalWriteProbe.assumeSupported(server.endpoint().toString(), bucket);
    }
    requests.clear(); // one instance serves every test of the class
    settings = settings(server.endpoint(), S3ProxyServer.SECRET_KEY, 3);
    store = open(settings, bucket, requests, 1000);
  }

  /**
   * Runs the bucket's one-time conditional-write probe ({@link ConditionalWriteProbe}, pinned by
   * ConditionalWriteProbeIT) through a create-only write, then forgets its requests, for tests
   * that count a create's requests from the first one.
   */
  private void probeFirst() throws IOException {
    store.putIfAbsent("probe-first", body("x"));
    requests.clear();
  }

  @AfterEach
  void closeStore() {
    store.close();
  }

  static S3Settings settings(URI endpoint, String secret, int maxAttempts) {
    return new S3Settings(Optional.of(endpoint), "us-east-1", true,
        Optional.of(S3ProxyServer.ACCESS_KEY), Optional.of(secret), Optional.empty(),
        maxAttempts, Duration.ofSeconds(30), Duration.ofSeconds(10), 8);
  }

  static S3ObjectStore open(S3Settings s, String bucket, RequestListener l, int pageSize) {
    return new S3ObjectStore(SharedS3Clients.lease(s), bucket, PREFIX, l, pageSize);
  }

  private static ObjectBody body(String s) {
    return ObjectBody.of(s.getBytes(UTF_8));
  }

  private static String read(InputStream in) throws IOException {
    try (in) {
      return new String(in.readAllBytes(), UTF_8);
    }
  }

  private String location(String key) {
    return "s3://" + bucket + "/" + PREFIX + "/" + key;
  }

  @Test
  void everyMethodRoundTrips() throws IOException {
    store.putIfAbsent("state/0/1.zip", body("one"));
    store.put("state/0/2.zip", body("two!"));
    assertEquals("one", read(store.get("state/0/1.zip")));

    ObjectInfo info = store.head("state/0/1.zip").orElseThrow();
    assertEquals("state/0/1.zip", info.key());
    assertEquals(3, info.size());
    assertTrue(info.lastModifiedMillis() > 0, "last modified is set");
    assertTrue(info.metadata().containsKey(S3ObjectStore.PUT_ID),
        "put id is stored as user metadata, lower-case: " + info.metadata());
    assertTrue(store.head("state/0/none").isEmpty());

    List<ObjectInfo> listed = store.list("state/0/");
    assertEquals(List.of("state/0/1.zip", "state/0/2.zip"), keys(listed));
    assertEquals(4, listed.get(1).size());
    assertEquals(List.of("state/0/1.zip", "state/0/2.zip"), keys(store.list("")));
    assertEquals(List.of(), keys(store.list("other/")));

    store.delete(List.of("state/0/1.zip", "state/0/missing"));
    assertEquals(List.of("state/0/2.zip"), keys(store.list("")));
    store.delete(List.of());
    assertEquals(location("x"), store.describe("x"));
  }

  @Test
  void largeFileBodyRoundTrips() throws IOException {
    byte[] data = new byte[3 * 1024 * 1024 + 17];
    new Random(42).nextBytes(data);
    Path file = tmp.resolve("big-" + bucket);
    Files.write(file, data);
    probeFirst();
    store.putIfAbsent("big", ObjectBody.of(file));
    try (InputStream in = store.get("big")) {
      assertArrayEquals(data, in.readAllBytes());
    }
    RequestListener.Request put = requests.only("PUT");
    assertEquals(data.length, put.bytesSent(), "bytes sent is the payload size");
  }

  @Test
  void putIfAbsentOnATakenKeyThrowsAlreadyExistsNamingTheLocation() throws IOException {
    store.putIfAbsent("v/1", body("first"));
    ObjectAlreadyExistsException e = assertThrows(ObjectAlreadyExistsException.class,
        () -> store.putIfAbsent("v/1", body("second")));
    assertTrue(e.getMessage().contains(location("v/1")), e.getMessage());
    assertTrue(e.getMessage().contains(server.endpoint().toString()), e.getMessage());
    assertFalse(e.retryable());
    assertEquals("first", read(store.get("v/1")), "the loser did not overwrite");
  }

  @Test
  void aRetryOfOurOwnAppliedWriteIsRecognisedByItsPutId() throws IOException {
    store.putIfAbsent("v/2", body("mine"), "put-id-1");
    requests.clear();
    // Same logical write again: what an SDK retry sees after a timeout the server applied.
    store.putIfAbsent("v/2", body("mine"), "put-id-1");
    assertEquals(List.of("PUT 412", "HEAD 200"), requests.summary(),
        "the 412 was resolved by one HEAD");
    assertThrows(ObjectAlreadyExistsException.class,
        () -> store.putIfAbsent("v/2", body("other"), "put-id-2"));
  }

  @Test
  void listenerSeesExactlyOneConditionalPutForOneSmallCreate() throws IOException {
    probeFirst();
    store.putIfAbsent("v/3", body("hello"));
    assertEquals(1, requests.all.size(), "one HTTP request: " + requests.summary());
    RequestListener.Request r = requests.all.get(0);
    assertEquals("PUT", r.kind());
    assertEquals("PUT", r.method());
    assertEquals(bucket, r.bucket());
    assertEquals(PREFIX + "/v/3", r.key(), "the full key, with the store's prefix");
    assertTrue(r.conditional(), "If-None-Match was sent");
    assertEquals(200, r.statusCode());
    assertEquals(5, r.bytesSent());

    requests.clear();
    store.put("v/4", body("x"));
    assertFalse(requests.only("PUT").conditional(), "a plain put is unconditional");
    requests.clear();
    store.head("v/4");
    read(store.get("v/4"));
    store.list("v/");
    store.delete(List.of("v/4"));
    assertEquals(List.of("HEAD 200", "GET 200", "LIST 200", "DELETE 200"), requests.summary());
  }

  /** Rounds of {@link #racingCreatesHaveExactlyOneWinner}, each on its own key. */
  static final int RACE_ROUNDS = 20;

  @Test
  void racingCreatesHaveExactlyOneWinner() throws Exception {
    assumeTrue(server.atomicCreateOnly(), server.kind() + " does not make create-only writes "
        + "atomic (docs/operations.md#s3-servers)");
    int writers = 8;
    ExecutorService pool = Executors.newFixedThreadPool(writers);
    try {
      for (int round = 0; round < RACE_ROUNDS; round++) {
        String key = "race/" + round;
        CountDownLatch go = new CountDownLatch(1);
        List<Future<Boolean>> results = new ArrayList<>();
        for (int i = 0; i < writers; i++) {
          String content = "writer-" + i;
          Callable<Boolean> task = () -> {
            go.await();
            try {
              store.putIfAbsent(key, body(content));
              return true;
            } catch (ObjectAlreadyExistsException lost) {
              return false;
            }
          };
          results.add(pool.submit(task));
        }
        go.countDown();
        List<Integer> winners = new ArrayList<>();
        for (int i = 0; i < writers; i++) {
          if (results.get(i).get()) {
            winners.add(i);
          }
        }
        assertEquals(1, winners.size(), "round " + round + ": exactly one winner: " + winners);
        assertEquals("writer-" + winners.get(0), read(store.get(key)), "the winner's content");
      }
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void rangedAndTailReads() throws IOException {
    store.put("r", body("0123456789"));
    assertEquals("234", read(store.getRange("r", 2, 3)));
    assertEquals("89", read(store.getRange("r", 8, 100)), "a range past the end is clamped");
    assertEquals("789", new String(store.getTail("r", 3), UTF_8));
    assertEquals("0123456789", new String(store.getTail("r", 64), UTF_8));
    ObjectStoreException past = assertThrows(ObjectStoreException.class,
        () -> read(store.getRange("r", 10, 5)));
    assertFalse(past.retryable(), "416 is not retryable: " + past.getMessage());
    assertTrue(past.getMessage().contains("416"), past.getMessage());

    store.put("empty", ObjectBody.of(new byte[0]));
    assertEquals("", read(store.get("empty")));
    assertArrayEquals(new byte[0], store.getTail("empty", 8));
  }

  @Test
  void partialReadThenCloseDoesNotBreakTheClient() throws IOException {
    byte[] data = new byte[1024 * 1024];
    store.put("p", ObjectBody.of(data));
    try (InputStream in = store.get("p")) {
      assertEquals(0, in.read());
    }
    assertEquals(1024 * 1024, store.head("p").orElseThrow().size());
  }

  @Test
  void readingAReturnedStreamIsNotCutByTheCallTimeout() throws Exception {
    S3Settings shortCalls = new S3Settings(Optional.of(server.endpoint()), "us-east-1", true,
        Optional.of(S3ProxyServer.ACCESS_KEY), Optional.of(S3ProxyServer.SECRET_KEY),
        Optional.empty(), 1, Duration.ofMillis(4000), Duration.ofMillis(3000), 2);
    store.put("slow", ObjectBody.of(new byte[256 * 1024]));
    try (S3ObjectStore s = open(shortCalls, bucket, requests, 1000);
        InputStream in = s.get("slow")) {
      assertEquals(0, in.read());
      Thread.sleep(5000); // longer than both timeouts, which bound only getting the response
      assertEquals(256 * 1024 - 1, in.readAllBytes().length,
          "the timeouts bound getting the response, not reading it");
    }
  }

  @Test
  void missingObjectsAreNotFound() throws IOException {
    ObjectNotFoundException e =
        assertThrows(ObjectNotFoundException.class, () -> store.get("no/such"));
    assertTrue(e.getMessage().contains(location("no/such")), e.getMessage());
    assertTrue(e.getMessage().contains(server.endpoint().toString()), e.getMessage());
    assertThrows(ObjectNotFoundException.class, () -> store.getRange("no/such", 0, 4));
    assertThrows(ObjectNotFoundException.class, () -> store.getTail("no/such", 4));
    assertTrue(store.head("no/such").isEmpty());
  }

  @Test
  void listFollowsPagination() throws IOException {
    try (S3ObjectStore small = open(settings, bucket, requests, 2)) {
      List<String> expected = new ArrayList<>();
      for (int i = 0; i < 7; i++) {
        small.put("page/" + i, body("x"));
        expected.add("page/" + i);
      }
      requests.clear();
      assertEquals(expected, keys(small.list("page/")));
      assertEquals(4, requests.all.size(), "7 keys at 2 per page: " + requests.summary());
    }
  }

  @Test
  void deleteSpansBatches() throws IOException {
    List<String> keys = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      store.put("del/" + i, body("x"));
      keys.add("del/" + i);
    }
    // More keys than one DeleteObjects request takes, mostly missing (which is not an error).
    List<String> many = new ArrayList<>(keys);
    for (int i = 0; i < S3ObjectStore.DELETE_BATCH; i++) {
      many.add("del/missing-" + i);
    }
    requests.clear();
    store.delete(many);
    assertEquals(List.of("DELETE 200", "DELETE 200"), requests.summary());
    assertEquals(List.of(), store.list("del/"));
  }

  @Test
  void abortIncompleteUploadsAbortsOnlyOldUploadsUnderThePrefix() throws IOException {
    try (SharedS3Clients.Lease lease = SharedS3Clients.lease(settings)) {
      software.amazon.awssdk.services.s3.S3Client s3 = lease.client();
      String insideKey = PREFIX + "/spill/x.sst";
      String inside = s3.createMultipartUpload(b -> b.bucket(bucket).key(insideKey)).uploadId();
      s3.uploadPart(b -> b.bucket(bucket).key(insideKey).uploadId(inside).partNumber(1),
          software.amazon.awssdk.core.sync.RequestBody.fromBytes(new byte[1024]));
      String outside = s3.createMultipartUpload(b -> b.bucket(bucket).key("other/y")).uploadId();
      long now = System.currentTimeMillis();
      requests.clear();
      assertEquals(0, store.abortIncompleteUploads("", now - 3_600_000L),
          "an upload initiated less than an hour ago is left alone");
      assertEquals(List.of("LIST 200"), requests.summary());
      requests.clear();
      assertEquals(0, store.abortIncompleteUploads("v/", now + 60_000L), "another prefix");
      assertEquals(1, store.abortIncompleteUploads("", now + 60_000L));
      assertEquals("DELETE", requests.all.get(requests.all.size() - 1).kind(),
          "AbortMultipartUpload: " + requests.summary());
      List<String> left = s3.listMultipartUploads(b -> b.bucket(bucket)).uploads().stream()
          .map(software.amazon.awssdk.services.s3.model.MultipartUpload::key).toList();
      assertEquals(List.of("other/y"), left, "an upload outside the store's prefix stays");
      assertEquals(0, store.abortIncompleteUploads("", now + 60_000L));
      s3.abortMultipartUpload(b -> b.bucket(bucket).key("other/y").uploadId(outside));
    }
  }

  @Test
  void wrongCredentialsAreNotRetryableAndNeverPrinted() {
    assumeTrue(server.verifiesSignatures(), server.kind() + " accepts any signature");
    String secret = "wrong-secret-" + UUID.randomUUID();
    try (S3ObjectStore bad = open(settings(server.endpoint(), secret, 3), bucket, requests,
        1000)) {
      ObjectStoreException e = assertThrows(ObjectStoreException.class,
          () -> bad.putIfAbsent("k", body("x")));
      assertFalse(e.retryable(), e.getMessage());
      assertFalse(e instanceof ObjectAlreadyExistsException);
      assertTrue(e.getMessage().contains(bucket), e.getMessage());
      assertTrue(e.getMessage().contains(server.endpoint().toString()), e.getMessage());
      assertTrue(e.getMessage().contains("403"), e.getMessage());
      assertTrue(e.getMessage().contains("check the credentials (static keys)"),
          "names where the credentials came from: " + e.getMessage());
      assertFalse(stackTrace(e).contains(secret), "the secret appears nowhere in the trace");
      assertEquals(1, requests.all.size(), "a 403 is not retried: " + requests.summary());
      assertThrows(ObjectStoreException.class, () -> bad.list(""));
    }
  }

  @Test
  void missingBucketIsAClearPermanentError() {
    String missing = bucket + "-missing";
    try (S3ObjectStore nowhere = open(settings, missing, requests, 1000)) {
      for (ThrowingCall call : List.<ThrowingCall>of(
          () -> nowhere.putIfAbsent("k", body("x")),
          () -> nowhere.list(""),
          () -> nowhere.get("k"),
          () -> nowhere.head("k"))) {
        ObjectStoreException e = assertThrows(ObjectStoreException.class, call::run);
        assertFalse(e.retryable(), e.getMessage());
        assertFalse(e instanceof ObjectNotFoundException, "not 'no such object': " + e);
        assertTrue(e.getMessage().contains("s3://" + missing + "/"), e.getMessage());
        assertTrue(e.getMessage().contains("bucket does not exist"), e.getMessage());
        assertTrue(e.getMessage().contains(server.endpoint().toString()), e.getMessage());
      }
    }
  }

  /**
   * An endpoint that never answered is not retried (issue 46, {@link FailFastHttpClient}): one
   * attempt, not retryable, naming the endpoint and the bucket.
   */
  @Test
  void anEndpointThatNeverAnsweredFailsAtOnceWithoutRetries() throws IOException {
    int closedPort;
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      closedPort = s.getLocalPort();
    }
    URI dead = URI.create("http://127.0.0.1:" + closedPort);
    S3Settings fast = new S3Settings(Optional.of(dead), "us-east-1", true,
        Optional.of(S3ProxyServer.ACCESS_KEY), Optional.of(S3ProxyServer.SECRET_KEY),
        Optional.empty(), 2, Duration.ofSeconds(5), Duration.ofSeconds(2), 2);
    try (S3ObjectStore unreachable = open(fast, bucket, requests, 1000)) {
      long start = System.nanoTime();
      ObjectStoreException e = assertThrows(ObjectStoreException.class,
          () -> unreachable.putIfAbsent("k", body("x")));
      long ms = (System.nanoTime() - start) / 1_000_000;
      assertFalse(e.retryable(), e.getMessage());
      assertTrue(e.getMessage().contains(dead.toString()), e.getMessage());
      assertTrue(e.getMessage().contains(bucket), e.getMessage());
      assertTrue(e.getMessage().contains("the endpoint cannot be reached"), e.getMessage());
      assertTrue(ms < 5_000, "failed fast: " + ms + " ms");
      assertEquals(List.of("PUT -1"), requests.summary(),
          "one attempt, reported without a status, of the 2 allowed");
    }
  }

  @Test
  void storesWithEqualSettingsShareOneClientAndSeeOnlyTheirOwnRequests() throws IOException {
    assertEquals(1, SharedS3Clients.leases(settings), "this test's store holds one lease");
    Recorder other = new Recorder();
    S3ObjectStore second = open(settings, bucket, other, 1000);
    software.amazon.awssdk.services.s3.S3Client shared;
    try (SharedS3Clients.Lease a = SharedS3Clients.lease(settings);
        SharedS3Clients.Lease b = SharedS3Clients.lease(settings)) {
      shared = a.client();
      assertSame(shared, b.client(), "equal settings share one client");
      assertEquals(4, SharedS3Clients.leases(settings));
      requests.clear();
      second.put("shared", body("x"));
      assertEquals(List.of("PUT 200"), other.summary());
      assertEquals(List.of(), requests.summary(), "the other store's listener saw nothing");
    } finally {
      second.close();
      second.close(); // idempotent
    }
    assertEquals(1, SharedS3Clients.leases(settings));
    store.close();
    assertEquals(0, SharedS3Clients.leases(settings), "last release closed and evicted it");
    try (SharedS3Clients.Lease fresh = SharedS3Clients.lease(settings)) {
      assertNotSame(shared, fresh.client(), "a new lease builds a new client");
    }
  }

  @Test
  void delimitedListingsReturnOneLevelAcrossPages() throws IOException {
    try (S3ObjectStore small = open(settings, bucket, requests, 2)) {
      for (String k : List.of("b/2", "a", "b/10", "b/1", "c/d/e", "b1", "ab", "b/x/y")) {
        small.put(k, body(k));
      }
      requests.clear();
      DelimitedListing top = small.listDelimited("");
      assertEquals(List.of("a", "ab", "b1"), keys(top.objects()));
      assertEquals(List.of("b/", "c/"), top.commonPrefixes());
      // S3 pages by entries (5 at 2 a page: 3 requests); S3Mock counts differently, and repeats
      // a common prefix on each page it spans, which the store folds into one.
      assertTrue(requests.all.size() >= 2, "followed the pages: " + requests.summary());
      DelimitedListing b = small.listDelimited("b/");
      assertEquals(List.of("b/1", "b/10", "b/2"), keys(b.objects()));
      assertEquals(List.of("b/x/"), b.commonPrefixes());
      DelimitedListing bare = small.listDelimited("b");
      assertEquals(List.of("b1"), keys(bare.objects()), "siblings sharing the prefix");
      assertEquals(List.of("b/"), bare.commonPrefixes());
    }
  }

  @Test
  void aMultipartUploadReadsBackWholeAndAcrossItsPartBoundary() throws IOException {
    byte[] part1 = new byte[5 * 1024 * 1024]; // S3's smallest part but the last
    byte[] part2 = new byte[1234];
    new Random(7).nextBytes(part1);
    new Random(8).nextBytes(part2);
    String key = PREFIX + "/mp/object";
    try (SharedS3Clients.Lease lease = SharedS3Clients.lease(settings)) {
      software.amazon.awssdk.services.s3.S3Client s3 = lease.client();
      String id = s3.createMultipartUpload(b -> b.bucket(bucket).key(key)).uploadId();
      String e1 = s3.uploadPart(b -> b.bucket(bucket).key(key).uploadId(id).partNumber(1),
          software.amazon.awssdk.core.sync.RequestBody.fromBytes(part1)).eTag();
      String e2 = s3.uploadPart(b -> b.bucket(bucket).key(key).uploadId(id).partNumber(2),
          software.amazon.awssdk.core.sync.RequestBody.fromBytes(part2)).eTag();
      s3.completeMultipartUpload(b -> b.bucket(bucket).key(key).uploadId(id)
          .multipartUpload(u -> u.parts(
              software.amazon.awssdk.services.s3.model.CompletedPart.builder().partNumber(1)
                  .eTag(e1).build(),
              software.amazon.awssdk.services.s3.model.CompletedPart.builder().partNumber(2)
                  .eTag(e2).build())));
    }
    byte[] whole = new byte[part1.length + part2.length];
    System.arraycopy(part1, 0, whole, 0, part1.length);
    System.arraycopy(part2, 0, whole, part1.length, part2.length);
    assertEquals(whole.length, store.head("mp/object").orElseThrow().size());
    try (InputStream in = store.get("mp/object")) {
      assertArrayEquals(whole, in.readAllBytes());
    }
    try (InputStream in = store.getRange("mp/object", part1.length - 10, 20)) {
      assertArrayEquals(java.util.Arrays.copyOfRange(whole, part1.length - 10,
          part1.length + 10), in.readAllBytes(), "a range across the part boundary");
    }
    assertArrayEquals(part2, store.getTail("mp/object", part2.length));
  }

  @Test
  void serverSideEncryptionIsStoredWhereSupportedAndRefusedClearlyElsewhere()
      throws IOException {
    S3Settings sse = settings.withWrites(new S3WriteSettings(S3WriteSettings.SSE_S3,
        Optional.empty(), Optional.empty()));
    try (S3ObjectStore encrypted = open(sse, bucket, requests, 1000)) {
      if (server.supportsServerSideEncryption()) {
        encrypted.putIfAbsent("sse/1", body("secret state"));
        assertEquals("secret state", read(encrypted.get("sse/1")));
        try (software.amazon.awssdk.services.s3.S3Client raw = server.client()) {
          assertEquals(software.amazon.awssdk.services.s3.model.ServerSideEncryption.AES256,
              raw.headObject(b -> b.bucket(bucket).key(PREFIX + "/sse/1"))
                  .serverSideEncryption(), "the server recorded SSE-S3");
        }
      } else {
        ObjectStoreException e = assertThrows(ObjectStoreException.class,
            () -> encrypted.put("sse/1", body("x")));
        assertTrue(e.getMessage().contains("501"), e.getMessage());
        assertFalse(e.retryable(), e.getMessage());
        assertTrue(store.head("sse/1").isEmpty(), "nothing was written");
      }
    }
  }

  @Test
  void useAfterCloseIsAnIllegalStateException() {
    store.close();
    assertThrows(IllegalStateException.class, () -> store.put("k", body("x")));
  }

  private static String stackTrace(Throwable t) {
    StringWriter w = new StringWriter();
    t.printStackTrace(new PrintWriter(w));
    return w.toString();
  }

  private static List<String> keys(List<ObjectInfo> infos) {
    return infos.stream().map(ObjectInfo::key).collect(Collectors.toList());
  }

  @FunctionalInterface
  interface ThrowingCall {
    void run() throws IOException;
  }

  /** Records every attempt; thread-safe. */
  static final class Recorder implements RequestListener {
    final List<Request> all = new CopyOnWriteArrayList<>();

    @Override
    public void onRequest(Request request) {
      all.add(request);
    }

    void clear() {
      all.clear();
    }

    List<String> summary() {
      return all.stream().map(r -> r.kind() + " " + r.statusCode()).collect(Collectors.toList());
    }

    Request only(String kind) {
      List<Request> of = all.stream().filter(r -> r.kind().equals(kind)).toList();
      assertEquals(1, of.size(), "one " + kind + ": " + summary());
      return of.get(0);
    }
  }
}
