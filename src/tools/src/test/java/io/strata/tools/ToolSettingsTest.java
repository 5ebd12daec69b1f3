// SPDX-License-Identifier: Apache-2.0
package io.strata.tools;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** How the tool reports settings it cannot use. */
class ToolSettingsTest {
  /** A missing --conf-file: exit 2, naming the file, the reason and the expected format. */
  @Test
  void aMissingConfFileSaysWhy() {
    ToolFixtures.Run r = ToolFixtures.tool("describe", "s3://bucket/ckpt", "--conf-file",
        "/nonexistent/strata.conf");
    assertEquals(StrataTool.EXIT_USAGE, r.code(), r::toString);
    assertTrue(r.err().contains("Cannot read --conf-file /nonexistent/strata.conf: no such "
        + "file (a file of 'key value' or 'key=value' lines"), r.err());
  }

  /**
   * The demo's credential options work in the tool as well (issue 46): the keys reach the S3
   * settings, and the secret is never printed, here in the message of a refused endpoint.
   */
  @Test
  void theDemosCredentialOptionsSetTheKeys() throws Exception {
    CommonOptions o = new CommonOptions();
    o.accessKey = "demo-access";
    o.secretKey = "demo-secret-never-printed";
    io.strata.objectstore.S3Settings s = ToolSettings.from(o).strata("s3://bucket/ckpt").s3();
    assertEquals("demo-access", s.accessKeyId().orElseThrow());
    assertEquals("demo-secret-never-printed", s.secretAccessKey().orElseThrow());

    int port;
    try (java.net.ServerSocket closed = new java.net.ServerSocket(0)) {
      port = closed.getLocalPort();
    }
    long t0 = System.nanoTime();
    ToolFixtures.Run r = ToolFixtures.tool("describe", "s3://bucket/ckpt", "--endpoint",
        "http://127.0.0.1:" + port, "--path-style", "--access-key", "demo-access",
        "--secret-key", "demo-secret-never-printed");
    long ms = (System.nanoTime() - t0) / 1_000_000;
    assertTrue(r.code() != 0, r::toString);
    assertTrue(r.err().contains("the endpoint cannot be reached"), r.err());
    assertTrue(ms < 10_000, "a refused endpoint fails in seconds, not after the back-off: "
        + ms + " ms");
    assertTrue(!(r.err() + r.out()).contains("demo-secret-never-printed"), r::toString);
  }

  /**
   * A directory of several queries' checkpoints (one flights demo run) is not a checkpoint; the
   * message names the queries under it (a new user's stumble).
   */
  @Test
  void aDirectoryOfQueriesCheckpointsNamesThem(@org.junit.jupiter.api.io.TempDir
      java.nio.file.Path tmp) throws Exception {
    for (String q : java.util.List.of("routes", "airport_hours")) {
      java.nio.file.Files.createDirectories(tmp.resolve(q).resolve("offsets"));
      java.nio.file.Files.writeString(tmp.resolve(q).resolve("offsets").resolve("0"), "v1");
    }
    ToolFixtures.Run r = ToolFixtures.tool("describe", tmp.toString());
    assertEquals(StrataTool.EXIT_UNREADABLE, r.code(), r::toString);
    assertTrue(r.err().contains("it holds the checkpoints of airport_hours, routes: give one of "
        + "them"), r.err());
  }

  /** A mistyped --secret-key never prints the secret after it (found by a review). */
  @Test
  void aMistypedSecretOptionDoesNotEchoTheSecret() {
    ToolFixtures.Run r = ToolFixtures.tool("describe", "s3://bucket/ckpt", "--secret-kye",
        "never-printed-secret");
    assertEquals(StrataTool.EXIT_USAGE, r.code(), r::toString);
    assertTrue(r.err().contains("unknown option --secret-kye") && r.err().contains(
        "--secret-key"), r.err());
    assertTrue(!(r.err() + r.out()).contains("never-printed-secret"), r::toString);
  }
}
