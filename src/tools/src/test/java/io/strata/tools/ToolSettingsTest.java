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
}
