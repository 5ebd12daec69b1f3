// SPDX-License-Identifier: Apache-2.0
package io.strata.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.util.Map;
import org.junit.jupiter.api.Test;

class DemoOptionsTest {
  @Test
  void defaultsUseStrataAndALocalS3Proxy() {
    DemoOptions o = DemoOptions.parse();

    assertEquals(DemoOptions.STRATA_PROVIDER, o.provider());
    assertTrue(o.localS3Proxy());
    assertEquals(8, o.partitions());
    assertEquals(32, o.files());
    assertEquals(16, o.stopAfterFiles());
    assertEquals(0, o.maxRows());
    assertFalse(o.hardStop());
  }

  @Test
  void anEmptyArgumentFromAnEmptyPropertyIsIgnored() {
    assertEquals(DemoOptions.parse(), DemoOptions.parse(""));
  }

  @Test
  void s3TargetWithStaticCredentials() {
    DemoOptions o =
        DemoOptions.parse(
            "--checkpoint", "s3://bucket/prefix",
            "--endpoint", "http://127.0.0.1:9000",
            "--region", "eu-west-1",
            "--access-key", "k",
            "--secret-key", "s",
            "--path-style",
            "--conf", "spark.x=a=b");

    CheckpointTarget t = CheckpointTarget.fromOptions(o, "run1");

    assertEquals("s3://bucket/prefix/run1", t.root());
    assertEquals("s3://bucket/prefix/run1/routes", t.queryCheckpoint("routes"));
    Map<String, String> c = t.sparkConf();
    assertEquals("io.strata.checkpoint.StrataCheckpointFileManager",
        c.get("spark.sql.streaming.checkpointFileManagerClass"),
        "Spark's own checkpoint files go through Strata by default");
    assertTrue(c.keySet().stream().noneMatch(k -> k.startsWith("spark.hadoop.fs.s3")),
        "no Hadoop S3A settings needed: " + c.keySet());
    assertEquals("http://127.0.0.1:9000",
        c.get("spark.sql.streaming.stateStore.strata.s3.endpoint"));
    assertEquals("eu-west-1", c.get("spark.sql.streaming.stateStore.strata.s3.region"));
    assertEquals("true", c.get("spark.sql.streaming.stateStore.strata.s3.pathStyleAccess"));
    assertEquals("k", c.get("spark.sql.streaming.stateStore.strata.s3.accessKeyId"));
    assertEquals("s", c.get("spark.sql.streaming.stateStore.strata.s3.secretAccessKey"));
    assertEquals("a=b", o.conf().get("spark.x"));
    assertFalse(t.toString().contains("k,") || t.toString().contains(" s "), t.toString());
  }

  @Test
  void aCheckpointAndEndpointTurnTheDemosOwnS3ProxyOff() {
    DemoOptions o =
        DemoOptions.parse(
            "--checkpoint", "s3://strata/flights", "--endpoint", "http://minio:9000",
            "--path-style");

    assertFalse(o.localS3Proxy(), "S3Proxy must not start when --checkpoint is given");
  }

  @Test
  void s3aCheckpointFilesGoThroughHadoopS3a() {
    DemoOptions o =
        DemoOptions.parse(
            "--checkpoint", "s3://bucket/prefix",
            "--endpoint", "http://127.0.0.1:9000",
            "--region", "eu-west-1",
            "--access-key", "k",
            "--secret-key", "s",
            "--path-style",
            "--s3a-checkpoint-files");

    Map<String, String> c = CheckpointTarget.fromOptions(o, "run1").sparkConf();

    assertFalse(c.containsKey("spark.sql.streaming.checkpointFileManagerClass"));
    assertEquals("http://127.0.0.1:9000", c.get("spark.hadoop.fs.s3a.endpoint"));
    assertEquals("false", c.get("spark.hadoop.fs.s3a.connection.ssl.enabled"));
    assertEquals("true", c.get("spark.hadoop.fs.s3a.path.style.access"));
    assertEquals("eu-west-1", c.get("spark.hadoop.fs.s3a.endpoint.region"));
    assertEquals("org.apache.hadoop.fs.s3a.S3AFileSystem", c.get("spark.hadoop.fs.s3.impl"));
    assertEquals("k", c.get("spark.hadoop.fs.s3a.access.key"));
    assertEquals("k", c.get("spark.sql.streaming.stateStore.strata.s3.accessKeyId"));
  }

