// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import io.strata.objectstore.ObjectStore;
import io.strata.objectstore.ObjectStores;
import io.strata.objectstore.RequestListener;
import io.strata.objectstore.S3Settings;
import io.strata.testkit.S3ProxyServer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/** {@link LoadEmptyContract} on a real S3-compatible server (S3Proxy on loopback). */
class LoadEmptyIT extends LoadEmptyContract {
  private static S3ProxyServer server;

  @BeforeAll
  static void start() throws Exception {
    Path work = Files.createTempDirectory("strata-load-empty-it");
    server = S3ProxyServer.start(work.resolve("s3"), Map.of());
    server.createBucket("load-empty");
  }

  @AfterAll
  static void stop() {
    if (server != null) {
      server.close();
    }
  }

  @Override
  ObjectStore objects(String root) {
    S3Settings s3 = new S3Settings(Optional.of(server.endpoint()), "us-east-1", true,
        Optional.of(S3ProxyServer.ACCESS_KEY), Optional.of(S3ProxyServer.SECRET_KEY),
        Optional.empty(), 3, Duration.ofSeconds(30), Duration.ofSeconds(10), 8);
    return ObjectStores.open(root, s3, RequestListener.NONE);
  }

  @Override
  String root(String test) {
    return "s3://load-empty/" + test + "-" + System.nanoTime() + "/state/0/1";
  }
}
