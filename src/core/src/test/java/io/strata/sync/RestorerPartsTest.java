package io.strata.sync;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import org.junit.jupiter.api.Test;

/** {@link Restorer#partBytes}: the part size of a restore's ranged GETs. */
class RestorerPartsTest {
  private static final long MIB = 1L << 20;

  @Test
  void smallFilesAreOneGetEachAtTheSmallestPart() {
    assertEquals(Restorer.MIN_PART_BYTES, Restorer.partBytes(List.of(1000L, 2000L, 0L), 8));
  }

  @Test
  void oneLargeFileIsSplitSoEveryGetRunsAtOnce() {
    // 9.5 MiB and five small files on 8 threads: 3 parts of the large file + 5 GETs = 8.
    long part = Restorer.partBytes(List.of(19 * MIB / 2, 100L, 200L, 300L, 400L, 500L), 8);
    assertEquals((19 * MIB / 2 + 2) / 3, part);
  }

  @Test
  void partsNeverExceedTheLargestPartEvenWhenGetsOutnumberTheThreads() {
    assertEquals(Restorer.MAX_PART_BYTES, Restorer.partBytes(List.of(100 * MIB), 4));
    assertEquals(Restorer.MAX_PART_BYTES,
        Restorer.partBytes(List.of(1L, 2L, 3L, 4L, 5L, 6L, 7L, 8L, 9L), 8));
  }

  @Test
  void oneThreadSplitsNothing() {
    assertEquals(Long.MAX_VALUE, Restorer.partBytes(List.of(100 * MIB, 1L), 1));
  }

  @Test
  void aFileThatFillsTheThreadsIsSplitEvenly() {
    assertEquals(3 * MIB / 2, Restorer.partBytes(List.of(3 * MIB), 2));
  }
}
