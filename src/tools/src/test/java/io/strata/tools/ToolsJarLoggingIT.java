// SPDX-License-Identifier: Apache-2.0
package io.strata.tools;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.testkit.S3ProxyServer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The README's debug recipe on the tools jar as users run it ({@code java
 * -Dio.strata.shaded.org.slf4j.simpleLogger.defaultLogLevel=debug -jar ...}) against a real S3
 * server, with temporary credentials: Strata's DEBUG lines show, the session token, the secret
 * key and the signature header never do (the bundled HTTP client's header and wire logs and the
 * SDK signer's canonical request stay at INFO unless named; before, the token showed in 3
 * lines of 220). One S3Proxy and one child JVM, about 10 s.
 */
class ToolsJarLoggingIT {
  @TempDir Path tmp;

  @Test
  void aDebugRunNeverLogsTheSessionTokenOrTheSecret() throws Exception {
    String token = "FAKESESSIONTOKEN0123456789";
    try (S3ProxyServer server = S3ProxyServer.start(tmp.resolve("s3"), Map.of())) {
      server.createBucket("logs-bucket");
      Path err = tmp.resolve("stderr.txt");
      Path jar = Path.of(System.getProperty("strata.tools.jar", "missing"));
      assertTrue(Files.isRegularFile(jar), "the tools jar (mvn package): " + jar);
      Process p = new ProcessBuilder(List.of(
          Path.of(System.getProperty("java.home"), "bin", "java").toString(),
          "-Dio.strata.shaded.org.slf4j.simpleLogger.defaultLogLevel=debug",
          "-jar", jar.toString(), "describe", "s3://logs-bucket/ckpt",
          "--conf", "spark.sql.streaming.stateStore.strata.s3.endpoint=" + server.endpoint(),
          "--conf", "spark.sql.streaming.stateStore.strata.s3.pathStyleAccess=true",
          "--conf", "spark.sql.streaming.stateStore.strata.s3.accessKeyId="
              + S3ProxyServer.ACCESS_KEY,
          "--conf", "spark.sql.streaming.stateStore.strata.s3.secretAccessKey="
              + S3ProxyServer.SECRET_KEY,
          "--conf", "spark.sql.streaming.stateStore.strata.s3.sessionToken=" + token,
          "--conf", "spark.sql.streaming.stateStore.strata.s3.maxAttempts=1"))
          .redirectErrorStream(true).redirectOutput(err.toFile()).start();
      assertTrue(p.waitFor(120, TimeUnit.SECONDS), "the tool ended");
      String log = Files.readString(err, StandardCharsets.UTF_8);
      assertTrue(log.lines().anyMatch(l -> l.contains("DEBUG io.strata.")
          && !l.contains("DEBUG io.strata.shaded.")), "Strata's own DEBUG lines show:\n" + log);
      assertFalse(log.contains(token), "the session token is logged:\n" + log);
      assertFalse(log.contains(S3ProxyServer.SECRET_KEY), "the secret is logged");
      assertFalse(log.toLowerCase(java.util.Locale.ROOT).contains("signature="),
          "a signature is logged");
    }
  }
}
