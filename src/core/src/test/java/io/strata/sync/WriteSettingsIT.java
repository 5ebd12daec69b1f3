// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.engine.SharedMemory;
import io.strata.objectstore.HeaderRecorder;
import io.strata.objectstore.ObjectBody;
import io.strata.objectstore.ObjectStore;
import io.strata.objectstore.ObjectStores;
import io.strata.objectstore.RequestListener;
import io.strata.objectstore.S3Settings;
import io.strata.objectstore.S3WriteSettings;
import io.strata.testkit.S3ProxyServer;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Server-side encryption and storage class settings reach every write Strata makes: commits
 * (version objects), spills, base snapshots (SSTs and packs) and plain puts, checked on the
 * headers of each attempt as the SDK built it ({@link HeaderRecorder}), against a real
 * S3-compatible server (S3Proxy). S3Proxy's filesystem store rejects any server-side encryption
 * header with 501 NotImplemented (checked below), so the encryption cases record the headers
 * and then strip them before the request is signed and sent; the storage class is sent as is
 * and accepted.
 */
class WriteSettingsIT {
  private static final Set<String> WRITES = Set.of("PutObject", "CreateMultipartUpload");
  private static Path work;
  private static S3ProxyServer server;

  @BeforeAll
  static void start() throws Exception {
    work = Files.createTempDirectory("strata-writes-it");
    server = S3ProxyServer.start(work.resolve("s3"), Map.of());
    server.createBucket("writes");
  }

  @AfterAll
  static void stop() {
    if (server != null) {
      server.close();
    }
  }

  private static S3Settings s3(S3WriteSettings writes) {
    return new S3Settings(Optional.of(server.endpoint()), "us-east-1", true,
        Optional.of(S3ProxyServer.ACCESS_KEY), Optional.of(S3ProxyServer.SECRET_KEY),
        Optional.empty(), 1, Duration.ofSeconds(30), Duration.ofSeconds(10), 8)
        .withWrites(writes);
  }

  /** Commits, spills, snapshots and a plain put; returns the recorded write attempts. */
  private static List<HeaderRecorder.Sent> writeEverything(String name, S3WriteSettings w)
      throws IOException {
    String location = "s3://writes/" + name + "/state/0/0";
    HeaderRecorder.start(!w.serverSideEncryption().equals(S3WriteSettings.SSE_NONE));
    try {
      ObjectStore objects = ObjectStores.open(location, s3(w), RequestListener.NONE);
      try (SyncedStore s = new SyncedStore(new StoreIdentity(0, 0, "default", location), objects,
          work.resolve(name), new StoreSettings(2, 2, 4096, false, SharedMemory.Limits.DEFAULT, GcSettings.DEFAULT), "{}", "{}")) {
        s.load(0, Optional.empty());
        for (int v = 1; v <= 4; v++) {
          for (int i = 0; i < 200; i++) { // > 4 KiB: spills during the batch
            s.put(("key-" + i).getBytes(StandardCharsets.UTF_8),
                ("value-" + v + "-" + i).getBytes(StandardCharsets.UTF_8));
          }
          s.commit();
          s.maintenance();
        }
        assertTrue(s.lastSnapshotVersion() > 0, "a base snapshot was uploaded");
        objects.put("plain-object", ObjectBody.of(new byte[] {1, 2, 3}));
      }
      // the state reads back
      try (SyncedStore r = new SyncedStore(new StoreIdentity(0, 0, "default", location),
          ObjectStores.open(location, s3(w), RequestListener.NONE), work.resolve(name + "-r"),
          new StoreSettings(2, 2, 0, false, SharedMemory.Limits.DEFAULT, GcSettings.DEFAULT), "{}", "{}")) {
        r.load(4, Optional.empty());
        assertArrayEquals("value-4-7".getBytes(StandardCharsets.UTF_8),
            r.get("key-7".getBytes(StandardCharsets.UTF_8)));
      }
      return HeaderRecorder.stop();
    } finally {
      HeaderRecorder.stop();
    }
  }

  private static List<HeaderRecorder.Sent> puts(List<HeaderRecorder.Sent> sent) {
    List<HeaderRecorder.Sent> p = sent.stream().filter(s -> s.operation().equals("PutObject"))
        .toList();
    assertFalse(p.isEmpty(), "PUTs were transmitted");
    return p;
  }

