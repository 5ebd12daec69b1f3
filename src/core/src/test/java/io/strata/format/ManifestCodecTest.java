// SPDX-License-Identifier: Apache-2.0
package io.strata.format;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class ManifestCodecTest {

  /** The manifest the golden file holds; changing the format means changing both on purpose. */
  static Manifest goldenManifest() {
    String a1 = "018c0a1b2c3d-00112233445566ff";
    String a5 = "018c0a1b2c99-8899aabbccddeeff";
    String a6 = "018c0a1b2d00-0123456789abcdef";
    String a7 = "018c0a1b2e00-fedcba9876543210";
    BaseSnapshot base = new BaseSnapshot(5, a5, List.of(
        new BaseSnapshot.BaseFile("000012.sst",
            new FileRef(StoreLayout.versionObject(1, a1), 0, 1500, 0x1234L)),
        new BaseSnapshot.BaseFile("000020.sst",
            new FileRef("sst/0123456789abcdef0123456789abcdef.sst", 0, 4096, 0xfedcba9876543210L)),
        new BaseSnapshot.BaseFile("CURRENT",
            new FileRef(StoreLayout.snapshotPack(5, a5, "00112233445566778899aabbccddeeff"), 0, 16, 0x1L)),
        new BaseSnapshot.BaseFile("MANIFEST-000022",
            new FileRef(StoreLayout.snapshotPack(5, a5, "00112233445566778899aabbccddeeff"), 16, 300, 0x2L))));
    return new Manifest(1, "0/3/default", 7, a7, 6, Optional.of(a6), Optional.of(base),
        List.of(new Delta(6, a6, new FileRef(StoreLayout.versionObject(6, a6), 0, 900, 0xabcL)),
            new Delta(7, a7, new FileRef(StoreLayout.versionObject(7, a7), 0, 800, 0xdefL))),
        "{\"type\":\"struct\",\"fields\":[]}", "{\"type\":\"struct\",\"fields\":[]}", 42,
        1700000000000L);
  }

  @Test
  void encodesExactlyTheGoldenFile() throws IOException {
    byte[] golden = readGolden();
    assertEquals(new String(golden, StandardCharsets.UTF_8).trim(),
        new String(ManifestCodec.encode(goldenManifest()), StandardCharsets.UTF_8),
        "manifest encoding changed: update docs/format.md and bump the format version on purpose");
  }

  @Test
  void decodesTheGoldenFile() throws Exception {
    Manifest m = ManifestCodec.decode(readGolden());
    assertEquals(goldenManifest(), m);
    assertEquals(1500 + 4096 + 16 + 300 + 900 + 800, m.totalBytes());
    assertEquals(2, m.deltaChainLength());
    assertEquals(2, m.versionsSinceBase());
  }

  @Test
  void roundTripsWithoutBase() throws Exception {
    Manifest m = new Manifest(1, "1/0/left-keyToNumValues", 1, StoreLayout.newAttemptId(), 0,
        Optional.empty(), Optional.empty(), List.of(), "{}", "{}", 0, 1L);
    assertEquals(m, ManifestCodec.decode(ManifestCodec.encode(m)));
  }

  /**
   * The manifest golden/manifest-v2.json holds: a transformWithState store with column families
   * (one removed, so maxId exceeds the greatest listed id).
   */
  static Manifest goldenManifestV2() {
    String a2 = "018c0a1b2d00-0123456789abcdef";
    String a3 = "018c0a1b2e00-fedcba9876543210";
    ColumnFamilies cfs = new ColumnFamilies(4, List.of(
        new ColumnFamily("countState", 1, false),
        new ColumnFamily("$procTimers_keyToTimestamp", 2, true),
        new ColumnFamily("$procTimers_timestampToKey", 3, true)));
    return new Manifest(2, "2/0/default", 3, a3, 2, Optional.of(a2), Optional.empty(),
        List.of(new Delta(2, a2, new FileRef(StoreLayout.versionObject(2, a2), 0, 700, 0x77L)),
            new Delta(3, a3, new FileRef(StoreLayout.versionObject(3, a3), 0, 300, 0x33L))),
        "{\"type\":\"struct\",\"fields\":[]}", "{\"type\":\"struct\",\"fields\":[]}", 9,
        1700000000000L, cfs);
  }

  @Test
  void encodesExactlyTheGoldenFileWithColumnFamilies() throws IOException {
    byte[] golden = readGolden("manifest-v2.json");
    assertEquals(new String(golden, StandardCharsets.UTF_8).trim(),
        new String(ManifestCodec.encode(goldenManifestV2()), StandardCharsets.UTF_8),
        "manifest encoding changed: update docs/format.md and bump the format version on purpose");
  }

  @Test
  void decodesTheGoldenFileWithColumnFamilies() throws Exception {
    Manifest m = ManifestCodec.decode(readGolden("manifest-v2.json"));
    assertEquals(goldenManifestV2(), m);
    assertEquals(4, m.columnFamilies().maxId());
    assertEquals(Optional.of(new ColumnFamily("$procTimers_timestampToKey", 3, true)),
        m.columnFamilies().byName("$procTimers_timestampToKey"));
  }

  @Test
  void aManifestWithoutColumnFamiliesIsStillWrittenAsFormatVersion1() throws Exception {
    assertEquals(1, ManifestCodec.formatVersionFor(ColumnFamilies.NONE));
    assertEquals(2, ManifestCodec.formatVersionFor(ColumnFamilies.NONE.with("x", false)));
    Manifest v1 = ManifestCodec.decode(readGolden());
    assertEquals(ColumnFamilies.NONE, v1.columnFamilies());
    assertTrue(new String(ManifestCodec.encode(v1), StandardCharsets.UTF_8)
        .startsWith("{\"formatVersion\":1,"));
  }

  @Test
  void columnFamiliesNeedFormatVersion2() {
    Manifest g = goldenManifestV2();
    assertThrows(IllegalArgumentException.class, () -> new Manifest(1, g.storeId(), g.version(),
        g.attempt(), g.parentVersion(), g.parentAttempt(), g.base(), g.deltas(), g.keySchema(),
        g.valueSchema(), g.numKeys(), g.createdAtMillis(), g.columnFamilies()));
    String json = new String(ManifestCodec.encode(g), StandardCharsets.UTF_8)
        .replace("\"formatVersion\":2", "\"formatVersion\":1");
    ManifestFormatException e = assertThrows(ManifestFormatException.class,
        () -> ManifestCodec.decode(json.getBytes(StandardCharsets.UTF_8)));
    assertTrue(e.getMessage().contains("columnFamilies"), e.getMessage());
  }

  @Test
  void rejectsInvalidColumnFamilies() {
    String json = new String(ManifestCodec.encode(goldenManifestV2()), StandardCharsets.UTF_8);
    for (String bad : List.of(json.replace("\"maxId\":4", "\"maxId\":2"),
        json.replace("\"id\":3", "\"id\":2"),
        json.replace("\"name\":\"countState\"", "\"name\":\"default\""),
        json.replace("\"id\":1", "\"id\":70000"),
        json.replace("\"internal\":false", "\"internal\":0"))) {
      assertThrows(ManifestFormatException.class,
          () -> ManifestCodec.decode(bad.getBytes(StandardCharsets.UTF_8)), bad);
    }
  }

  @Test
  void columnFamilyIdsAreNeverReused() {
    ColumnFamilies a = ColumnFamilies.NONE.with("a", false).with("b", true);
    ColumnFamilies c = a.without("b").with("c", false);
    assertEquals(3, c.byName("c").orElseThrow().id());
    assertEquals(3, c.maxId());
    assertArrayEquals(new byte[] {0, 3}, c.byName("c").orElseThrow().keyPrefix());
    assertArrayEquals(new byte[] {(byte) 0xff, (byte) 0xff}, ColumnFamily.keyPrefix(0xffff));
    assertThrows(IllegalArgumentException.class, () -> a.with("a", false));
    assertThrows(IllegalStateException.class,
        () -> new ColumnFamilies(ColumnFamily.MAX_ID, List.of()).with("z", false));
  }

  @Test
  void rejectsANewerFormatVersion() {
    String json = new String(ManifestCodec.encode(goldenManifest()), StandardCharsets.UTF_8)
        .replace("\"formatVersion\":1",
            "\"formatVersion\":" + (ManifestCodec.FORMAT_VERSION + 1));
    ManifestFormatException e = assertThrows(ManifestFormatException.class,
        () -> ManifestCodec.decode(json.getBytes(StandardCharsets.UTF_8)));
    assertTrue(e.getMessage().contains("newer Strata"), e.getMessage());
  }

  @Test
  void rejectsAMissingField() {
    String json = new String(ManifestCodec.encode(goldenManifest()), StandardCharsets.UTF_8)
        .replace("\"storeId\"", "\"storeIdx\"");
    ManifestFormatException e = assertThrows(ManifestFormatException.class,
        () -> ManifestCodec.decode(json.getBytes(StandardCharsets.UTF_8)));
    assertTrue(e.getMessage().contains("storeId"), e.getMessage());
  }

  @Test
  void rejectsAByteCountThatDoesNotAddUp() {
    String json = new String(ManifestCodec.encode(goldenManifest()), StandardCharsets.UTF_8)
        .replace("\"bytes\":7612", "\"bytes\":7613");
    assertThrows(ManifestFormatException.class,
        () -> ManifestCodec.decode(json.getBytes(StandardCharsets.UTF_8)));
  }

  @Test
  void rejectsDeltasOutOfOrder() {
    Manifest g = goldenManifest();
    assertThrows(IllegalArgumentException.class, () -> new Manifest(1, "0/0/default", 7,
        g.attempt(), 6, g.parentAttempt(), g.base(),
        List.of(g.deltas().get(1), g.deltas().get(0)), "{}", "{}", 0, 0));
  }

  @Test
  void versionObjectFooterRoundTrips() throws Exception {
    byte[] manifest = ManifestCodec.encode(goldenManifest());
    byte[] tail = VersionObjectCodec.manifestAndFooter(manifest, 800);
    byte[] object = new byte[800 + tail.length];
    System.arraycopy(tail, 0, object, 800, tail.length);
    VersionObjectCodec.Footer f = VersionObjectCodec.footer(object, object.length);
    assertEquals(800, f.manifestOffset());
    assertArrayEquals(manifest, VersionObjectCodec.manifestFromTail(object, f));
  }

  @Test
  void versionObjectDetectsAFlippedManifestByte() throws Exception {
    byte[] manifest = ManifestCodec.encode(goldenManifest());
    byte[] tail = VersionObjectCodec.manifestAndFooter(manifest, 0);
    tail[10] ^= 1;
    VersionObjectCodec.Footer f = VersionObjectCodec.footer(tail, tail.length);
    ManifestFormatException e = assertThrows(ManifestFormatException.class,
        () -> VersionObjectCodec.manifestFromTail(tail, f));
    assertTrue(e.getMessage().contains("checksum mismatch"), e.getMessage());
  }

  @Test
  void versionObjectDetectsTruncation() {
    byte[] tail = VersionObjectCodec.manifestAndFooter(ManifestCodec.encode(goldenManifest()), 0);
    byte[] truncated = java.util.Arrays.copyOf(tail, tail.length - 5);
    assertThrows(ManifestFormatException.class,
        () -> VersionObjectCodec.footer(truncated, truncated.length));
  }

  @Test
  void rejectsAttemptIdsThatCouldEscapeADirectory() {
    FileRef ref = new FileRef("v/x.svo", 0, 1, 1);
    assertThrows(IllegalArgumentException.class, () -> new Delta(1, "../../etc", ref));
    String json = new String(ManifestCodec.encode(goldenManifest()), StandardCharsets.UTF_8)
        .replace("\"attempt\":\"018c0a1b2d00-0123456789abcdef\",\"key\"",
            "\"attempt\":\"../../x\",\"key\"");
    assertThrows(ManifestFormatException.class,
        () -> ManifestCodec.decode(json.getBytes(StandardCharsets.UTF_8)));
  }

  @Test
  void rejectsABaseSnapshotNamingOneFileTwice() {
    Manifest g = goldenManifest();
    BaseSnapshot b = g.base().orElseThrow();
    List<BaseSnapshot.BaseFile> twice = new java.util.ArrayList<>(b.files());
    twice.add(new BaseSnapshot.BaseFile(b.files().get(0).name(), b.files().get(1).file()));
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> new BaseSnapshot(b.version(), b.attempt(), twice));
    assertTrue(e.getMessage().contains("'" + b.files().get(0).name() + "' twice"),
        e.getMessage());
    // Decoding a manifest whose base names a file twice fails as a format error, naming it.
    String json = new String(ManifestCodec.encode(g), StandardCharsets.UTF_8);
    String second = "\"name\":\"" + b.files().get(1).name() + "\"";
    assertTrue(json.contains(second), json);
    String dup = json.replace(second, "\"name\":\"" + b.files().get(0).name() + "\"");
    ManifestFormatException f = assertThrows(ManifestFormatException.class,
        () -> ManifestCodec.decode(dup.getBytes(StandardCharsets.UTF_8)));
    assertTrue(f.getMessage().contains("twice"), f.getMessage());
  }

  @Test
  void keysSortByVersion() {
    String a = StoreLayout.newAttemptId();
    assertTrue(StoreLayout.versionObject(9, a).compareTo(StoreLayout.versionObject(10, a)) < 0);
    assertEquals("v/00000000000000000010/", StoreLayout.versionPrefix(10));
    assertEquals(a, StoreLayout.attemptOf(StoreLayout.versionObject(10, a)));
    assertThrows(IllegalArgumentException.class, () -> StoreLayout.versionObject(1, "../x"));
  }

  private static byte[] readGolden() throws IOException {
    return readGolden("manifest-v1.json");
  }

  private static byte[] readGolden(String name) throws IOException {
    try (InputStream in = ManifestCodecTest.class.getResourceAsStream("/golden/" + name)) {
      if (in == null) {
        throw new IOException("golden/" + name + " missing from test resources");
      }
      return in.readAllBytes();
    }
  }
}
