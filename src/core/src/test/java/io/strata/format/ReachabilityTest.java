// SPDX-License-Identifier: Apache-2.0
package io.strata.format;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The garbage-collection rule, on hand-made listings and manifests (no I/O). */
class ReachabilityTest {
  private static final long NOW = 1_800_000_000_000L;
  private static final long HOUR = 3_600_000L;
  private static final long OLD = NOW - 2 * HOUR;
  private static final long YOUNG = NOW - 60_000L;
  private static final String A1 = "018c0a1b2c3d-00112233445566ff";
  private static final String A2 = "018c0a1b2c3e-8899aabbccddeeff";
  private static final String SST_X = "sst/0123456789abcdef0123456789abcdef.sst";
  private static final String SST_Y = "sst/fedcba9876543210fedcba9876543210.sst";
  private static final String PACK = StoreLayout.snapshotPack(3, A1,
      "00112233445566778899aabbccddeeff");

  private static Reachability.Listed old(String key) {
    return new Reachability.Listed(key, 100, OLD);
  }

  private static Reachability.Listed young(String key) {
    return new Reachability.Listed(key, 100, YOUNG);
  }

  private static FileRef ref(String key) {
    return new FileRef(key, 0, 10, 42);
  }

  /** A manifest of {@code version} with base files {@code baseKeys} and deltas in {@code deltaKeys}. */
  private static Manifest manifest(long version, List<String> baseKeys, List<String> deltaKeys) {
    Optional<BaseSnapshot> base = Optional.empty();
    if (!baseKeys.isEmpty()) {
      List<BaseSnapshot.BaseFile> files = new ArrayList<>();
      for (int i = 0; i < baseKeys.size(); i++) {
        files.add(new BaseSnapshot.BaseFile("f" + i, ref(baseKeys.get(i))));
      }
      base = Optional.of(new BaseSnapshot(3, A1, files));
    }
    List<Delta> deltas = new ArrayList<>();
    long v = version - deltaKeys.size() + 1;
    for (String k : deltaKeys) {
      deltas.add(new Delta(v++, A1, ref(k)));
    }
    return new Manifest(1, "0/0/default", version, A1, version - 1, Optional.of(A1), base,
        deltas, "{}", "{}", 0, 0);
  }

  @Test
  void keysAreClassifiedByShape() {
    assertEquals(Reachability.Kind.VERSION_OBJECT,
        Reachability.kindOf(StoreLayout.versionObject(7)));
    assertEquals(Reachability.Kind.VERSION_OBJECT,
        Reachability.kindOf(StoreLayout.versionObject(7, A1)));
    assertEquals(Reachability.Kind.SPILL, Reachability.kindOf(StoreLayout.spill(7, A1, 2)));
    assertEquals(7, StoreLayout.spillVersionOf(StoreLayout.spill(7, A1, 2)));
    assertEquals(Reachability.Kind.SNAPSHOT_SST, Reachability.kindOf(SST_X));
    assertEquals(Reachability.Kind.SNAPSHOT_PACK, Reachability.kindOf(PACK));
    assertEquals(3, StoreLayout.snapshotPackVersionOf(PACK));
    for (String foreign : List.of("_metadata/schema", "v/7.svo.tmp", "v/abc.svo", "sst/x.sst",
        "spill/7.sst", "snap/old.pack", "left-keyToNumValues/v/00000000000000000001.svo",
        "v/00000000000000000007/not-an-attempt.svo")) {
      assertEquals(Reachability.Kind.FOREIGN, Reachability.kindOf(foreign), foreign);
    }
  }

