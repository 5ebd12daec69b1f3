// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import io.strata.format.FileRef;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The ranged GETs of one restore (pure: no I/O), as {@link Restorer} runs them.
 *
 * <p>Files stored back to back in one object (a base snapshot's pack of RocksDB's small files,
 * format.md "Base snapshots") are one <em>run</em> and fetched together: a restore issues one
 * GET per run, not one per file, so its GETs (and their first-byte latencies) are as few as the
 * objects it reads. A run longer than the part size ({@link #partBytes}) is split into GETs of
 * that size, so one large base SST spreads over every transfer thread. A GET is a list of
 * {@link Piece}s, each the bytes of one file it carries; a file that lies whole in one GET is
 * verified (length and XXHash64) while it streams, a file cut across GETs by reading it back
 * once all of them are in.
 *
 * @param gets the GETs, in the order the files first appear
 * @param partBytes the part size the plan was cut at, bytes ({@link Long#MAX_VALUE}: none)
 */
record DownloadPlan(List<Get> gets, long partBytes) {
  /** Smallest part of a multi-part download, bytes. */
  static final long MIN_PART_BYTES = 1L << 20;
  /** Largest part of a ranged download, bytes. */
  static final long MAX_PART_BYTES = 8L << 20;

  /**
   * The bytes of one file that one GET carries.
   *
   * @param file index of the file in the restore's list
   * @param from first byte of the piece within the object
   * @param length bytes, &gt; 0
   * @param whole true if the piece is the whole file (verified as it streams)
   */
  record Piece(int file, long from, long length, boolean whole) {
    /** One past the piece's last byte within the object. */
    long end() {
      return from + length;
    }
  }

  /**
   * One ranged GET.
   *
   * @param key the object
   * @param from first byte within the object
   * @param length bytes, &gt; 0
   * @param pieces the files' bytes it carries, in object order, covering it exactly
   */
  record Get(String key, long from, long length, List<Piece> pieces) { }

  /**
   * Plans the GETs of {@code files} on {@code parallelism} transfer threads. Empty files need
   * no GET and are in none.
   *
   * @throws IllegalStateException if the plan would not carry every byte of every file exactly
   *     once (a bug here; {@link FileRef} already rejects ranges that overflow)
   */
  static DownloadPlan of(List<FileRef> files, int parallelism) {
    List<List<Integer>> runs = runs(files);
    List<Long> runLengths = new ArrayList<>();
    for (List<Integer> run : runs) {
      FileRef first = files.get(run.get(0));
      FileRef last = files.get(run.get(run.size() - 1));
      runLengths.add(last.offset() + last.length() - first.offset());
    }
    long part = partBytes(runLengths, parallelism);
    List<Get> gets = new ArrayList<>();
    for (int r = 0; r < runs.size(); r++) {
      List<Integer> run = runs.get(r);
      String key = files.get(run.get(0)).key();
      long runFrom = files.get(run.get(0)).offset();
      long runEnd = runFrom + runLengths.get(r);
      for (long from = runFrom; from < runEnd; ) {
        long to = part >= runEnd - from ? runEnd : from + part; // no overflow at Long.MAX_VALUE
        List<Piece> pieces = new ArrayList<>();
        for (int i : run) {
          FileRef f = files.get(i);
          long a = Math.max(from, f.offset());
          long b = Math.min(to, f.offset() + f.length());
          if (a < b) {
            pieces.add(new Piece(i, a, b - a, a == f.offset() && b == f.offset() + f.length()));
          }
        }
        gets.add(new Get(key, from, to - from, List.copyOf(pieces)));
        from = to;
      }
    }
    long[] covered = new long[files.size()];
    for (Get g : gets) {
      for (Piece p : g.pieces()) {
        covered[p.file()] += p.length();
      }
    }
    for (int i = 0; i < files.size(); i++) {
      if (covered[i] != files.get(i).length()) { // every byte of every file in exactly one GET
        throw new IllegalStateException("Download plan carries " + covered[i] + " of the "
            + files.get(i).length() + " bytes of " + files.get(i));
      }
    }
    return new DownloadPlan(List.copyOf(gets), part);
  }

  /**
   * Indices of the files cut across GETs, in ascending order: those {@link Restorer} verifies by
   * reading back once every GET is in (every other file is verified as it streams).
   */
  java.util.SortedSet<Integer> cutFiles() {
    java.util.SortedSet<Integer> cut = new java.util.TreeSet<>();
    for (Get g : gets) {
      for (Piece p : g.pieces()) {
        if (!p.whole()) {
          cut.add(p.file());
        }
      }
    }
    return cut;
  }

  /**
   * The runs of {@code files}: indices of non-empty files, grouped by object in the order the
   * objects first appear, each group sorted by offset and cut wherever a file does not start
   * exactly where the one before it ends (a gap is never downloaded; an overlap starts a run of
   * its own).
   */
  private static List<List<Integer>> runs(List<FileRef> files) {
    Map<String, List<Integer>> byKey = new LinkedHashMap<>();
    for (int i = 0; i < files.size(); i++) {
      if (files.get(i).length() > 0) {
        byKey.computeIfAbsent(files.get(i).key(), k -> new ArrayList<>()).add(i);
      }
    }
    List<List<Integer>> runs = new ArrayList<>();
    for (List<Integer> group : byKey.values()) {
      group.sort((x, y) -> Long.compare(files.get(x).offset(), files.get(y).offset()));
      List<Integer> run = new ArrayList<>();
      long end = -1;
      for (int i : group) {
        FileRef f = files.get(i);
        if (!run.isEmpty() && f.offset() != end) {
          runs.add(run);
          run = new ArrayList<>();
        }
        run.add(i);
        end = f.offset() + f.length();
      }
      runs.add(run);
    }
    return runs;
  }

  /**
   * The part size for downloading runs of {@code lengths} bytes on {@code parallelism} threads:
   * the smallest size between {@link #MIN_PART_BYTES} and {@link #MAX_PART_BYTES} at which the
   * restore's GETs (one per part; a run no longer than the part is one GET) fit in one round of
   * the threads, else {@link #MAX_PART_BYTES}. One round: every thread busy once, no GET waiting
   * for a thread, and no more requests than that needs. One thread: {@link Long#MAX_VALUE}
   * (parts would only add requests and a read-back).
   */
  static long partBytes(List<Long> lengths, int parallelism) {
    if (parallelism <= 1) {
      return Long.MAX_VALUE;
    }
    long lo = MIN_PART_BYTES;
    long hi = MAX_PART_BYTES;
    if (gets(lengths, hi) > parallelism) {
      return hi;
    }
    while (lo < hi) { // the smallest part in [lo, hi] whose GETs fit
      long mid = lo + (hi - lo) / 2;
      if (gets(lengths, mid) <= parallelism) {
        hi = mid;
      } else {
        lo = mid + 1;
      }
    }
    return lo;
  }

  private static long gets(List<Long> lengths, long part) {
    long n = 0;
    for (long l : lengths) {
      n += Math.max(1, (l + part - 1) / part);
    }
    return n;
  }
}
