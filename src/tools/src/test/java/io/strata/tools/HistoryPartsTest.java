// SPDX-License-Identifier: Apache-2.0
package io.strata.tools;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.strata.engine.SharedMemory;
import io.strata.format.ManifestFormatException;
import io.strata.metrics.CommitStats;
import io.strata.objectstore.ObjectStores;
import io.strata.objectstore.RequestListener;
import io.strata.sync.GcSettings;
import io.strata.sync.StoreIdentity;
import io.strata.sync.StoreSettings;
import io.strata.sync.SyncedStore;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code strata history --parts}: each version object's bytes by part, read back from the
 * objects a store committed, are the parts its commits counted as they wrote them.
 */
class HistoryPartsTest {
  @TempDir Path tmp;

  /**
   * Versions 1 to 3 of store {@code state/0/0} of {@code <tmp>/ckpt}: 1,250 puts; nothing (a
   * version object without delta); 40 deletes and 5 puts. Returns the commits' own counts.
   */
  private List<CommitStats.ObjectParts> threeVersions(Path checkpoint) throws Exception {
    Path store = checkpoint.resolve("state/0/0");
    List<CommitStats.ObjectParts> counted = new ArrayList<>();
    try (SyncedStore s = new SyncedStore(new StoreIdentity(0, 0, "default", store.toString()),
        ObjectStores.open(store.toUri().toString(), () -> null, RequestListener.NONE),
        tmp.resolve("local"), new StoreSettings(100, 2, 1 << 20, false,
            SharedMemory.Limits.DEFAULT, GcSettings.DEFAULT), "{}", "{}")) {
      s.load(0, Optional.empty());
      for (int k = 0; k < 1_250; k++) {
        s.put(key(k), ("value of " + k + " ".repeat(k % 40)).getBytes(StandardCharsets.UTF_8));
      }
      counted.add(s.commit().stats().parts());
      counted.add(s.commit().stats().parts());
      for (int k = 0; k < 40; k++) {
        s.delete(key(k * 7));
      }
      for (int k = 2_000; k < 2_005; k++) {
        s.put(key(k), new byte[] {1, 2, 3});
      }
      counted.add(s.commit().stats().parts());
    }
    Files.createDirectories(checkpoint.resolve("offsets"));
    Files.createDirectories(checkpoint.resolve("commits"));
    for (int b = 0; b < 3; b++) {
      Files.writeString(checkpoint.resolve("offsets/" + b), "v1\n{\"batchWatermarkMs\":0,"
          + "\"batchTimestampMs\":" + b + ",\"conf\":{}}\n{\"logOffset\":" + b + "}");
      Files.writeString(checkpoint.resolve("commits/" + b), "v1\n{\"nextBatchWatermarkMs\":0}");
    }
    return counted;
  }

  private static byte[] key(int k) {
    return String.format("key-%08d", k).getBytes(StandardCharsets.UTF_8);
  }

  @Test
  void partsReadFromTheObjectsAreThePartsTheCommitsCounted() throws Exception {
    Path checkpoint = tmp.resolve("ckpt");
    List<CommitStats.ObjectParts> counted = threeVersions(checkpoint);

    ToolFixtures.Run run = ToolFixtures.tool("history", checkpoint.toUri().toString(), "--parts",
        "--json");
    assertEquals(0, run.code(), run.err());
    JsonNode versions = run.json().path("versions");
    assertEquals(3, versions.size(), run.out());
    for (int i = 0; i < 3; i++) {
      JsonNode v = versions.get(i);
      JsonNode p = v.path("parts");
      CommitStats.ObjectParts c = counted.get(i);
      String what = "version " + (i + 1) + ": " + p + " against " + c;
      assertEquals(i + 1, v.path("version").asLong(), what);
      assertEquals(v.path("size").asLong(), p.path("object").asLong(), what);
      long sum = 0;
      for (ObjectParts.Part part : ObjectParts.PARTS.subList(0, ObjectParts.PARTS.size() - 1)) {
        sum += p.path(part.json()).asLong();
      }
      assertEquals(p.path("object").asLong(), sum, what + ": the parts add up to the object");
      assertEquals(c.sstData(), p.path("sstData").asLong(), what);
      assertEquals(c.sstFilter(), p.path("sstFilter").asLong(), what);
      assertEquals(c.sstIndex(), p.path("sstIndex").asLong(), what);
      assertEquals(c.sstTableMeta(), p.path("sstProperties").asLong()
          + p.path("sstMetaindex").asLong() + p.path("sstFooter").asLong(), what);
      assertEquals(0, p.path("sstOther").asLong(), what);
      assertEquals(c.manifest(), p.path("manifest").asLong() + p.path("footer").asLong(), what);
      assertEquals(32, p.path("footer").asLong(), what);
    }
    assertEquals(0, versions.get(1).path("parts").path("dataBlocks").asInt(),
        "version 2 has no delta");
    assertTrue(versions.get(0).path("parts").path("sstFilter").asLong() > 1_250 * 10 / 8,
        "10 bits per key");

    JsonNode summary = run.json().path("partsSummary");
    assertEquals(3, summary.path("versionObjects").asInt());
    assertEquals(2, summary.path("withDelta").asInt());
    assertEquals(2, summary.path("summarized").asInt(), "over the objects with a delta");
    long[] sizes = {versions.get(0).path("size").asLong(), versions.get(2).path("size").asLong()};
    assertEquals((sizes[0] + sizes[1]) / 2.0,
        summary.path("bytes").path("object").path("mean").asDouble(), 1e-9);
    assertEquals((sizes[0] + sizes[1]) / 2.0,
        summary.path("bytes").path("object").path("p50").asDouble(), 1e-9);

    ToolFixtures.Run text = ToolFixtures.tool("history", checkpoint.toUri().toString(),
        "--parts", "--last", "2");
    assertEquals(0, text.code(), text.err());
    assertTrue(text.out().contains("Bytes by part over 1 version object with an SST delta (of 2 "
        + "shown; those without one left out)"), text.out());
    assertTrue(text.out().contains("SST filter"), text.out());

    ToolFixtures.Run none = ToolFixtures.tool("history", checkpoint.toUri().toString(),
        "--parts", "--last", "0");
    assertEquals(2, none.code(), "--last 0 is a usage error: " + none.out());
    assertTrue(none.err().contains("--last must be at least 1, was 0"), none.err());
  }

  @Test
  void theMedianOfAnEvenCountIsTheMeanOfTheMiddleTwo() {
    ObjectParts a = new ObjectParts(100, 1, 50, 10, 5, 3, 2, 0, 0, 0, 30);
    ObjectParts b = new ObjectParts(300, 1, 250, 10, 5, 3, 2, 0, 0, 0, 30);
    ObjectParts c = new ObjectParts(400, 1, 350, 10, 5, 3, 2, 0, 0, 0, 30);
    ObjectParts d = new ObjectParts(1000, 1, 950, 10, 5, 3, 2, 0, 0, 0, 30);
    var s = ObjectParts.summary(List.of(d, a, c, b));
    ObjectParts.Stat data = s.get(ObjectParts.PARTS.get(0));
    assertEquals(400, data.mean(), 1e-9);
    assertEquals(300, data.p50(), 1e-9);
    assertThrows(IllegalArgumentException.class, () -> ObjectParts.summary(List.of()));
  }

  @Test
  void bytesThatAreNotAVersionObjectAreRefused() {
    assertThrows(ManifestFormatException.class,
        () -> ObjectParts.of("not a version object at all, but long enough".getBytes(
            StandardCharsets.UTF_8)));
  }
}