  private static List<HeaderRecorder.Sent> writes(List<HeaderRecorder.Sent> sent) {
    List<HeaderRecorder.Sent> w = sent.stream().filter(s -> WRITES.contains(s.operation()))
        .toList();
    assertFalse(w.isEmpty(), "writes were recorded");
    Set<String> kinds = new java.util.HashSet<>();
    for (HeaderRecorder.Sent s : w) {
      String k = s.key();
      kinds.add(k.contains("/v/") ? "version" : k.contains("/spill/") ? "spill"
          : k.contains("/sst/") ? "sst" : k.contains("/b/") ? "snapshot" : "other");
    }
    assertTrue(kinds.containsAll(Set.of("version", "spill", "snapshot", "other")),
        "commits, spills, base snapshots and plain puts were recorded: " + kinds);
    return w;
  }

  @Test
  void noPayloadChecksumByDefaultAndCrc32OnEveryPutWhenAsked() throws Exception {
    writes(writeEverything("crc-off", S3WriteSettings.DEFAULT));
    List<HeaderRecorder.Sent> off = puts(HeaderRecorder.transmitted());
    for (HeaderRecorder.Sent s : off) {
      assertEquals(null, s.headers().get("x-amz-trailer"), s.toString());
      assertFalse(s.headers().keySet().stream().anyMatch(h -> h.startsWith("x-amz-checksum-")),
          s.toString());
    }
    S3WriteSettings on = new S3WriteSettings("none", Optional.empty(), Optional.empty(), true);
    writes(writeEverything("crc-on", on));
    for (HeaderRecorder.Sent s : puts(HeaderRecorder.transmitted())) {
      assertEquals("x-amz-checksum-crc32", s.headers().get("x-amz-trailer"), s.toString());
    }
  }

  @Test
  void sseS3AndStorageClassOnEveryPut() throws Exception {
    List<HeaderRecorder.Sent> w = writes(writeEverything("sse-s3",
        new S3WriteSettings("AES256", Optional.empty(), Optional.of("STANDARD_IA"))));
    for (HeaderRecorder.Sent s : w) {
      assertEquals("AES256", s.headers().get("x-amz-server-side-encryption"), s.toString());
      assertEquals(null, s.headers().get("x-amz-server-side-encryption-aws-kms-key-id"));
      assertEquals("STANDARD_IA", s.headers().get("x-amz-storage-class"), s.toString());
    }
  }

  @Test
  void sseKmsWithAKeyIdOnEveryPut() throws Exception {
    List<HeaderRecorder.Sent> w = writes(writeEverything("sse-kms",
        new S3WriteSettings("aws:kms", Optional.of("alias/strata-test"),
            Optional.of("INTELLIGENT_TIERING"))));
    for (HeaderRecorder.Sent s : w) {
      assertEquals("aws:kms", s.headers().get("x-amz-server-side-encryption"), s.toString());
      assertEquals("alias/strata-test",
          s.headers().get("x-amz-server-side-encryption-aws-kms-key-id"), s.toString());
      assertEquals("INTELLIGENT_TIERING", s.headers().get("x-amz-storage-class"), s.toString());
    }
  }

  @Test
  void s3ProxyRefusesEncryptionHeadersWithAClearError() throws Exception {
    String location = "s3://writes/refused/state/0/0";
    HeaderRecorder.start(false);
    try (SyncedStore s = new SyncedStore(new StoreIdentity(0, 0, "default", location),
        ObjectStores.open(location, s3(new S3WriteSettings("AES256", Optional.empty(),
            Optional.empty())), RequestListener.NONE), work.resolve("refused"),
        new StoreSettings(2, 2, 0, false, SharedMemory.Limits.DEFAULT, GcSettings.DEFAULT), "{}", "{}")) {
      s.load(0, Optional.empty());
      s.put(new byte[] {1}, new byte[] {2});
      long t0 = System.nanoTime();
      IOException e = org.junit.jupiter.api.Assertions.assertThrows(IOException.class, s::commit);
      assertTrue(System.nanoTime() - t0 < 30_000_000_000L, "not retried for long");
      assertTrue(e.getMessage().contains("s3://writes/refused/state/0/0/v/"), e.getMessage());
      assertTrue(e.getMessage().contains("501 NotImplemented"), e.getMessage());
      assertTrue(e.getMessage().contains("Server-side encryption is not supported"),
          e.getMessage());
    } finally {
      List<HeaderRecorder.Sent> sent = HeaderRecorder.stop();
      assertEquals(1, sent.stream().filter(x -> x.operation().equals("PutObject")).count(),
          "a 501 is not retried: " + sent);
    }
  }

  @Test
  void noHeadersByDefault() throws Exception {
    List<HeaderRecorder.Sent> w = writes(writeEverything("default", S3WriteSettings.DEFAULT));
    for (HeaderRecorder.Sent s : w) {
      assertEquals(null, s.headers().get("x-amz-server-side-encryption"), s.toString());
      assertEquals(null, s.headers().get("x-amz-storage-class"), s.toString());
    }
  }
}
