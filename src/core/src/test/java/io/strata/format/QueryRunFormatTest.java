// SPDX-License-Identifier: Apache-2.0
package io.strata.format;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The layout-2 forms (docs/format.md, "Query runs, epochs and generations"): the generation
 * key of a checkpoint-format-1 version object, the run claim and its marker, and manifest format
 * version 3 (the {@code epoch} field), pinned by golden files; the older golden files keep
 * decoding ({@link ManifestCodecTest}).
 */
class QueryRunFormatTest {
  private static final String RUN = "3f1c9a5e-8d2b-4f60-9a7e-0c5b1d2e3f40";

  /** The manifest golden/manifest-v3.json holds: version 9 re-committed by the run of epoch 2. */
  static Manifest goldenManifestV3() {
    String a8 = "018c0a1b2d00-0123456789abcdef";
    String a9 = "018c0a1b2e00-fedcba9876543210";
    return new Manifest(3, "0/3/default", 9, a9, 8, Optional.of(a8), Optional.empty(),
        List.of(new Delta(8, a8, new FileRef(StoreLayout.versionObject(8), 0, 700, 0x77L)),
            new Delta(9, a9, new FileRef(StoreLayout.generationVersionObject(9, 2), 0, 300,
                0x33L))),
        "{\"type\":\"struct\",\"fields\":[]}", "{\"type\":\"struct\",\"fields\":[]}", 9,
        1700000000000L, ColumnFamilies.NONE, 2);
  }

  @Test
  void encodesExactlyTheGoldenManifestWithAnEpoch() throws IOException {
    assertEquals(golden("manifest-v3.json"),
        new String(ManifestCodec.encode(goldenManifestV3()), StandardCharsets.UTF_8),
        "manifest encoding changed: update docs/format.md and bump the format version on purpose");
  }

  @Test
  void decodesTheGoldenManifestWithAnEpoch() throws Exception {
    Manifest m = ManifestCodec.decode(golden("manifest-v3.json").getBytes(StandardCharsets.UTF_8));
    assertEquals(goldenManifestV3(), m);
    assertEquals(2, m.epoch());
  }

  @Test
  void theOlderGoldenManifestsHaveNoEpoch() throws Exception {
    for (String name : new String[] {"manifest-v1.json", "manifest-v2.json"}) {
      assertEquals(0, ManifestCodec.decode(golden(name).getBytes(StandardCharsets.UTF_8))
          .epoch(), name);
    }
  }

  @Test
  void anEpochNeedsFormatVersion3AndOnlyThen() {
    assertEquals(3, ManifestCodec.formatVersionFor(ColumnFamilies.NONE, 2));
    assertEquals(3, ManifestCodec.formatVersionFor(ColumnFamilies.NONE.with("x", false), 2));
    assertEquals(1, ManifestCodec.formatVersionFor(ColumnFamilies.NONE, 0));
    assertEquals(2, ManifestCodec.formatVersionFor(ColumnFamilies.NONE.with("x", false), 0));
    String v1WithEpoch = golden("manifest-v1.json").replaceFirst(",\"storeId\"",
        ",\"epoch\":2,\"storeId\"");
    ManifestFormatException e = assertThrows(ManifestFormatException.class,
        () -> ManifestCodec.decode(v1WithEpoch.getBytes(StandardCharsets.UTF_8)));
    assertTrue(e.getMessage().contains("epoch"), e.getMessage());
  }

  @Test
  void encodesExactlyTheGoldenRunClaim() throws Exception {
    RunClaim claim = new RunClaim("0/3/default", 2, RUN, 1700000000000L);
    assertEquals(golden("run-claim-v1.json"), new String(claim.encode(), StandardCharsets.UTF_8));
    assertEquals(claim, RunClaim.decode(golden("run-claim-v1.json")
        .getBytes(StandardCharsets.UTF_8)));
    assertThrows(ManifestFormatException.class, () -> RunClaim.decode(golden("run-claim-v1.json")
        .replace("\"formatVersion\":1", "\"formatVersion\":2").getBytes(StandardCharsets.UTF_8)));
  }

