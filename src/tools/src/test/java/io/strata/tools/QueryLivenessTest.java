// SPDX-License-Identifier: Apache-2.0
package io.strata.tools;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The liveness rule's setting, shared by {@code gc --apply} and {@code rewind}: a negative
 * {@code --idle-minutes} would make every query look stopped (a silent {@code --force}), so both
 * commands refuse it as a usage error and change nothing.
 */
class QueryLivenessTest {
  @TempDir Path tmp;

  @Test
  void aNegativeIdleTimeIsAUsageErrorForGcAndRewind() throws Exception {
    Path checkpoint = ToolFixtures.checkpoint(tmp); // written just now: looks alive
    String uri = checkpoint.toUri().toString();
    for (String[] args : new String[][] {
        {"gc", uri, "--apply", "--idle-minutes", "-1"},
        {"rewind", uri, "--to-batch", "3", "--idle-minutes", "-1"}}) {
      ToolFixtures.Run r = ToolFixtures.tool(args);
      assertEquals(StrataTool.EXIT_USAGE, r.code(), r::toString);
      assertTrue(r.err().contains("Invalid --idle-minutes -1"), r::toString);
    }
    assertTrue(Files.exists(checkpoint.resolve("offsets/6")), "nothing deleted");
  }
}
