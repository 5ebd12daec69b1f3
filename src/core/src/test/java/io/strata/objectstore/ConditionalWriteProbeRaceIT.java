// SPDX-License-Identifier: Apache-2.0
package io.strata.objectstore;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.testkit.S3ProxyServer;
import io.strata.testkit.S3TestServer;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.services.s3.model.S3Object;

/**
 * Issue 43, part 3: {@link ConditionalWriteProbe}'s racing rounds against real servers. S3Mock
 * 4.11 refuses a create-only PUT sent after another but lets several racing ones win: it is
 * refused in every one of {@value #PROBES} fresh probes (the verdict forgotten in between), each
 * naming the endpoint, the bucket and how many of how many won. S3Proxy, whose create-only write
 * is atomic, passes every one of {@value #PROBES} probes at {@link ConditionalWriteProbe#REQUESTS}
 * requests each. Prints which race caught S3Mock in each probe (the measure behind {@link
 * ConditionalWriteProbe#RACES}).
 */
class ConditionalWriteProbeRaceIT {
  /** Fresh probes per server. */
  static final int PROBES = 20;

  private static Path tmp;
  private static S3TestServer s3mock;
  private static S3TestServer s3proxy;

  @BeforeAll
  static void start() throws IOException {
    tmp = Files.createTempDirectory("strata-probe-race-");
    s3mock = S3TestServer.Kind.S3MOCK.start(tmp.resolve("s3mock"));
    s3proxy = S3TestServer.Kind.S3PROXY.start(tmp.resolve("s3proxy"));
  }

  @AfterAll
  static void stop() {
    if (s3mock != null) {
      s3mock.close();
    }
    if (s3proxy != null) {
      s3proxy.close();
    }
  }

  private static S3ObjectStore store(S3TestServer server, String bucket,
      List<RequestListener.Request> requests) {
    S3Settings settings = new S3Settings(Optional.of(server.endpoint()), "us-east-1", true,
        Optional.of(server.accessKey()), Optional.of(server.secretKey()), Optional.empty(), 3,
        Duration.ofSeconds(30), Duration.ofSeconds(10), 16);
    return new S3ObjectStore(SharedS3Clients.lease(settings), bucket, "ckpt/state/0/0",
        requests::add, 1000);
  }

  private static List<String> keys(S3TestServer server, String bucket) {
    return server.client().listObjectsV2Paginator(l -> l.bucket(bucket)).contents().stream()
        .map(S3Object::key).sorted().collect(Collectors.toList());
  }

  @Test
  void aServerWhoseCreateOnlyWriteIsNotAtomicIsRefusedInEveryProbe() throws IOException {
    String bucket = "race-" + UUID.randomUUID().toString().substring(0, 13);
    s3mock.createBucket(bucket);
    String endpoint = s3mock.endpoint().toString();
    Pattern seen = Pattern.compile(": ([0-9]+) of " + ConditionalWriteProbe.RACERS
        + " racing create-only PUTs \\(If-None-Match: \\*\\) of the new key s3://" + bucket
        + "/ckpt/state/0/0/" + Pattern.quote(ConditionalWriteProbe.PREFIX)
        + "[-0-9a-f]+-race([0-9]+) won \\(race \\2 of " + ConditionalWriteProbe.RACES
        + "\\); exactly 1 must win");
    int[] caughtInRace = new int[ConditionalWriteProbe.RACES + 1];
    List<Integer> winners = new ArrayList<>();
    for (int probe = 0; probe < PROBES; probe++) {
      ConditionalWriteProbe.forget(endpoint, bucket);
      List<RequestListener.Request> requests = new CopyOnWriteArrayList<>();
      try (S3ObjectStore store = store(s3mock, bucket, requests)) {
        ConditionalWritesUnsupportedException e = assertThrows(
            ConditionalWritesUnsupportedException.class,
            () -> store.putIfAbsent("v/" + UUID.randomUUID() + ".svo", body("x")),
            "probe " + probe + " of S3Mock: " + ConditionalWriteProbeIT.summary(requests));
        String m = e.getMessage();
        assertTrue(m.startsWith("Cannot use S3 endpoint " + endpoint + " bucket " + bucket
            + " for Strata: "), m);
        Matcher match = seen.matcher(m);
        assertTrue(match.find(), m);
        int won = Integer.parseInt(match.group(1));
        assertTrue(won >= 2 && won <= ConditionalWriteProbe.RACERS, m);
        assertFalse(e.retryable());
        caughtInRace[Integer.parseInt(match.group(2))]++;
        winners.add(won);
        assertFalse(requests.stream().anyMatch(r -> r.kind().equals("PUT")
            && !r.key().contains(ConditionalWriteProbe.PREFIX)), "the create itself was not sent");
      }
    }
    // A probe stops at the first race that caught the server, in the round that ran it; the
    // first round's races ran at once, so "caught by race 1" is the share one race catches.
    System.out.printf("S3Mock: of %d probes, caught by race 1..%d: %s; winners seen: %s%n",
        PROBES, ConditionalWriteProbe.RACES, java.util.Arrays.toString(
            java.util.Arrays.copyOfRange(caughtInRace, 1, caughtInRace.length)), winners);
    assertEquals(List.of(), keys(s3mock, bucket), "every probe object was deleted");
  }

  @Test
  void aServerWhoseCreateOnlyWriteIsAtomicPassesEveryProbe() throws IOException {
    String bucket = "race-" + UUID.randomUUID().toString().substring(0, 13);
    s3proxy.createBucket(bucket);
    String endpoint = s3proxy.endpoint().toString();
    List<String> created = new ArrayList<>();
    for (int probe = 0; probe < PROBES; probe++) {
      ConditionalWriteProbe.forget(endpoint, bucket);
      List<RequestListener.Request> requests = new CopyOnWriteArrayList<>();
      try (S3ObjectStore store = store(s3proxy, bucket, requests)) {
        String key = "v/" + probe + ".svo";
        store.putIfAbsent(key, body("x"));
        created.add("ckpt/state/0/0/" + key);
        assertEquals(ConditionalWriteProbeIT.honoured("PUT 200"),
            ConditionalWriteProbeIT.summary(requests), "probe " + probe + " of S3Proxy");
        assertEquals(ConditionalWriteProbe.REQUESTS + 1, requests.size());
        assertTrue(ConditionalWriteProbe.verified(endpoint, bucket));
      }
    }
    created.sort(null);
    assertEquals(created, keys(s3proxy, bucket), "every probe object was deleted");
    assertTrue(S3ProxyServer.class.isInstance(s3proxy));
  }

  private static ObjectBody body(String s) {
    return ObjectBody.of(s.getBytes(UTF_8));
  }
}
