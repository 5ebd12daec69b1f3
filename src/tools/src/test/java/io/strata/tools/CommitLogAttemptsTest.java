// SPDX-License-Identifier: Apache-2.0
package io.strata.tools;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** Spark's commit files parsed for the state checkpoint ids of checkpoint format 2. */
class CommitLogAttemptsTest {
  @Test
  void idsPerOperatorAndPartitionWhateverTheStoreOrder() throws Exception {
    // CommitMetadata.json of a query with a two-partition aggregation (operator 0) and a join
    // with four stores per partition (operator 1).
    String file = "v2\n{\"nextBatchWatermarkMs\":0,\"stateUniqueIds\":{\"0\":[[\"a0\"],[\"a1\"]],"
        + "\"1\":[[\"l0\",\"li0\",\"r0\",\"ri0\"],[\"l1\",\"li1\",\"r1\",\"ri1\"]]}}";
    Map<String, Set<String>> ids = CommitLogAttempts.parse(file);
    assertEquals(Set.of("a0"), ids.get("0/0"));
    assertEquals(Set.of("a1"), ids.get("0/1"));
    assertEquals(Set.of("l1", "li1", "r1", "ri1"), ids.get("1/1"));
  }

  @Test
  void formatOneCommitFilesHaveNone() throws Exception {
    assertTrue(CommitLogAttempts.parse("v1\n{\"nextBatchWatermarkMs\":0}").isEmpty());
    assertTrue(CommitLogAttempts.parse("v1").isEmpty());
  }
}