  @Test
  void newestIsTheCallersOwnVersionOrWithoutOneTheListings() {
    List<Reachability.Listed> listing = List.of(old(StoreLayout.versionObject(1)),
        old(StoreLayout.versionObject(2)), old(StoreLayout.versionObject(9, A1)));
    Reachability.Plan fromCaller = Reachability.plan(listing, 4, 3);
    assertEquals(4, fromCaller.newestVersion(),
        "versions listed above the caller's (an earlier run's above a rewind point, or another "
            + "instance's ahead) never lift the window");
    assertEquals(1, fromCaller.oldestRetainedVersion(), "4 - 3, Spark's rule");
    assertEquals(List.of(StoreLayout.versionObject(1), StoreLayout.versionObject(2),
        StoreLayout.versionObject(9, A1)), keys(fromCaller.roots()));
    Reachability.Plan fromListing = Reachability.plan(listing, -1, 3);
    assertEquals(9, fromListing.newestVersion(), "a caller with no version: the listing's");
    assertEquals(6, fromListing.oldestRetainedVersion(), "9 - 3, Spark's rule");
    assertEquals(List.of(StoreLayout.versionObject(9, A1)), keys(fromListing.roots()));
    Reachability.Plan later = Reachability.plan(listing, 12, 3);
    assertEquals(12, later.newestVersion());
    assertEquals(List.of(StoreLayout.versionObject(9, A1)), keys(later.roots()),
        "12 - 3 = 9 is the oldest retained version");
    assertEquals(List.of(), keys(Reachability.plan(listing, 13, 3).roots()));
    assertThrows(IllegalArgumentException.class, () -> Reachability.plan(listing, 1, 0));
  }

  @Test
  void versionsOlderThanTheRetentionAreGarbageUnlessARetainedManifestNamesThem() {
    List<Reachability.Listed> listing = new ArrayList<>();
    for (long v = 1; v <= 10; v++) {
      listing.add(old(StoreLayout.versionObject(v)));
    }
    listing.add(old(SST_X));
    listing.add(old(SST_Y));
    listing.add(old(PACK));
    Reachability.Plan plan = Reachability.plan(listing, -1, 4);
    assertEquals(10, plan.newestVersion());
    assertEquals(6, plan.oldestRetainedVersion(), "versions [newest - 4, newest] retained");
    assertEquals(5, plan.roots().size());
    // The retained manifests name a base (SST_X, PACK, and a delta inside v/2) and deltas 4..10.
    Set<String> named = new java.util.HashSet<>();
    for (long v = 6; v <= 10; v++) {
      List<String> deltas = new ArrayList<>();
      for (long d = 4; d <= v; d++) {
        deltas.add(StoreLayout.versionObject(d));
      }
      named.addAll(Reachability.namedKeys(manifest(v,
          List.of(SST_X, PACK, StoreLayout.versionObject(2)), deltas)));
    }
    Reachability.Verdict verdict = Reachability.garbage(listing, plan, named, Set.of(), NOW, HOUR);
    assertEquals(List.of(StoreLayout.versionObject(1), StoreLayout.versionObject(3), SST_Y),
        keys(verdict.garbage()), "unnamed old versions and the unnamed SST, version objects first");
    assertEquals(5, verdict.retainedVersionObjects());
    assertEquals(3 + 2, verdict.named(), "v/2 (pinned by the base), v/4, v/5, SST_X and PACK: "
        + verdict);
    assertEquals(3, verdict.pinnedOldVersionObjects(), "v/2, v/4, v/5");
    assertEquals(300, verdict.garbageBytes());
  }