  /**
   * A claim records the version its load loads ({@code loadsVersion}, optional in format 1):
   * claims of builds before 0.4 lack it and decode as unknown (-1), which garbage collection
   * takes for "skip the round".
   */
  @Test
  void aRunClaimRecordsTheVersionItsLoadLoadsAndOlderClaimsDecodeAsUnknown() throws Exception {
    RunClaim claim = new RunClaim("0/3/default", 2, RUN, 1700000000000L, 41);
    String json = new String(claim.encode(), StandardCharsets.UTF_8);
    assertEquals(golden("run-claim-v1.json").replace("}", ",\"loadsVersion\":41}"), json);
    assertEquals(claim, RunClaim.decode(json.getBytes(StandardCharsets.UTF_8)));
    assertEquals(-1, RunClaim.decode(golden("run-claim-v1.json")
        .getBytes(StandardCharsets.UTF_8)).loadsVersion());
    assertThrows(ManifestFormatException.class, () -> RunClaim.decode(
        json.replace("41", "\"x\"").getBytes(StandardCharsets.UTF_8)));
    assertThrows(IllegalArgumentException.class,
        () -> new RunClaim("0/3/default", 2, RUN, 0, -2));
  }

  @Test
  void layout2Keys() {
    assertEquals("v/00000000000000000009/g0000000002.svo",
        StoreLayout.generationVersionObject(9, 2));
    assertEquals(9, StoreLayout.versionOf("v/00000000000000000009/g0000000002.svo"));
    assertEquals(2, StoreLayout.generationOf("v/00000000000000000009/g0000000002.svo"));
    assertEquals(0, StoreLayout.generationOf(StoreLayout.versionObject(9)));
    assertEquals(-1, StoreLayout.generationOf(
        StoreLayout.versionObject(9, "018c0a1b2e00-fedcba9876543210")));
    assertEquals(-1, StoreLayout.versionOf("v/00000000000000000009/g2.svo"));
    assertNull(StoreLayout.attemptOf("v/00000000000000000009/g0000000002.svo"));
    assertEquals("runs/0000000002.run", StoreLayout.runClaim(2));
    assertEquals("runs/0000000002-" + RUN + ".id", StoreLayout.runMarker(2, RUN));
    assertEquals(2, StoreLayout.claimEpochOf("runs/0000000002.run"));
    assertEquals(2, StoreLayout.markerEpochOf(StoreLayout.runMarker(2, RUN)));
    assertEquals(RUN, StoreLayout.markerRunOf(StoreLayout.runMarker(2, RUN)));
    assertThrows(IllegalArgumentException.class, () -> StoreLayout.runMarker(2, "../x"));
    assertThrows(IllegalArgumentException.class, () -> StoreLayout.generationVersionObject(9, 0));
    assertEquals(Reachability.Kind.VERSION_OBJECT,
        Reachability.kindOf(StoreLayout.generationVersionObject(9, 2)));
    assertEquals(Reachability.Kind.FOREIGN, Reachability.kindOf(StoreLayout.runClaim(2)),
        "garbage collection never deletes run claims");
  }

  @Test
  void aLaterGenerationSupersedesAndOnlyTheNewestIsARoot() {
    List<Reachability.Listed> listing = List.of(
        new Reachability.Listed(StoreLayout.versionObject(8), 10, 0),
        new Reachability.Listed(StoreLayout.versionObject(9), 10, 0),
        new Reachability.Listed(StoreLayout.generationVersionObject(9, 1), 10, 0),
        new Reachability.Listed(StoreLayout.generationVersionObject(9, 2), 10, 0),
        new Reachability.Listed(StoreLayout.versionObject(9, "018c0a1b2e00-fedcba9876543210"),
            10, 0),
        new Reachability.Listed(StoreLayout.generationVersionObject(10, 1), 10, 0));
    assertEquals(Set.of(StoreLayout.versionObject(9), StoreLayout.generationVersionObject(9, 1)),
        Reachability.superseded(listing));
    Reachability.Plan plan = Reachability.plan(listing, -1, 100);
    assertEquals(List.of(StoreLayout.versionObject(8),
        StoreLayout.versionObject(9, "018c0a1b2e00-fedcba9876543210"),
        StoreLayout.generationVersionObject(9, 2), StoreLayout.generationVersionObject(10, 1)),
        plan.roots().stream().map(Reachability.Listed::key).toList());
    Reachability.Verdict v = Reachability.garbage(listing, plan, Set.of(), Set.of(), 1000, 0);
    assertEquals(List.of(), v.garbage(), "superseded objects of retained versions stay");
  }

  private static String golden(String name) {
    try (InputStream in = QueryRunFormatTest.class.getResourceAsStream("/golden/" + name)) {
      if (in == null) {
        throw new IllegalStateException("golden/" + name + " missing from test resources");
      }
      return new String(in.readAllBytes(), StandardCharsets.UTF_8).trim();
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }
}
