// SPDX-License-Identifier: Apache-2.0
package io.strata.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.List;
import java.util.Map;
import org.apache.spark.SparkConf;
import org.junit.jupiter.api.Test;

/** Which master the demo runs on, and the session settings for this machine and a cluster. */
class FlightsDemoSessionTest {
  private static final Path LOCAL = Paths.get("/work/run-1/local");
  private static final String CLUSTER = "spark://spark-master:7077";

  /** Settings that only make sense when the executors share this machine. */
  private static final List<String> THIS_MACHINE_ONLY =
      List.of(
          "spark.ui.enabled",
          "spark.driver.bindAddress",
          "spark.driver.host",
          "spark.local.dir",
          "spark.sql.streaming.stateStore.strata.localDir");

  private static DemoOptions minio(String... more) {
    String[] base = {
      "--checkpoint", "s3://strata/flights", "--endpoint", "http://minio:9000", "--path-style"
    };
    String[] all = new String[base.length + more.length];
    System.arraycopy(base, 0, all, 0, base.length);
    System.arraycopy(more, 0, all, base.length, more.length);
    return DemoOptions.parse(all);
  }

  @Test
  void withoutASetMasterTheDemoRunsInThisJvm() {
    assertEquals("local[2]", FlightsDemo.master(new SparkConf(false)));
    assertEquals("local[2]", FlightsDemo.master(new SparkConf(false).set("spark.master", " ")));
  }

  @Test
  void aMasterSetBySparkSubmitIsUsed() {
    assertEquals(CLUSTER, FlightsDemo.master(new SparkConf(false).set("spark.master", CLUSTER)));
    assertEquals(
        "local[4]", FlightsDemo.master(new SparkConf(false).set("spark.master", "local[4]")));
  }

  @Test
  void localMastersRunOnThisMachine() {
    assertTrue(FlightsDemo.onThisMachine("local"));
    assertTrue(FlightsDemo.onThisMachine("local[2]"));
    assertTrue(FlightsDemo.onThisMachine("local-cluster[2,1,1024]"));
    assertFalse(FlightsDemo.onThisMachine(CLUSTER));
    assertFalse(FlightsDemo.onThisMachine("yarn"));
  }

  @Test
  void onThisMachineTheDriverIsOnLoopbackAndLocalStateUnderTheRunDirectory() {
    DemoOptions o = minio("--partitions", "4");

    Map<String, String> c =
        FlightsDemo.sessionConf(
            "local[2]", LOCAL, o, CheckpointTarget.fromOptions(o, "run-1"));

    assertEquals("false", c.get("spark.ui.enabled"));
    assertEquals("127.0.0.1", c.get("spark.driver.bindAddress"));
    assertEquals("127.0.0.1", c.get("spark.driver.host"));
    assertEquals(LOCAL.resolve("spark").toString(), c.get("spark.local.dir"));
    assertEquals(
        LOCAL.resolve("strata").toString(),
        c.get("spark.sql.streaming.stateStore.strata.localDir"));
    assertEquals("4", c.get("spark.sql.shuffle.partitions"));
    assertEquals(DemoOptions.STRATA_PROVIDER, c.get(FlightsDemo.PROVIDER_CLASS));
  }

  @Test
  void onAClusterTheDriverAddressUiAndLocalDirectoriesAreLeftToTheCluster() {
    DemoOptions o = minio();

    Map<String, String> c =
        FlightsDemo.sessionConf(CLUSTER, LOCAL, o, CheckpointTarget.fromOptions(o, "run-1"));

    for (String key : THIS_MACHINE_ONLY) {
      assertFalse(c.containsKey(key), key + " must not be set on a cluster: " + c.keySet());
    }
    assertEquals("8", c.get("spark.sql.shuffle.partitions"));
    assertEquals("UTC", c.get("spark.sql.session.timeZone"));
    assertEquals(DemoOptions.STRATA_PROVIDER, c.get(FlightsDemo.PROVIDER_CLASS));
    assertEquals(
        "http://minio:9000", c.get("spark.sql.streaming.stateStore.strata.s3.endpoint"));
    assertEquals("true", c.get("spark.sql.streaming.stateStore.strata.s3.pathStyleAccess"));
    assertFalse(
        c.containsKey("spark.sql.streaming.stateStore.strata.s3.accessKeyId"),
        "without --access-key the AWS default chain (environment) supplies the credentials");
  }

  @Test
  void confOptionsComeLastAndWin() {
    DemoOptions o =
        minio(
            "--conf", "spark.sql.streaming.stateStore.strata.s3.endpoint=http://other:9000",
            "--conf", "spark.sql.shuffle.partitions=3");

    Map<String, String> c =
        FlightsDemo.sessionConf(CLUSTER, LOCAL, o, CheckpointTarget.fromOptions(o, "run-1"));

    assertEquals(
        "http://other:9000", c.get("spark.sql.streaming.stateStore.strata.s3.endpoint"));
    assertEquals("3", c.get("spark.sql.shuffle.partitions"));
  }

  @Test
  void aClusterNeedsACheckpointTheExecutorsReach() {
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () -> FlightsDemo.checkMaster(CLUSTER, DemoOptions.parse()));
    assertTrue(e.getMessage().contains("--checkpoint"), e.getMessage());

    FlightsDemo.checkMaster(CLUSTER, minio());
    FlightsDemo.checkMaster("local[2]", DemoOptions.parse());
  }
}
