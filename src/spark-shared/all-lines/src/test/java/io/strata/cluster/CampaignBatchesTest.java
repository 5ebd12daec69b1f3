// SPDX-License-Identifier: Apache-2.0
package io.strata.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@link CampaignBatches} on Spark's log files as Spark 3.5 to 4.2 write them. */
class CampaignBatchesTest {
  @TempDir Path dir;

  private void batch(String q, long b, long logOffset, boolean committed) throws IOException {
    Path c = dir.resolve(q);
    Files.createDirectories(c.resolve("offsets"));
    Files.createDirectories(c.resolve("commits"));
    Files.writeString(c.resolve("offsets").resolve(Long.toString(b)), "v1\n"
        + "{\"batchWatermarkMs\":0,\"batchTimestampMs\":1,\"conf\":{}}\n"
        + "{\"logOffset\":" + logOffset + "}");
    if (committed) {
      Files.writeString(c.resolve("commits").resolve(Long.toString(b)),
          "v1\n{\"nextBatchWatermarkMs\":0}");
    }
  }

  private void source(String q, String name, long... batchIds) throws IOException {
    Path s = Files.createDirectories(dir.resolve(q).resolve("sources").resolve("0"));
    StringBuilder sb = new StringBuilder("v1");
    for (long id : batchIds) {
      sb.append(String.format("%n{\"path\":\"file:///in/events-%06d.json\",\"timestamp\":5,"
          + "\"batchId\":%d}", id, id));
    }
    Files.writeString(s.resolve(name), sb);
  }

  @Test
  void aBatchThatTookTwoSourceEntriesReadsBothFilesAndTheOracleCanFollow() throws IOException {
    source("q", "0", 0);
    source("q", "1.compact", 0, 1); // folded in, as Spark's compaction leaves it
    source("q", "2", 2);
    source("q", "3", 3);
    batch("q", 0, 0, true);
    batch("q", 1, 2, true); // a restarted source logged entry 2 before batch 1 was planned
    batch("q", 2, 3, false); // planned, not committed: not recorded yet
    CampaignBatches b = new CampaignBatches(dir, List.of("q"));
    b.record();
    assertEquals(List.of(0), b.files("q", 0));
    assertEquals(List.of(1, 2), b.files("q", 1));
    assertEquals(2, b.count("q"));
    assertEquals(1, b.multiFile("q"));
    assertEquals(1, b.batchOf("q", 2));
    assertEquals(-1, b.batchOf("q", 3));
    assertEquals(List.of("q: files read up to 2, expected 3"), b.problems("q", 3));

    batch("q", 2, 3, true);
    b.record();
    assertEquals(List.of(3), b.files("q", 2));
    assertEquals(List.of(), b.problems("q", 3));
  }

  @Test
  void fallingBehindSparksRetentionFails() throws IOException {
    source("q", "0", 0);
    batch("q", 5, 0, true); // batches 0 to 4 are gone from the logs
    CampaignBatches b = new CampaignBatches(dir, List.of("q"));
    assertThrows(IllegalStateException.class, b::record);
  }
}
