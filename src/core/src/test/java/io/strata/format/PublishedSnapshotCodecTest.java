// SPDX-License-Identifier: Apache-2.0
package io.strata.format;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
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
 * The published snapshot ({@code b/...bsm}): its golden file, strict decoding, and the lineage
 * rule that decides which manifests may use it (docs/format.md, "Published snapshots").
 */
class PublishedSnapshotCodecTest {
  private static final String A3 = "018c0a1b2c99-8899aabbccddeeff";
  private static final String A6 = "018c0a1b2d00-0123456789abcdef";
  private static final String A7 = "018c0a1b2e00-fedcba9876543210";
  private static final String OTHER_RUN_A7 = "018c0a1b3e00-0000000000000007";
  private static final String PACK = "snap/00000000000000000007-" + A7
      + "-00112233445566778899aabbccddeeff.pack";

  private static Delta delta(long v, String attempt) {
    return new Delta(v, attempt, new FileRef(StoreLayout.versionObject(v, attempt), 0, 100 + v,
        0x1000 + v));
  }

  /** The object golden/published-snapshot-v1.json holds. */
  static PublishedSnapshot golden() {
    return new PublishedSnapshot(1, "0/3/default", 7, A7,
        Optional.of(new PublishedSnapshot.Identity(3, A3)), List.of(delta(6, A6), delta(7, A7)),
        List.of(new BaseSnapshot.BaseFile("000012.sst",
                new FileRef("sst/0123456789abcdef0123456789abcdef.sst", 0, 4096, 0xfedcba98L)),
            new BaseSnapshot.BaseFile("000015.sst", delta(7, A7).file()),
            new BaseSnapshot.BaseFile("CURRENT", new FileRef(PACK, 0, 16, 1)),
            new BaseSnapshot.BaseFile("MANIFEST-000016", new FileRef(PACK, 16, 300, 2))),
        1700000000000L);
  }

  static String goldenKey() {
    return StoreLayout.publishedSnapshot(7, golden().tip().hash(),
        "ffeeddccbbaa99887766554433221100");
  }

  private static byte[] readGolden() throws IOException {
    try (InputStream in = PublishedSnapshotCodecTest.class.getResourceAsStream(
        "/golden/published-snapshot-v1.json")) {
      return in.readAllBytes();
    }
  }

  /** A manifest of version 8: base (3, A3), deltas 6 and 7 of {@code attempt7}, then 8. */
  private static Manifest manifest(String attempt7) {
    BaseSnapshot base = new BaseSnapshot(3, A3, List.of(new BaseSnapshot.BaseFile("CURRENT",
        new FileRef("snap/x", 0, 16, 1))));
    return new Manifest(1, "0/3/default", 8, "018c0a1b2f00-0000000000000008", 7,
        Optional.of(attempt7), Optional.of(base),
        List.of(delta(6, A6), delta(7, attempt7), delta(8, "018c0a1b2f00-0000000000000008")),
        "{}", "{}", 5, 0);
  }

  @Test
  void encodesExactlyTheGoldenFile() throws IOException {
    assertEquals(new String(readGolden(), StandardCharsets.UTF_8).trim(),
        new String(PublishedSnapshotCodec.encode(golden()), StandardCharsets.UTF_8),
        "a change to the published snapshot's bytes must change the golden file on purpose");
  }

  @Test
  void decodesTheGoldenFile() throws Exception {
    assertEquals(golden(), PublishedSnapshotCodec.decode(readGolden(), goldenKey()));
  }

