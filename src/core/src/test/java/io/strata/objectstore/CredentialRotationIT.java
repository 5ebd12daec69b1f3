// SPDX-License-Identifier: Apache-2.0
package io.strata.objectstore;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.testkit.CredentialsFiles;
import io.strata.testkit.S3ProxyServer;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 17: a rotated credentials file is picked up without a restart. One object store (one
 * SDK client) reads its keys through the {@code profile} provider from a credentials file; the
 * S3 server is then started again on the same port and objects with new keys only, and the
 * file rewritten with them. The store's next request signs with the new keys; before the file
 * is rewritten the server refuses the old ones, so it is the file that was re-read.
 */
class CredentialRotationIT {
  /** Longer than the SDK's profile-file staleness check (about a second). */
  static final long ROTATION_PICKUP_MS = 2_000;
  @TempDir
  Path tmp;
  private S3ProxyServer server;

  @AfterEach
  void stop() {
    if (server != null) {
      server.close();
    }
  }

  static Map<String, String> identity(String key, String secret) {
    return Map.of("s3proxy.identity", key, "s3proxy.credential", secret);
  }

  @Test
  void aRewrittenCredentialsFileIsUsedByTheSameClientWithoutARestart() throws Exception {
    Path data = tmp.resolve("s3");
    server = S3ProxyServer.start(data, Map.of());
    server.createBucket("rot");
    int port = server.port();
    Path file = tmp.resolve("credentials");
    CredentialsFiles.write(file, "strata", S3ProxyServer.ACCESS_KEY, S3ProxyServer.SECRET_KEY,
        Instant.now().minusSeconds(60));
    S3Settings settings = new S3Settings(Optional.of(server.endpoint()), "us-east-1", true,
        Optional.empty(), Optional.empty(), Optional.empty(), 2, Duration.ofSeconds(30),
        Duration.ofSeconds(10), 4).withCredentials(new S3Credentials(
            List.of(S3Credentials.Provider.PROFILE), Optional.of(file), Optional.of("strata"),
            Optional.empty()));

    try (ObjectStore store = ObjectStores.open("s3://rot/ckpt", settings, null)) {
      store.putIfAbsent("before", ObjectBody.of(bytes("written with the first keys")));

      server.close();
      server = S3ProxyServer.start(data, identity("rotated-key", "rotated-secret"), port);
      IOException refused = assertThrows(IOException.class,
          () -> store.putIfAbsent("stale", ObjectBody.of(bytes("x"))),
          "the server no longer accepts the first keys");
      assertFalse(refused.toString().contains(S3ProxyServer.SECRET_KEY), refused.toString());

      CredentialsFiles.write(file, "strata", "rotated-key", "rotated-secret", Instant.now());
      // The SDK's supplier checks the file's modification time at most about once a second; a
      // real rotation keeps the old keys valid for longer than that after the file is rewritten.
      Thread.sleep(ROTATION_PICKUP_MS);
      store.putIfAbsent("after", ObjectBody.of(bytes("written with the rotated keys")));
      assertArrayEquals(bytes("written with the first keys"), read(store, "before"));
      assertArrayEquals(bytes("written with the rotated keys"), read(store, "after"));
      assertTrue(store.head("stale").isEmpty(), "the refused PUT wrote nothing");
    }
  }

  private static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static byte[] read(ObjectStore store, String key) throws IOException {
    try (InputStream in = store.get(key)) {
      return in.readAllBytes();
    }
  }
}
