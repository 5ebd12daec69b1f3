// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.format.BaseSnapshot;
import io.strata.format.Delta;
import io.strata.format.FileRef;
import io.strata.format.Manifest;
import io.strata.format.Reachability;
import io.strata.format.StoreLayout;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The cache of what retained manifests name, as garbage collection uses it. */
class ManifestCacheTest {
  private static final String A1 = "018c0a1b2c3d-00112233445566ff";
  private static final String SST = "sst/0123456789abcdef0123456789abcdef.sst";
  private static final String PACK_1 = StoreLayout.snapshotPack(3, A1,
      "00112233445566778899aabbccddeeff");
  private static final String PACK_2 = StoreLayout.snapshotPack(3, A1,
      "ffeeddccbbaa99887766554433221100");
  private static final long NOW = 1_800_000_000_000L;
  private static final long HOUR = 3_600_000L;

  private static Manifest manifest(long version, List<String> baseKeys) {
    List<BaseSnapshot.BaseFile> files = new ArrayList<>();
    for (int i = 0; i < baseKeys.size(); i++) {
      files.add(new BaseSnapshot.BaseFile("f" + i, new FileRef(baseKeys.get(i), 0, 10, 42)));
    }
    List<Delta> deltas = List.of(new Delta(version, A1,
        new FileRef(StoreLayout.versionObject(version), 0, 10, 42)));
    return new Manifest(1, "0/0/default", version, A1, version - 1, Optional.of(A1),
        Optional.of(new BaseSnapshot(3, A1, files)), deltas, "{}", "{}", 0, 0);
  }

  /**
   * Two base snapshots of the same version and attempt (a snapshot taken again after the first
   * was dropped, or taken by two instances) share their first file, the unchanged SST, and
   * differ only in their pack. Each manifest must be credited with its own snapshot's files, or
   * a round deletes the pack of the live one.
   */
  @Test
  void twoSnapshotsOfOneVersionSharingTheirFirstFileAreTwoSnapshots() {
    ManifestCache cache = new ManifestCache(16);
    String v4 = StoreLayout.versionObject(4);
    String v5 = StoreLayout.versionObject(5);
    cache.put(v4, 100, manifest(4, List.of(SST, PACK_1)));
    cache.put(v5, 100, manifest(5, List.of(SST, PACK_2)));

    Set<String> named4 = new HashSet<>();
    assertTrue(cache.addNamedKeys(v4, 100, named4));
    assertEquals(Reachability.namedKeys(manifest(4, List.of(SST, PACK_1))), named4);
    Set<String> named5 = new HashSet<>();
    assertTrue(cache.addNamedKeys(v5, 100, named5));
    assertEquals(Reachability.namedKeys(manifest(5, List.of(SST, PACK_2))), named5,
        "version 5's manifest names its own base snapshot's pack");

    // What a round with version 5 as the only root would delete.
    List<Reachability.Listed> listing = new ArrayList<>();
    for (String k : List.of(v4, v5, SST, PACK_1, PACK_2)) {
      listing.add(new Reachability.Listed(k, 100, NOW - 2 * HOUR));
    }
    Reachability.Plan plan = Reachability.plan(listing, 5, 1);
    Set<String> named = new HashSet<>();
    for (Reachability.Listed root : plan.roots()) {
      if (StoreLayout.versionOf(root.key()) == 5) {
        assertTrue(cache.addNamedKeys(root.key(), root.size(), named));
      }
    }
    List<String> garbage = Reachability.garbage(listing, plan, named, Set.of(), NOW, HOUR)
        .garbage().stream().map(Reachability.Listed::key).toList();
    assertFalse(garbage.contains(PACK_2), "the live snapshot's pack is never garbage: "
        + garbage);
  }

  @Test
  void manifestsOnOneSnapshotShareItsKeysAndAStaleSizeIsAMiss() {
    ManifestCache cache = new ManifestCache(16);
    cache.put(StoreLayout.versionObject(4), 100, manifest(4, List.of(SST, PACK_1)));
    cache.put(StoreLayout.versionObject(5), 100, manifest(5, List.of(SST, PACK_1)));
    Set<String> named = new HashSet<>();
    assertTrue(cache.addNamedKeys(StoreLayout.versionObject(5), 100, named));
    assertEquals(Set.of(SST, PACK_1, StoreLayout.versionObject(5)), named);
    assertFalse(cache.addNamedKeys(StoreLayout.versionObject(5), 101, new HashSet<>()),
        "an entry is valid only for the object size it was read with");
    assertEquals(2, cache.size());
  }

  /**
   * Beyond its capacity the cache drops the lowest version, however recently it was read: a
   * round reads old versions waiting out the grace period after the retained ones, and those
   * must not push retained manifests out (seen as a thrash in a CI run).
   */
  @Test
  void beyondItsCapacityTheLowestVersionGoesNotTheLeastRecentlyRead() {
    ManifestCache cache = new ManifestCache(3);
    for (long v = 10; v <= 12; v++) {
      cache.put(StoreLayout.versionObject(v), 100, manifest(v, List.of(SST, PACK_1)));
    }
    assertTrue(cache.addNamedKeys(StoreLayout.versionObject(10), 100, new HashSet<>()));
    cache.put(StoreLayout.versionObject(4), 100, manifest(4, List.of(SST, PACK_1)));
    assertFalse(cache.addNamedKeys(StoreLayout.versionObject(4), 100, new HashSet<>()),
        "an old version read into a full cache of newer ones is the one dropped");
    cache.put(StoreLayout.versionObject(13), 100, manifest(13, List.of(SST, PACK_1)));
    assertFalse(cache.addNamedKeys(StoreLayout.versionObject(10), 100, new HashSet<>()),
        "the lowest version goes though it was read last");
    for (long v = 11; v <= 13; v++) {
      assertTrue(cache.addNamedKeys(StoreLayout.versionObject(v), 100, new HashSet<>()));
    }
    assertEquals(3, cache.size());
  }
}
