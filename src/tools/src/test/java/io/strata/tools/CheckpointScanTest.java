// SPDX-License-Identifier: Apache-2.0
package io.strata.tools;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.objectstore.ObjectInfo;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** How one listing of a checkpoint splits into Spark's logs and the stores. */
class CheckpointScanTest {
  private static List<ObjectInfo> listing(String... keys) {
    List<ObjectInfo> l = new ArrayList<>();
    for (String k : keys) {
      l.add(new ObjectInfo(k, 10, 1_700_000_000_000L, Map.of()));
    }
    return l;
  }

  @Test
  void storesAreSplitByOperatorPartitionAndName() {
    CheckpointScan s = CheckpointScan.of(listing(
        "metadata", "offsets/0", "offsets/1", "offsets/.1.crc", "commits/0", "commits/1",
        "state/0/_metadata/v2/0",
        "state/0/0/v/00000000000000000001/g0000000001.svo",
        "state/0/0/runs/0000000001.run",
        "state/0/1/v/00000000000000000001/g0000000001.svo",
        "state/0/1/sst/0123456789abcdef0123456789abcdef.sst",
        "state/1/0/left-keyToNumValues/v/00000000000000000002/g0000000001.svo",
        "state/1/0/left-keyToNumValues/b/x"));
    assertEquals(List.of("0/0/default", "0/1/default", "1/0/left-keyToNumValues"),
        s.strataStores().stream().map(CheckpointScan.Store::id).toList());
    CheckpointScan.Store join = s.strataStores().get(2);
    assertEquals("state/1/0/left-keyToNumValues", join.relativeLocation());
    assertEquals(2, join.newestVersion());
    assertEquals(2, s.strataStores().get(0).objects().size());
    assertEquals(1, s.spark.latestOffset().getAsLong());
    assertEquals(1, s.spark.latestCommit().getAsLong());
    assertEquals("agree", s.spark.agreement());
    assertTrue(s.spark.metadata());
    assertTrue(s.foreignProvider().isEmpty());
  }

  @Test
  void anotherProvidersStoresAreNamed() {
    CheckpointScan hdfs = CheckpointScan.of(listing("offsets/0", "state/0/0/1.delta",
        "state/0/0/2.snapshot"));
    assertTrue(hdfs.strataStores().isEmpty());
    assertTrue(hdfs.foreignProvider().get()[0].contains("HDFSBackedStateStoreProvider"));
    assertEquals("state/0/0/1.delta", hdfs.foreignProvider().get()[1]);
    CheckpointScan rocks = CheckpointScan.of(listing("state/0/0/1.changelog",
        "state/0/0/SSTs/000008-5f2c.sst", "state/0/0/2_3b1f-9a.zip"));
    assertTrue(rocks.foreignProvider().get()[0].contains("RocksDBStateStoreProvider"));
    assertFalse(rocks.stores.get(0).isStrata());
  }

  @Test
  void theLogsSayWhetherTheyAgree() {
    assertEquals("batch 4 planned, not committed (a restart re-runs it)",
        CheckpointScan.of(listing("offsets/4", "commits/3")).spark.agreement());
    assertEquals("no batch yet", CheckpointScan.of(listing("metadata")).spark.agreement());
    assertTrue(CheckpointScan.of(listing("offsets/9", "commits/3")).spark.agreement()
        .startsWith("disagree"));
  }

  @Test
  void formatsAreTellable() {
    CheckpointScan s = CheckpointScan.of(listing(
        "state/0/0/v/00000000000000000001/018c0a1b2e00-fedcba9876543210.svo",
        "state/0/0/v/00000000000000000001/018c0a1b2e01-fedcba9876543211.svo",
        "state/0/1/v/00000000000000000001/g0000000001.svo"));
    assertTrue(StoreSummary.attemptKeys(s.strataStores().get(0)));
    assertFalse(StoreSummary.attemptKeys(s.strataStores().get(1)));
  }

  @Test
  void tablesAlignAndSizesRead() {
    assertEquals("1.5 KiB", Table.bytes(1536));
    assertEquals("12 B", Table.bytes(12));
    assertEquals("3 h", Table.age(3 * 3_600_000L + 5));
    java.io.ByteArrayOutputStream b = new java.io.ByteArrayOutputStream();
    new Table("A", "BYTES").row("x", Table.bytes(2048)).row("long", 7)
        .print(new java.io.PrintStream(b, true));
    assertEquals("A     BYTES\nx     2.0 KiB\nlong        7\n", b.toString());
  }

  @Test
  void theRestartVersionAndRetentionComeFromSparksLogs() {
    // Batches 40..45 planned, 40..44 committed: a restart runs batch 45, loading version 45.
    List<String> keys = new ArrayList<>();
    for (int b = 40; b <= 45; b++) {
      keys.add("offsets/" + b);
      if (b < 45) {
        keys.add("commits/" + b);
      }
    }
    CheckpointScan.SparkLogs logs = CheckpointScan.of(listing(keys.toArray(String[]::new))).spark;
    assertEquals(45, logs.restartVersion());
    assertEquals(40, logs.oldestBatch().getAsLong());
    // Spark's logs reach back to batch 40 (version 40): gc keeps at least that far back;
    // verify checks no further back than a restart can load, after the oldest commit (41).
    assertEquals(100, logs.retention(100));
    assertEquals(5, logs.retention(2));
    assertEquals(4, logs.checkedRetention(100));
    assertEquals(2, logs.checkedRetention(2));

    CheckpointScan.SparkLogs noCommits = CheckpointScan.of(listing("offsets/3", "offsets/4"))
        .spark;
    assertEquals(4, noCommits.restartVersion(), "a restart re-runs the planned batch 4");
    CheckpointScan.SparkLogs none = CheckpointScan.of(listing("state/0/0/v/x")).spark;
    assertEquals(-1, none.restartVersion());
    assertFalse(none.any());
    assertEquals(100, none.retention(100));
  }
}
