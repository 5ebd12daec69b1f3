// SPDX-License-Identifier: Apache-2.0
package io.strata.engine;

import java.util.ArrayList;
import java.util.List;

/**
 * Decides when the local database's small files at its bottommost level are merged, and which.
 *
 * <p>Why it is needed: the database changes only by ingesting one SST delta per commit, and
 * RocksDB places an ingested file in the lowest level whose files its key range does not
 * overlap. A delta whose keys all sort after everything already there (an append-only key space:
 * deduplication without a watermark, keys that begin with an ever-growing time or id) goes
 * straight to the bottommost level, where leveled compaction never merges files. Such a store
 * gains a file per commit for as long as its database lives: each one held open ({@code
 * max_open_files} is -1), listed in the MANIFEST, and uploaded as its own object by every base
 * snapshot, so a cold restore downloads one object per commit since the database opened (the
 * fault campaign found 286 files in one deduplication store after 280 batches; issue 43).
 * Spark's RocksDB provider writes through memtables, whose flushes leveled compaction does
 * merge, so it never has this pattern.
 *
 * <p>The rule: once more than {@value #MAX_SMALL_FILES} files of the bottommost level are
 * smaller than {@value #SMALL_FILE_BYTES} bytes, all of them are merged into that level (RocksDB
 * {@code CompactFiles}; outputs are cut at its target file size, 64 MiB). A merge's output that
 * is still small takes part in the next merge, so a tiny file is rewritten about once per
 * {@value #MAX_SMALL_FILES} commits: a few kilobytes, in the background (maintenance), never on
 * the commit path.
 */
final class SmallFileMerge {
  /** Small files at the bottommost level that trigger a merge when exceeded. */
  static final int MAX_SMALL_FILES = 16;
  /** A file below this size, bytes, counts as small (a quarter of RocksDB's 64 MiB target). */
  static final long SMALL_FILE_BYTES = 16L << 20;

  /** One live SST file: its name as RocksDB lists it, its level and its size in bytes. */
  record LiveFile(String name, int level, long size) { }

  /** A merge to run: the files (names as listed) and the bottommost level they are merged into. */
  record Merge(List<String> files, int level) { }

  private SmallFileMerge() { }

  /**
   * The files to merge now: every small file of the bottommost level if there are more than
   * {@value #MAX_SMALL_FILES} of them, else none.
   *
   * @param live the database's live SST files (of its one column family)
   * @return the files, as {@code live} names them, and their level; no files when no merge is due
   */
  static Merge due(List<LiveFile> live) {
    int bottom = -1;
    for (LiveFile f : live) {
      bottom = Math.max(bottom, f.level());
    }
    List<String> small = new ArrayList<>();
    for (LiveFile f : live) {
      if (f.level() == bottom && f.size() < SMALL_FILE_BYTES) {
        small.add(f.name());
      }
    }
    return new Merge(small.size() > MAX_SMALL_FILES ? small : List.of(), bottom);
  }
}