  @Test
  void decodingIsStrictAndNamesTheKey() {
    String key = goldenKey();
    String text = new String(PublishedSnapshotCodec.encode(golden()), StandardCharsets.UTF_8);
    ManifestFormatException newer = assertThrows(ManifestFormatException.class,
        () -> PublishedSnapshotCodec.decode(text.replace("\"formatVersion\":1",
            "\"formatVersion\":3").getBytes(StandardCharsets.UTF_8), key));
    assertTrue(newer.getMessage().contains(key) && newer.getMessage().contains("newer Strata"),
        newer.getMessage());
    ManifestFormatException missing = assertThrows(ManifestFormatException.class,
        () -> PublishedSnapshotCodec.decode(text.replace("\"storeId\"", "\"store\"")
            .getBytes(StandardCharsets.UTF_8), key));
    assertTrue(missing.getMessage().contains("'storeId'"), missing.getMessage());
    ManifestFormatException bytes = assertThrows(ManifestFormatException.class,
        () -> PublishedSnapshotCodec.decode(text.replace("\"bytes\":", "\"bytes\":1")
            .getBytes(StandardCharsets.UTF_8), key));
    assertTrue(bytes.getMessage().contains("counts.bytes"), bytes.getMessage());
    String otherKey = StoreLayout.publishedSnapshot(7, 12345, "ffeeddccbbaa99887766554433221100");
    ManifestFormatException wrongKey = assertThrows(ManifestFormatException.class,
        () -> PublishedSnapshotCodec.decode(text.getBytes(StandardCharsets.UTF_8), otherKey));
    assertTrue(wrongKey.getMessage().contains("does not match the key"), wrongKey.getMessage());
    assertThrows(ManifestFormatException.class,
        () -> PublishedSnapshotCodec.decode("[]".getBytes(StandardCharsets.UTF_8), key));
    // Two files under one local name: refused when decoded (a load then tries an older
    // snapshot or the manifest's own chain), never at restore.
    assertTrue(text.contains("\"name\":\"000015.sst\""), text);
    ManifestFormatException twice = assertThrows(ManifestFormatException.class,
        () -> PublishedSnapshotCodec.decode(text.replace("\"name\":\"000015.sst\"",
            "\"name\":\"000012.sst\"").getBytes(StandardCharsets.UTF_8), key));
    assertTrue(twice.getMessage().contains("'000012.sst' twice"), twice.getMessage());
  }

  /**
   * The object golden/published-snapshot-v2.json describes: CURRENT, MANIFEST and one new SST
   * inline (316 + 2048 bytes before the JSON), one SST in {@code sst/}, one delta reused.
   */
  static PublishedSnapshot golden2() {
    String own = goldenKey();
    PublishedSnapshot v1 = golden();
    return new PublishedSnapshot(2, v1.storeId(), 7, A7, v1.sourceBase(), v1.sourceDeltas(),
        List.of(v1.files().get(0), v1.files().get(1),
            new BaseSnapshot.BaseFile("000018.sst", new FileRef(own, 316, 2048, 3)),
            new BaseSnapshot.BaseFile("CURRENT", new FileRef(own, 0, 16, 1)),
            new BaseSnapshot.BaseFile("MANIFEST-000016", new FileRef(own, 16, 300, 2))),
        1700000000000L);
  }

  @Test
  void formatTwoIsTheInlineFilesThenTheGoldenJsonThenAFooter() throws Exception {
    byte[] json;
    try (InputStream in = PublishedSnapshotCodecTest.class.getResourceAsStream(
        "/golden/published-snapshot-v2.json")) {
      json = in.readAllBytes();
    }
    assertEquals(new String(json, StandardCharsets.UTF_8).trim(),
        new String(PublishedSnapshotCodec.encode(golden2()), StandardCharsets.UTF_8));
    byte[] inline = new byte[316 + 2048];
    byte[] tail = PublishedSnapshotCodec.encodeTail(golden2(), inline.length);
    byte[] object = new byte[inline.length + tail.length];
    System.arraycopy(tail, 0, object, inline.length, tail.length);
    assertEquals(golden2(), PublishedSnapshotCodec.decode(object, goldenKey()));
    assertEquals(Set.of("sst/0123456789abcdef0123456789abcdef.sst",
        "v/00000000000000000007/018c0a1b2e00-fedcba9876543210.svo"),
        Reachability.namedKeys(golden2(), goldenKey()), "never itself");
    // The inline bytes must hold every file the JSON places in the object itself.
    byte[] shortTail = PublishedSnapshotCodec.encodeTail(golden2(), 316);
    byte[] shortObject = new byte[316 + shortTail.length];
    System.arraycopy(shortTail, 0, shortObject, 316, shortTail.length);
    ManifestFormatException outside = assertThrows(ManifestFormatException.class,
        () -> PublishedSnapshotCodec.decode(shortObject, goldenKey()));
    assertTrue(outside.getMessage().contains("000018.sst lies outside"), outside.getMessage());
    // A format-2 JSON without its footer, or format 1 inside one, is refused.
    assertThrows(ManifestFormatException.class,
        () -> PublishedSnapshotCodec.decode(PublishedSnapshotCodec.encode(golden2()),
            goldenKey()));
    byte[] v1InFooter = PublishedSnapshotCodec.encodeTail(golden(), 0);
    ManifestFormatException pairing = assertThrows(ManifestFormatException.class,
        () -> PublishedSnapshotCodec.decode(v1InFooter, goldenKey()));
    assertTrue(pairing.getMessage().contains("formatVersion 1 in an object with"),
        pairing.getMessage());
  }

