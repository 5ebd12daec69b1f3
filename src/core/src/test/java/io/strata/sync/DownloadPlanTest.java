// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.format.FileRef;
import java.util.List;
import org.junit.jupiter.api.Test;

/** {@link DownloadPlan}: a restore's ranged GETs and their part size. */
class DownloadPlanTest {
  private static final long MIB = 1L << 20;

  @Test
  void smallFilesAreOneGetEachAtTheSmallestPart() {
    assertEquals(DownloadPlan.MIN_PART_BYTES, DownloadPlan.partBytes(List.of(1000L, 2000L, 0L), 8));
  }

  @Test
  void oneLargeFileIsSplitSoEveryGetRunsAtOnce() {
    // 9.5 MiB and five small files on 8 threads: 3 parts of the large file + 5 GETs = 8.
    long part = DownloadPlan.partBytes(List.of(19 * MIB / 2, 100L, 200L, 300L, 400L, 500L), 8);
    assertEquals((19 * MIB / 2 + 2) / 3, part);
  }

  @Test
  void partsNeverExceedTheLargestPartEvenWhenGetsOutnumberTheThreads() {
    assertEquals(DownloadPlan.MAX_PART_BYTES, DownloadPlan.partBytes(List.of(100 * MIB), 4));
    assertEquals(DownloadPlan.MAX_PART_BYTES,
        DownloadPlan.partBytes(List.of(1L, 2L, 3L, 4L, 5L, 6L, 7L, 8L, 9L), 8));
  }

  @Test
  void oneThreadSplitsNothing() {
    assertEquals(Long.MAX_VALUE, DownloadPlan.partBytes(List.of(100 * MIB, 1L), 1));
  }

  @Test
  void aFileThatFillsTheThreadsIsSplitEvenly() {
    assertEquals(3 * MIB / 2, DownloadPlan.partBytes(List.of(3 * MIB), 2));
  }

  @Test
  void filesBackToBackInOneObjectAreOneGet() {
    // A base snapshot's pack (CURRENT, MANIFEST, OPTIONS), listed out of order, and one delta.
    List<FileRef> files = List.of(
        new FileRef("snap/p.pack", 16, 300, 2),
        new FileRef("v/1", 0, 5000, 3),
        new FileRef("snap/p.pack", 0, 16, 1),
        new FileRef("snap/p.pack", 316, 4000, 4));
    DownloadPlan plan = DownloadPlan.of(files, 8);
    assertEquals(2, plan.gets().size(), plan.toString());
    DownloadPlan.Get pack = plan.gets().get(0);
    assertEquals("snap/p.pack", pack.key());
    assertEquals(0, pack.from());
    assertEquals(4316, pack.length());
    assertEquals(List.of(2, 0, 3), pack.pieces().stream().map(DownloadPlan.Piece::file).toList());
    assertTrue(pack.pieces().stream().allMatch(DownloadPlan.Piece::whole));
    assertEquals(new DownloadPlan.Get("v/1", 0, 5000,
        List.of(new DownloadPlan.Piece(1, 0, 5000, true))), plan.gets().get(1));
  }

  @Test
  void aGapOrAnOverlapStartsAnotherGetAndEmptyFilesNeedNone() {
    List<FileRef> files = List.of(
        new FileRef("o", 0, 100, 1),
        new FileRef("o", 200, 100, 2),   // gap of 100 bytes: never downloaded
        new FileRef("o", 250, 100, 3),   // overlaps the one before
        new FileRef("e", 0, 0, 4));      // empty: created, not fetched
    DownloadPlan plan = DownloadPlan.of(files, 8);
    assertEquals(List.of(0L, 200L, 250L), plan.gets().stream().map(DownloadPlan.Get::from)
        .toList());
    assertEquals(300, plan.gets().stream().mapToLong(DownloadPlan.Get::length).sum());
  }

  @Test
  void aLargeRunIsCutIntoPartsAndItsCutFilesAreMarkedForReadBack() {
    // One object: a 3 MiB file then a 100-byte one; 2 threads: parts of 1.5 MiB + 50 bytes.
    List<FileRef> files = List.of(new FileRef("o", 0, 3 * MIB, 1),
        new FileRef("o", 3 * MIB, 100, 2));
    DownloadPlan plan = DownloadPlan.of(files, 2);
    assertEquals((3 * MIB + 100 + 1) / 2, plan.partBytes());
    assertEquals(2, plan.gets().size());
    DownloadPlan.Get a = plan.gets().get(0);
    DownloadPlan.Get b = plan.gets().get(1);
    assertEquals(3 * MIB + 100, a.length() + b.length());
    assertEquals(b.from(), a.from() + a.length());
    assertEquals(List.of(new DownloadPlan.Piece(0, 0, a.length(), false)), a.pieces());
    assertEquals(2, b.pieces().size());
    assertFalse(b.pieces().get(0).whole(), "the tail of the cut file");
    assertEquals(new DownloadPlan.Piece(1, 3 * MIB, 100, true), b.pieces().get(1));
    assertEquals(java.util.Set.of(0), plan.cutFiles(), "only the cut file is read back");
  }

  @Test
  void oneThreadFetchesEachRunInOneGetWhateverItsSize() {
    DownloadPlan plan = DownloadPlan.of(List.of(new FileRef("o", 0, 100 * MIB, 1),
        new FileRef("o", 100 * MIB, 5, 2)), 1);
    assertEquals(1, plan.gets().size());
    assertEquals(100 * MIB + 5, plan.gets().get(0).length());
  }
}
