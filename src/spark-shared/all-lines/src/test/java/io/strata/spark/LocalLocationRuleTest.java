// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.config.StrataConf;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.execution.streaming.state.StateStoreConf;
import org.apache.spark.sql.execution.streaming.state.StateStoreId;
import org.apache.spark.sql.internal.SQLConf;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import scala.Option;

/**
 * The rule for local state locations on a cluster ({@link LocalLocationRule}): every master
 * kind against every kind of location, with and without {@code fileCheckpoint.shared}.
 */
class LocalLocationRuleTest {
  private static final StateStoreId STORE = new StateStoreId("file:/x/state", 0, 3, "default");

  private static final List<String> LOCAL_MASTERS = List.of("local", "local[1]", "local[2]",
      "local[*]", "local[4,3]", "local[*,2]", "local[2, 3]");
  private static final List<String> CLUSTER_MASTERS = List.of("local-cluster[2,1,1024]",
      "spark://host:7077", "yarn", "k8s://https://api:6443", "mesos://m:5050", "local[x]",
      "localhost", "local[2]x");
  /** Locations {@code ObjectStores.open} maps to the local-filesystem store. */
  private static final List<String> LOCAL_LOCATIONS = List.of("file:/x/state/0/3",
      "file:///x/state/0/3", "file://localhost/x/state/0/3", "FILE:/x/state/0/3",
      "/x/state/0/3", "ckpt/state/0/3", "C:/ckpt/state/0/3");
  private static final List<String> S3_LOCATIONS = List.of("s3://b/ckpt/state/0/3",
      "s3a://b/ckpt/state/0/3", "s3n://b/ckpt/state/0/3");

  @TempDir Path tmp;

  @Test
  void localMastersAreRecognisedAsSparkWritesThem() {
    for (String m : LOCAL_MASTERS) {
      assertTrue(LocalLocationRule.isLocalMaster(m), m);
    }
    for (String m : CLUSTER_MASTERS) {
      assertFalse(LocalLocationRule.isLocalMaster(m), m);
    }
    assertTrue(LocalLocationRule.isLocalMaster(null), "unknown master (no SparkEnv): local");
  }

  @Test
  void noSparkEnvMeansNoMaster() {
    assertNull(LocalLocationRule.master(null));
  }

  @Test
  void localLocationWithALocalMasterIsAccepted() {
    for (String m : LOCAL_MASTERS) {
      for (String loc : LOCAL_LOCATIONS) {
        LocalLocationRule.check(loc, m, false, STORE);
        LocalLocationRule.check(loc, m, true, STORE);
      }
    }
    for (String loc : LOCAL_LOCATIONS) {
      LocalLocationRule.check(loc, null, false, STORE);
    }
  }

  @Test
  void s3LocationIsAcceptedWithAnyMaster() {
    for (String m : CLUSTER_MASTERS) {
      for (String loc : S3_LOCATIONS) {
        LocalLocationRule.check(loc, m, false, STORE);
      }
    }
  }

  @Test
  void localLocationWithAClusterMasterFailsUnlessDeclaredShared() {
    for (String m : CLUSTER_MASTERS) {
      for (String loc : LOCAL_LOCATIONS) {
        // Spark 4's SparkUnsupportedOperationException, Spark 3.5's UnsupportedOperationException
        // (3.5 has no such condition): both print the condition first.
        UnsupportedOperationException e = assertThrows(UnsupportedOperationException.class,
            () -> LocalLocationRule.check(loc, m, false, STORE), m + " " + loc);
        String msg = e.getMessage();
        assertTrue(msg.startsWith("[STATE_STORE_UNSUPPORTED_OPERATION]"), msg);
        for (String part : List.of("Cannot use the local state location " + loc,
            "operator 0, partition 3, name default", "with master " + m,
            "lost when a partition moves to another executor", "s3://",
            StrataConf.FILE_CHECKPOINT_SHARED.fullKey() + "=true", "(NFS)")) {
          assertTrue(msg.contains(part), "'" + part + "' in: " + msg);
        }
        LocalLocationRule.check(loc, m, true, STORE); // declared shared: accepted
      }
    }
  }

  @Test
  void theSettingIsReadFromTheStoreConf() {
    assertEquals("spark.sql.streaming.stateStore.strata.fileCheckpoint.shared",
        StrataConf.FILE_CHECKPOINT_SHARED.fullKey());
    assertFalse(StrataConf.from(Map.of(), Map.of()).fileCheckpointShared(), "default false");
  }

  /** Outside Spark (no SparkEnv) the provider's init accepts a file: location: local. */
  @Test
  void initOutsideSparkAcceptsAFileLocation() {
    SQLConf sql = new SQLConf();
    sql.setConfString(StrataConf.LOCAL_DIR.fullKey(), tmp.resolve("local").toString());
    StrataStateStoreProvider p = new StrataStateStoreProvider();
    StoreApi.init(p, new StateStoreId(tmp.resolve("ckpt").toUri().toString(), 0, 0, "default"),
        TestRows.KEY, TestRows.VALUE, sql, new Configuration());
    p.close();
  }
}