  @Test
  void keysCarryTheVersionAndTheLineageTip() {
    String key = goldenKey();
    assertEquals(7, StoreLayout.publishedSnapshotVersionOf(key));
    assertEquals(golden().tip().hash(), StoreLayout.publishedSnapshotTipOf(key));
    assertEquals(Reachability.Kind.PUBLISHED_SNAPSHOT, Reachability.kindOf(key));
    assertEquals(-1, StoreLayout.publishedSnapshotVersionOf("b/7.bsm"));
  }

  @Test
  void aManifestOnTheSameLineageCanUseItAndASupersededOneCannot() {
    PublishedSnapshot p = golden();
    Manifest same = manifest(A7);
    assertTrue(p.usableBy(same), "the same delta of version 7: the same state at 7");
    Manifest rebased = p.rebase(same);
    assertEquals(Optional.of(p.snapshot()), rebased.base());
    assertEquals(List.of(same.deltas().get(2)), rebased.deltas(), "only the deltas after 7");
    assertEquals(same.numKeys(), rebased.numKeys());
    // A later query run re-committed 7 (another attempt, another delta): never the same state.
    Manifest superseded = manifest(OTHER_RUN_A7);
    assertFalse(p.usableBy(superseded));
    assertThrows(IllegalArgumentException.class, () -> p.rebase(superseded));
    // The tips index says the same from cached data.
    PublishedSnapshot.TipIndex tips = PublishedSnapshot.TipIndex.of(same);
    assertEquals(p.tip().hash(), tips.hashAt(7).getAsLong());
    assertTrue(PublishedSnapshot.TipIndex.of(superseded).hashAt(7).getAsLong()
        != p.tip().hash());
    assertTrue(tips.hashAt(3).isEmpty(), "not after the manifest's own base");
    assertTrue(tips.hashAt(9).isEmpty(), "not newer than the manifest");
  }

  @Test
  void withoutADeltaTheTipIsTheBaseOrTheEmptyState() {
    BaseSnapshot base = new BaseSnapshot(3, A3, List.of(new BaseSnapshot.BaseFile("CURRENT",
        new FileRef("snap/x", 0, 16, 1))));
    // Versions 4 and 5 wrote nothing: the state at 5 is the base's.
    Manifest m5 = new Manifest(1, "0/3/default", 5, A6, 4, Optional.of(A3), Optional.of(base),
        List.of(), "{}", "{}", 1, 0);
    PublishedSnapshot p = PublishedSnapshot.of(m5, new BaseSnapshot(5, A6, golden().files()), 0);
    assertEquals(Optional.of(new PublishedSnapshot.Identity(3, A3)), p.tip().base());
    Manifest m6 = new Manifest(1, "0/3/default", 6, A7, 5, Optional.of(A6), Optional.of(base),
        List.of(delta(6, A7)), "{}", "{}", 1, 0);
    assertTrue(p.usableBy(m6));
    assertEquals(p.tip().hash(), PublishedSnapshot.TipIndex.of(m6).hashAt(5).getAsLong());
    Manifest fromEmpty = new Manifest(1, "0/3/default", 6, A7, 5, Optional.of(A6),
        Optional.empty(), List.of(delta(6, A7)), "{}", "{}", 1, 0);
    assertFalse(p.usableBy(fromEmpty), "another base: not the same state");
  }
}
