// SPDX-License-Identifier: Apache-2.0
package io.strata.tools;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Versions whose objects garbage collection deleted (here: version 2's object, which every later
 * version's delta chain names): {@code strata history} says a load of them cannot work and how
 * many objects are gone, rather than what it would download; {@code strata verify --version N}
 * of a version below the retention says that missing objects are expected there.
 */
class BelowRetentionToolTest {
  @TempDir Path tmp;

  @Test
  void historyAndVerifySayWhatACollectedVersionLacks() throws Exception {
    Path checkpoint = ToolFixtures.checkpoint(tmp);
    ToolFixtures.deleteVersion(checkpoint.resolve("state/0/0"), 2);
    ToolFixtures.age(checkpoint);
    String uri = checkpoint.toUri().toString();

    ToolFixtures.Run history = ToolFixtures.tool("history", uri, "--json");
    assertEquals(StrataTool.EXIT_OK, history.code(), history::toString);
    Map<Long, Integer> missing = new TreeMap<>();
    for (JsonNode v : history.json().get("versions")) {
      missing.put(v.get("version").asLong(), v.get("restore").get("missingObjects").asInt());
    }
    assertEquals(Map.of(1L, 0, 3L, 1, 4L, 1, 5L, 1, 6L, 1), missing, history::toString);
    ToolFixtures.Run table = ToolFixtures.tool("history", uri);
    assertTrue(table.out().contains("cannot load: 1 of 3 objects gone"), table::toString);

    ToolFixtures.Run verify = ToolFixtures.tool("verify", uri, "--version", "3", "--conf",
        "spark.sql.streaming.minBatchesToRetain=2");
    assertEquals(StrataTool.EXIT_PROBLEMS, verify.code(), verify::toString);
    assertTrue(verify.out().contains("Version 3 is below the versions the checkpoint retains "
        + "(4 and later"), verify::toString);
    ToolFixtures.Run json = ToolFixtures.tool("verify", uri, "--version", "3", "--conf",
        "spark.sql.streaming.minBatchesToRetain=2", "--json");
    assertTrue(json.json().get("belowRetention").asBoolean(), json::toString);
    assertEquals(4, json.json().get("oldestRetainedVersion").asLong(), json::toString);
  }
}