  /**
   * A savepoint's hold ({@code holds/<savepoint>/<key>.hold}) makes its version object a root
   * however old: the object and what its manifest names stay, also a held version without a
   * delta; the hold itself is never garbage; without the hold, all of it goes. The settled time
   * stays the retention's.
   */
  @Test
  void aVersionObjectASavepointHoldsIsARootHoweverOld() {
    String held = StoreLayout.generationVersionObject(2, 1);
    String emptyHeld = StoreLayout.versionObject(3);
    String hold = StoreLayout.hold("before-deploy", held);
    String emptyHold = StoreLayout.hold("empty", emptyHeld);
    assertEquals(held, StoreLayout.heldVersionObjectOf(hold));
    assertEquals("before-deploy", StoreLayout.holdSavepointOf(hold));
    assertEquals(null, StoreLayout.heldVersionObjectOf("holds/x/v/abc.svo.hold"));
    assertEquals(null, StoreLayout.heldVersionObjectOf("holds/-x/" + held + ".hold"));
    assertThrows(IllegalArgumentException.class, () -> StoreLayout.hold("a/b", held));
    assertThrows(IllegalArgumentException.class, () -> StoreLayout.hold("ok", SST_X));

    List<Reachability.Listed> listing = new ArrayList<>();
    listing.add(old(StoreLayout.versionObject(1)));
    listing.add(old(held));
    listing.add(old(emptyHeld));
    for (long v = 4; v <= 10; v++) {
      listing.add(young(StoreLayout.versionObject(v)));
    }
    listing.add(old(SST_X));
    listing.add(old(SST_Y));
    listing.add(old(hold));
    listing.add(old(emptyHold));
    listing.add(old(StoreLayout.hold("gone", StoreLayout.versionObject(99))));
    Reachability.Plan plan = Reachability.plan(listing, -1, 2);
    assertEquals(8, plan.oldestRetainedVersion());
    assertEquals(Set.of(held, emptyHeld), plan.held(), "a hold of an unlisted object holds none");
    assertTrue(keys(plan.roots()).containsAll(List.of(held, emptyHeld)), plan::toString);
    assertEquals(YOUNG, plan.settledBeforeMillis(), "the retention's roots only");
    // The held version 2's manifest names versions 1 and 2 (and, say, a base file SST_X);
    // version 3 has no delta.
    Set<String> named = new java.util.HashSet<>(Reachability.namedKeys(manifest(2,
        List.of(), List.of(StoreLayout.versionObject(1), held))));
    named.add(SST_X);
    Reachability.Verdict verdict = Reachability.garbage(listing, plan, named, Set.of(), NOW,
        HOUR);
    assertEquals(List.of(SST_Y), keys(verdict.garbage()), verdict::toString);

    List<Reachability.Listed> released = new ArrayList<>(listing);
    released.removeIf(l -> StoreLayout.heldVersionObjectOf(l.key()) != null);
    Reachability.Plan after = Reachability.plan(released, -1, 2);
    assertEquals(Set.of(), after.held());
    assertEquals(List.of(StoreLayout.versionObject(1), held, emptyHeld, SST_X, SST_Y),
        keys(Reachability.garbage(released, after, Set.of(), Set.of(), NOW, HOUR).garbage()),
        "without the holds, what they kept goes");
  }

  @Test
  void youngObjectsAreKeptButAgeNeverMakesANamedObjectGarbage() {
    List<Reachability.Listed> listing = List.of(old(StoreLayout.versionObject(5)),
        young(SST_Y), old(SST_X), new Reachability.Listed(PACK, 100, NOW + HOUR));
    Reachability.Plan plan = Reachability.plan(listing, -1, 1);
    Reachability.Verdict verdict = Reachability.garbage(listing, plan, Set.of(SST_X), Set.of(),
        NOW, HOUR);
    assertEquals(List.of(), verdict.garbage(),
        "SST_X is named, SST_Y young, PACK from the future (clock skew) young: " + verdict);
    assertEquals(2, verdict.young());
    Reachability.Verdict noGrace = Reachability.garbage(listing, plan, Set.of(SST_X), Set.of(),
        NOW, 0);
    assertEquals(List.of(SST_Y), keys(noGrace.garbage()),
        "without a grace period only the future-dated pack survives");
    assertThrows(IllegalArgumentException.class,
        () -> Reachability.garbage(listing, plan, Set.of(), Set.of(), NOW, -1));
  }

  @Test
  void spillsOfTheNewestVersionOrLaterAreInFlight() {
    String orphan = StoreLayout.spill(4, A2, 0);
    String ofNewest = StoreLayout.spill(5, A2, 0);
    String running = StoreLayout.spill(6, A1, 3);
    List<Reachability.Listed> listing = List.of(old(StoreLayout.versionObject(5)), old(orphan),
        old(ofNewest), old(running));
    Reachability.Plan plan = Reachability.plan(listing, -1, 10);
    Reachability.Verdict verdict = Reachability.garbage(listing, plan, Set.of(), Set.of(), NOW,
        HOUR);
    assertEquals(List.of(orphan), keys(verdict.garbage()));
    assertEquals(2, verdict.inFlightSpills());
  }

