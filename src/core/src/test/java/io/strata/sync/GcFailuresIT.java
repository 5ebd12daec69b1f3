// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.LogCapture;
import io.strata.engine.SharedMemory;
import io.strata.metrics.GcStats;
import io.strata.objectstore.HeaderRecorder;
import io.strata.objectstore.ObjectBody;
import io.strata.objectstore.ObjectStore;
import io.strata.objectstore.ObjectStores;
import io.strata.objectstore.RequestListener;
import io.strata.objectstore.S3Settings;
import io.strata.objectstore.S3WriteSettings;
import io.strata.testkit.S3Relay;
import io.strata.testkit.S3ProxyServer;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Garbage-collection rounds that fail (DeleteObjects answered 500 by the {@link S3Relay} in
 * front of S3Proxy) are counted and, after {@link GcTrigger#WARN_AFTER_FAILURES} in a row,
 * reported at WARN with the store and the cause; and DeleteObjects carries {@code Content-MD5}
 * (recorded with {@link HeaderRecorder}) unless {@code s3.legacyMd5} is off, with or without
 * {@code s3.payloadChecksums}.
 */
class GcFailuresIT {
  private static final String JUNK = "sst/0123456789abcdef0123456789abcdef.sst";

  private static Path work;
  private static S3ProxyServer server;
  private S3Relay proxy;
  private String bucket;

  @BeforeAll
  static void start() throws Exception {
    work = Files.createTempDirectory("strata-gc-failures-it");
    server = S3ProxyServer.start(work.resolve("s3"), Map.of());
  }

  @AfterAll
  static void stop() {
    if (server != null) {
      server.close();
    }
  }

  @BeforeEach
  void openProxy() throws IOException {
    bucket = "gcf-" + UUID.randomUUID().toString().substring(0, 13);
    server.createBucket(bucket);
    proxy = new S3Relay(server.endpoint(), null);
  }

  @AfterEach
  void closeProxy() throws IOException {
    proxy.close();
  }

  private S3Settings s3(boolean legacyMd5) {
    return s3(legacyMd5, false);
  }

  private S3Settings s3(boolean legacyMd5, boolean payloadChecksums) {
    return new S3Settings(Optional.of(proxy.endpoint()), "us-east-1", true,
        Optional.of(S3ProxyServer.ACCESS_KEY), Optional.of(S3ProxyServer.SECRET_KEY),
        Optional.empty(), 2, Duration.ofSeconds(20), Duration.ofSeconds(5), 8)
        .withWrites(new S3WriteSettings("none", Optional.empty(), Optional.empty(),
            payloadChecksums, legacyMd5));
  }

  private String location() {
    return "s3://" + bucket + "/ckpt/state/0/0";
  }

  /** A store with 3 committed versions; grace period 0, so unreferenced objects go at once. */
  private SyncedStore committedStore(S3Settings s3) throws IOException {
    ObjectStore objects = ObjectStores.open(location(), s3, RequestListener.NONE);
    SyncedStore s = new SyncedStore(new StoreIdentity(0, 0, "default", location()), objects,
        work.resolve("local-" + bucket), new StoreSettings(10, 2, 0, false,
            SharedMemory.Limits.DEFAULT, new GcSettings(true, 2, 1000, 0)),
        "{}", "{}", new OffsetClock());
    s.load(0, Optional.empty());
    TreeMap<String, String> state = new TreeMap<>();
    for (long v = 1; v <= 3; v++) {
      state = GcWorkload.write(s, state, v, "a");
      s.commit();
    }
    // The round the first commit started runs in the background: finished before the test
    // injects its faults, it is not one of the failed rounds the test counts.
    s.awaitLocalIngestion();
    return s;
  }

  private void putJunk(S3Settings s3) throws IOException {
    try (ObjectStore objects = ObjectStores.open(location(), s3, RequestListener.NONE)) {
      objects.put(JUNK, ObjectBody.of(new byte[10]));
    }
  }

  private static boolean isDeleteObjects(S3Relay.Request r) {
    return r.method().equals("POST") && r.query().contains("delete");
  }

  @Test
  void failedRoundsAreCountedAndWarnedAboutNamingTheStoreAndTheCause() throws Exception {
    S3Settings s3 = s3(true);
    try (SyncedStore s = committedStore(s3); LogCapture log = new LogCapture()) {
      putJunk(s3);
      proxy.rule(r -> isDeleteObjects(r) ? S3Relay.Fault.INTERNAL_ERROR
          : S3Relay.Fault.NONE);
      for (int i = 1; i <= 4; i++) {
        IOException e = assertThrows(IOException.class, s::collectGarbage);
        assertTrue(e.getMessage().contains("delete"), e.getMessage());
        assertEquals(i, s.gcFailedRounds(), "failed rounds are counted");
      }
      assertTrue(proxy.injected(S3Relay.Fault.INTERNAL_ERROR) >= 4);
      List<String> warnings = log.lines.stream()
          .filter(l -> l.contains("rounds in a row")).toList();
      assertEquals(1, warnings.size(), "one WARN after 3 failures, none again within the "
          + "interval: " + log.lines);
      String w = warnings.get(0);
      assertTrue(w.startsWith("WARN "), w);
      assertTrue(w.contains("failed 3 rounds in a row"), w);
      assertTrue(w.contains(location()) || w.contains(bucket), "names the store: " + w);
      assertTrue(w.contains("Cannot delete"), "names the cause: " + w);
      assertFalse(w.contains(S3ProxyServer.SECRET_KEY), "never credentials: " + w);

      proxy.heal();
      GcStats ok = s.collectGarbage();
      assertTrue(ok.objectsDeleted() >= 1, "the junk goes once deletes work: " + ok);
      assertEquals(4, s.gcFailedRounds(), "the count is cumulative");
      assertTrue(log.lines.stream().anyMatch(l -> l.contains("succeeded after 4 failed")),
          log.lines.toString());
    }
  }

  @Test
  void deleteObjectsCarriesContentMd5UnlessTurnedOff() throws Exception {
    for (boolean[] c : List.of(new boolean[] {true, false}, new boolean[] {false, false},
        new boolean[] {true, true}, new boolean[] {false, true})) {
      boolean legacyMd5 = c[0];
      S3Settings s3 = s3(legacyMd5, c[1]);
      try (SyncedStore s = committedStore(s3)) {
        putJunk(s3);
        HeaderRecorder.start();
        GcStats stats = s.collectGarbage();
        List<HeaderRecorder.Sent> deletes = HeaderRecorder.transmitted().stream()
            .filter(x -> x.operation().equals("DeleteObjects")).toList();
        assertTrue(stats.objectsDeleted() >= 1, stats.toString());
        assertFalse(deletes.isEmpty(), "a DeleteObjects was sent");
        for (HeaderRecorder.Sent d : deletes) {
          assertEquals(legacyMd5, d.headers().containsKey("content-md5"),
              "s3.legacyMd5=" + legacyMd5 + ", s3.payloadChecksums=" + c[1] + ": "
                  + d.headers());
        }
      } finally {
        HeaderRecorder.stop();
      }
      bucket = "gcf-" + UUID.randomUUID().toString().substring(0, 13);
      server.createBucket(bucket);
    }
  }
}
