// SPDX-License-Identifier: Apache-2.0
package io.strata.tools;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.objectstore.ObjectInfo;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The writes per batch {@code describe} reads from the objects' times (issue 46). */
class BatchCostTest {
  private static ObjectInfo at(String key, long millis) {
    return new ObjectInfo(key, 10, millis, Map.of());
  }

  /**
   * 150 batches of 4 stores, each batch one version object per store and one offsets, commits
   * and source-log entry, plus a base snapshot (3 objects) per store every 10 batches: the last
   * 100 batches wrote 4 + 1.2 state objects and 3 checkpoint files a batch.
   */
  @Test
  void theLast100BatchesWritesPerBatchAndTheirListPrice() {
    List<ObjectInfo> listing = new ArrayList<>();
    for (int b = 0; b < 150; b++) {
      long t = 1_000_000L + b * 1_000L;
      for (int p = 0; p < 4; p++) {
        listing.add(at(String.format("state/0/%d/v/%020d.svo", p, b + 1), t + 100));
        if (b % 10 == 0) {
          for (int i = 0; i < 3; i++) {
            listing.add(at("state/0/" + p + "/snap/" + b + "-" + i, t + 300));
          }
        }
      }
      listing.add(at("sources/0/" + b, t + 10));
      listing.add(at("offsets/" + b, t + 20));
      listing.add(at("commits/" + b, t + 500));
    }
    listing.add(at("metadata", 1_000L));
    BatchCost c = BatchCost.of(listing).orElseThrow();
    assertEquals(100, c.batches());
    assertEquals(5.2, c.statePerBatch(), 1e-9);
    assertEquals(3.0, c.checkpointPerBatch(), 1e-9);
    assertEquals(8.2 * 0.005, c.usdPer1000Batches(), 1e-9);
    assertTrue(c.line().contains("the last 100 batches") && c.line().contains("$0.0410 per "
        + "1,000 batches"), c.line());
  }

  @Test
  void noEstimateWithoutTwoCommits() {
    assertTrue(BatchCost.of(List.of(at("commits/0", 5), at("offsets/0", 4))).isEmpty());
    assertEquals(1.0, BatchCost.of(List.of(at("commits/0", 5), at("commits/1", 5)))
        .orElseThrow().checkpointPerBatch(), 1e-9, "equal times: counted by batch number");
  }

  /**
   * Sub-second batches share their second: objects with a batch or version in their key are
   * counted by it, so the estimate holds (a review saw 3.11 state PUTs for a true 4 by time).
   */
  @Test
  void fastBatchesInOneSecondAreCountedByTheirNumbers() {
    List<ObjectInfo> listing = new ArrayList<>();
    for (int b = 0; b < 10; b++) {
      long t = 1_000_000L + (b * 300L) / 1000 * 1000; // whole seconds, 300 ms batches
      for (int p = 0; p < 4; p++) {
        listing.add(at(String.format("state/0/%d/left-keyToNumValues/v/%020d/a1.svo", p, b + 1),
            t));
      }
      listing.add(at("sources/0/" + b, t));
      listing.add(at("offsets/" + b, t));
      listing.add(at("commits/" + b, t + 1000));
    }
    BatchCost c = BatchCost.of(listing).orElseThrow();
    assertEquals(9, c.batches());
    assertEquals(4.0, c.statePerBatch(), 1e-9);
    assertEquals(3.0, c.checkpointPerBatch(), 1e-9);
  }
}