  @Test
  void protectedAndForeignKeysAreNeverGarbage() {
    List<Reachability.Listed> listing = List.of(old(StoreLayout.versionObject(9)), old(SST_X),
        old(SST_Y), old("_metadata/v1"), old("v/junk.svo"));
    Reachability.Plan plan = Reachability.plan(listing, -1, 1);
    Reachability.Verdict verdict = Reachability.garbage(listing, plan, Set.of(), Set.of(SST_Y),
        NOW, HOUR);
    assertEquals(List.of(SST_X), keys(verdict.garbage()));
    assertEquals(1, verdict.protectedByCaller());
    assertEquals(2, verdict.foreign());
  }

  @Test
  void everyAttemptOfARetainedVersionIsARootAndOldAttemptsAreGarbage() {
    // Checkpoint format 2: two attempts of versions 1 and 2; the driver used A2 of version 2.
    String v1a1 = StoreLayout.versionObject(1, A1);
    String v1a2 = StoreLayout.versionObject(1, A2);
    String v2a1 = StoreLayout.versionObject(2, A1);
    String v2a2 = StoreLayout.versionObject(2, A2);
    List<Reachability.Listed> listing = List.of(old(v1a1), old(v1a2), old(v2a1), old(v2a2));
    // The caller committed version 3 (not listed yet): with R = 1, versions 2 and 3 are retained.
    Reachability.Plan plan = Reachability.plan(listing, 3, 1);
    assertEquals(List.of(v2a1, v2a2), keys(plan.roots()), "both attempts of version 2");
    Set<String> named = Set.of(v1a1); // both attempts of 2 were built on attempt A1 of 1
    Reachability.Verdict verdict = Reachability.garbage(listing, plan, named, Set.of(), NOW, HOUR);
    assertEquals(List.of(v1a2), keys(verdict.garbage()));
  }

  /**
   * The retained versions are exactly those Spark's HDFS-backed provider keeps loadable for
   * {@code minBatchesToRetain} (Spark 4.1 {@code HDFSBackedStateStoreProvider.cleanup}: {@code
   * earliestVersionToRetain = files.last.version - minVersionsToRetain}; nothing is deleted
   * unless it is &gt; 0, else only what versions below it alone need).
   */
  @Test
  void theRetainedVersionsAreThoseSparkKeeps() {
    for (int newest = 1; newest <= 30; newest++) {
      List<Reachability.Listed> listing = new ArrayList<>();
      for (long v = 1; v <= newest; v++) {
        listing.add(old(StoreLayout.versionObject(v)));
      }
      for (int retain = 1; retain <= 12; retain++) {
        long earliestVersionToRetain = newest - retain;
        Set<Long> spark = new java.util.TreeSet<>();
        for (long v = 1; v <= newest; v++) {
          if (earliestVersionToRetain <= 0 || v >= earliestVersionToRetain) {
            spark.add(v);
          }
        }
        Set<Long> strata = new java.util.TreeSet<>();
        Reachability.plan(listing, -1, retain).roots()
            .forEach(r -> strata.add(StoreLayout.versionOf(r.key())));
        assertEquals(spark, strata, "newest " + newest + ", minBatchesToRetain " + retain);
        assertEquals(Math.min(newest, retain + 1), strata.size());
      }
    }
  }

  @Test
  void anObjectOfUnknownAgeIsNeverOldEnough() {
    String unknownZero = SST_X;
    String unknownNegative = SST_Y;
    List<Reachability.Listed> listing = List.of(old(StoreLayout.versionObject(9)),
        new Reachability.Listed(unknownZero, 100, 0), new Reachability.Listed(unknownNegative,
            100, -1), new Reachability.Listed(StoreLayout.versionObject(1), 100, 0), old(PACK));
    Reachability.Plan plan = Reachability.plan(listing, -1, 1);
    for (long grace : List.of(0L, HOUR)) {
      Reachability.Verdict verdict = Reachability.garbage(listing, plan, Set.of(), Set.of(), NOW,
          grace);
      assertEquals(List.of(PACK), keys(verdict.garbage()),
          "no last-modified time (or the epoch) means too young, grace " + grace);
      assertEquals(3, verdict.young());
    }
    assertTrue(old(PACK).ageKnown());
    assertTrue(!new Reachability.Listed(PACK, 1, 0).ageKnown());
  }