  @Test
  void withoutKeysTheDefaultCredentialChainIsLeftAlone() {
    DemoOptions o = DemoOptions.parse("--checkpoint", "s3a://bucket/p", "--s3a-checkpoint-files");

    Map<String, String> c = CheckpointTarget.fromOptions(o, "r").sparkConf();

    assertFalse(c.containsKey("spark.hadoop.fs.s3a.access.key"));
    assertFalse(c.containsKey("spark.hadoop.fs.s3a.aws.credentials.provider"));
    assertFalse(c.containsKey("spark.sql.streaming.stateStore.strata.s3.accessKeyId"));
    assertFalse(c.containsKey("spark.hadoop.fs.s3a.endpoint"));
  }

  @Test
  void fileCheckpointsBecomeAbsolute() {
    DemoOptions o = DemoOptions.parse("--checkpoint", "file:/tmp/ckpt");

    CheckpointTarget t = CheckpointTarget.fromOptions(o, "r");

    assertEquals(URI.create("file:///tmp/ckpt/r"), URI.create(t.root()));
    assertTrue(t.sparkConf().isEmpty());
  }

  @Test
  void helpIsNotAnError() {
    DemoOptions.HelpRequested h =
        assertThrows(DemoOptions.HelpRequested.class, () -> DemoOptions.parse("--help"));
    assertTrue(h.getMessage().contains("--checkpoint"), h.getMessage());
  }

  @Test
  void badOptionsSayWhatIsWrong() {
    assertThrows(IllegalArgumentException.class, () -> DemoOptions.parse("--bogus"));
    assertThrows(IllegalArgumentException.class, () -> DemoOptions.parse("--files"));
    assertThrows(IllegalArgumentException.class, () -> DemoOptions.parse("--files", "x"));
    assertThrows(
        IllegalArgumentException.class, () -> DemoOptions.parse("--checkpoint", "hdfs://x/y"));
    assertThrows(
        IllegalArgumentException.class, () -> DemoOptions.parse("--endpoint", "http://x"));
    assertThrows(
        IllegalArgumentException.class,
        () -> DemoOptions.parse("--checkpoint", "s3://b/p", "--access-key", "k"));
    assertThrows(
        IllegalArgumentException.class, () -> DemoOptions.parse("--files", "4", "--stop-after",
            "4"));
  }

  /**
   * {@code --serve} keeps the demo's own S3 server (and so the run) after the run, and the
   * printed command reads the checkpoint with the tool's own options (issue 46).
   */
  @Test
  void serveKeepsTheRunAndTheCommandUsesTheToolsOptions() {
    DemoOptions o = DemoOptions.parse("--serve");
    assertTrue(o.serve() && o.keep(), "--serve implies --keep");
    IllegalArgumentException e = org.junit.jupiter.api.Assertions.assertThrows(
        IllegalArgumentException.class,
        () -> DemoOptions.parse("--serve", "--checkpoint", "s3://b/p"));
    assertTrue(e.getMessage().contains("--serve"), e.getMessage());

    String local = ToolCommand.describe("s3://strata-demo/run/routes", o,
        java.util.Optional.of("http://127.0.0.1:9001"), java.util.List.of("ak", "sk"));
    assertTrue(local.matches("java -jar src/tools/target/strata-tools-.+\\.jar describe "
        + "s3://strata-demo/run/routes --endpoint http://127.0.0.1:9001 --path-style "
        + "--access-key ak --secret-key sk"), local);

    DemoOptions remote = DemoOptions.parse("--checkpoint", "s3://b/p", "--endpoint",
        "http://minio:9000", "--path-style", "--access-key", "AK", "--secret-key", "real-secret");
    String cmd = ToolCommand.describe("s3://b/p/run/routes", remote, java.util.Optional.empty(),
        java.util.List.of());
    assertTrue(cmd.endsWith("describe s3://b/p/run/routes --endpoint http://minio:9000 "
        + "--path-style --access-key YOUR_ACCESS_KEY --secret-key YOUR_SECRET_KEY"), cmd);
    assertFalse(cmd.contains("real-secret") || cmd.contains(" AK"), "a user's keys are never "
        + "printed");

    // Parity with the hand parser it replaced (found by a review).
    assertEquals(java.util.Optional.of("-hx"), DemoOptions.parse("--checkpoint", "s3://b/p",
        "--access-key", "AK", "--secret-key", "-hx").secretKey(), "a secret like an option");
    assertThrows(IllegalArgumentException.class, () -> DemoOptions.parse("--conf", "=v"));
    assertEquals(java.util.Optional.of(""), DemoOptions.parse("--region", "", "--checkpoint",
        "s3://b/p").region(), "an empty value is a value");
  }
}