  @Test
  void namedKeysListBaseFilesAndDeltas() {
    Manifest m = manifest(6, List.of(SST_X, PACK, PACK), List.of(StoreLayout.versionObject(5),
        StoreLayout.spill(6, A1, 0), StoreLayout.versionObject(6)));
    assertEquals(Set.of(SST_X, PACK, StoreLayout.versionObject(5), StoreLayout.spill(6, A1, 0),
        StoreLayout.versionObject(6)), Reachability.namedKeys(m));
    assertTrue(Reachability.namedKeys(manifest(1, List.of(), List.of())).isEmpty());
  }

  /** A published snapshot of version {@code v} on the lineage whose tip is delta {@code d}. */
  private static String publishedKey(long v, Delta d) {
    return StoreLayout.publishedSnapshot(v,
        new PublishedSnapshot.Tip(Optional.of(d), Optional.empty()).hash(),
        "00112233445566778899aabbccddeeff");
  }

  @Test
  void aPublishedSnapshotIsKeptWhileARetainedManifestCanUseIt() {
    // Version 6 was built from version 1 on: deltas 1..6, no base.
    Manifest m6 = manifest(6, List.of(), List.of(StoreLayout.versionObject(1),
        StoreLayout.versionObject(2), StoreLayout.versionObject(3), StoreLayout.versionObject(4),
        StoreLayout.versionObject(5), StoreLayout.versionObject(6)));
    String usable = publishedKey(4, m6.deltas().get(3));
    String superseded = publishedKey(4, new Delta(4, A2, ref(StoreLayout.versionObject(4))));
    String newer = publishedKey(7, m6.deltas().get(5));
    List<Reachability.Listed> listing = List.of(old(usable), old(superseded), old(newer),
        old(StoreLayout.versionObject(6)));
    Set<String> usableKeys = Reachability.usablePublishedSnapshots(listing,
        List.of(PublishedSnapshot.TipIndex.of(m6)));
    assertEquals(Set.of(usable), usableKeys, "same delta of 4; not another attempt's 4, not "
        + "a snapshot newer than every retained version");
    // A manifest whose base is at or after the snapshot has no use for it.
    Manifest based = manifest(6, List.of(SST_X), List.of(StoreLayout.versionObject(4),
        StoreLayout.versionObject(5), StoreLayout.versionObject(6)));
    assertTrue(Reachability.usablePublishedSnapshots(List.of(old(publishedKey(3,
        based.deltas().get(0)))), List.of(PublishedSnapshot.TipIndex.of(based))).isEmpty());
  }


  /**
   * Issue 43: an unreferenced version object below the retention, spill below the newest version
   * or unusable published snapshot written before every root is garbage at once, whatever the
   * grace period says; one written after the oldest root, or with an unknown time, waits for the
   * grace period; a base-snapshot file is never judged by the roots' times.
   */
  @Test
  void unreferencedObjectsWrittenBeforeEveryRootAreGarbageWithoutTheGracePeriod() {
    long rootTime = YOUNG + 10_000;
    String before = StoreLayout.versionObject(2);
    String sameSecond = StoreLayout.versionObject(3);
    String after = StoreLayout.spill(3, A2, 0);
    String unknown = StoreLayout.versionObject(1);
    String spillBefore = StoreLayout.spill(4, A2, 0);
    String bsm = StoreLayout.publishedSnapshot(4, 7L, "00112233445566778899aabbccddeeff");
    List<Reachability.Listed> listing = List.of(
        new Reachability.Listed(before, 10, rootTime - 5_000),
        new Reachability.Listed(sameSecond, 10, rootTime - 500),
        new Reachability.Listed(after, 10, rootTime + 2_000),
        new Reachability.Listed(unknown, 10, 0),
        new Reachability.Listed(spillBefore, 10, rootTime - 3_000),
        new Reachability.Listed(bsm, 10, rootTime - 3_000),
        new Reachability.Listed(SST_X, 10, rootTime - 3_000),
        new Reachability.Listed(StoreLayout.versionObject(5), 10, rootTime),
        new Reachability.Listed(StoreLayout.versionObject(6), 10, rootTime + 4_000));
    Reachability.Plan plan = Reachability.plan(listing, 6, 1);
    assertEquals(rootTime, plan.settledBeforeMillis(), "the oldest root's time");
    Reachability.Verdict verdict = Reachability.garbage(listing, plan, Set.of(), Set.of(), NOW,
        HOUR);
    assertEquals(List.of(before, bsm, spillBefore), keys(verdict.garbage()),
        "written a second or more before every root; the rest is younger than the grace period");
    assertEquals(4, verdict.young());

    Reachability.Plan unknownRoot = Reachability.plan(List.of(
        new Reachability.Listed(StoreLayout.versionObject(5), 10, 0), listing.get(0)), 5, 1);
    assertEquals(-1, unknownRoot.settledBeforeMillis(), "a root of unknown time: grace only");
  }

  /**
   * Issue 43: a file the caller saw named by an object an earlier round deleted (retired) is
   * garbage once nothing names or protects it, however young; named or protected, it stays.
   */
  @Test
  void retiredFilesAreGarbageOnceUnnamedWhateverTheirAge() {
    String named = SST_Y;
    String protectedPack = PACK;
    List<Reachability.Listed> listing = List.of(young(StoreLayout.versionObject(9)),
        young(SST_X), young(named), young(protectedPack));
    Reachability.Plan plan = Reachability.plan(listing, 9, 3);
    Reachability.Verdict verdict = Reachability.garbage(listing, plan, Set.of(named),
        Set.of(protectedPack), Set.of(SST_X, named, protectedPack), NOW, HOUR);
    assertEquals(List.of(SST_X), keys(verdict.garbage()));
    Reachability.Verdict notRetired = Reachability.garbage(listing, plan, Set.of(named),
        Set.of(protectedPack), Set.of(), NOW, HOUR);
    assertEquals(List.of(), keys(notRetired.garbage()), "young and never retired: kept");
  }

  @Test
  void theFilesOfAPublishedSnapshotGoOnlyInARoundAfterIt() {
    String pub = publishedKey(3, new Delta(3, A1, ref(StoreLayout.versionObject(3))));
    List<Reachability.Listed> listing = List.of(old(pub), old(PACK), old(SST_X),
        old(StoreLayout.versionObject(1)), old(StoreLayout.versionObject(20)));
    Reachability.Plan plan = Reachability.plan(listing, 20, 5);
    // Usable (the caller names it): kept; its files are named while it is listed.
    Reachability.Verdict kept = Reachability.garbage(listing, plan, Set.of(pub, PACK, SST_X),
        Set.of(), NOW, HOUR);
    assertEquals(List.of(StoreLayout.versionObject(1)), keys(kept.garbage()));
    // Of no use: deleted (after the version objects); its files, still named by it, stay.
    Reachability.Verdict first = Reachability.garbage(listing, plan, Set.of(PACK, SST_X),
        Set.of(), NOW, HOUR);
    assertEquals(List.of(StoreLayout.versionObject(1), pub), keys(first.garbage()));
    assertEquals(1, first.publishedSnapshots());
    // The next round (the published snapshot gone, nothing names them) deletes the files.
    List<Reachability.Listed> after = List.of(old(PACK), old(SST_X),
        old(StoreLayout.versionObject(20)));
    Reachability.Verdict next = Reachability.garbage(after, Reachability.plan(after, 20, 5),
        Set.of(), Set.of(), NOW, HOUR);
    assertEquals(List.of(PACK, SST_X), keys(next.garbage()));
    // A young published snapshot is kept like any young object.
    List<Reachability.Listed> fresh = List.of(young(pub), old(StoreLayout.versionObject(20)));
    assertTrue(Reachability.garbage(fresh, Reachability.plan(fresh, 20, 5), Set.of(), Set.of(),
        NOW, HOUR).garbage().isEmpty());
  }

  private static List<String> keys(List<Reachability.Listed> ls) {
    return ls.stream().map(Reachability.Listed::key).toList();
  }

  @Test
  void whatAnUnreadablePublishedSnapshotMightNameIsEveryBaseSnapshotFile() {
    List<Reachability.Listed> listing = List.of(old(SST_X), young(SST_Y), old(PACK),
        old(StoreLayout.versionObject(4)), old(StoreLayout.spill(4, A1, 1)),
        old("_metadata/schema"));
    assertEquals(Set.of(SST_X, SST_Y, PACK), Reachability.baseSnapshotFiles(listing));
  }
}
