// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.List;
import java.util.TreeMap;
import java.util.stream.Stream;

/**
 * The input and output files of the streaming tests' queries: one input file per micro-batch
 * (Spark's file source with {@code maxFilesPerTrigger=1}), and one output file per batch as
 * {@link CrashDriver}'s sink writes it.
 */
final class BatchFiles {
  private BatchFiles() { }

  /**
   * Writes batch {@code b}'s input file {@code part-<b>.json} atomically (a temporary file the
   * file source ignores, then a rename), with a last-modified time that grows with {@code b}, so
   * the source takes the files in order, one per batch.
   */
  static void write(Path in, int b, CharSequence jsonLines) throws IOException {
    Path tmp = in.resolve(String.format(".part-%03d.tmp", b));
    Files.writeString(tmp, jsonLines, StandardCharsets.UTF_8);
    Files.setLastModifiedTime(tmp, FileTime.fromMillis(1_700_000_000_000L + b * 1000L));
    Files.move(tmp, in.resolve(String.format("part-%03d.json", b)));
  }

  /** Batch id to the batch's output lines, from the {@code batch-<id>.txt} files in {@code out}. */
  static TreeMap<Long, List<String>> outputs(Path out) throws IOException {
    TreeMap<Long, List<String>> m = new TreeMap<>();
    try (Stream<Path> s = Files.list(out)) {
      for (Path f : s.filter(p -> p.getFileName().toString().matches("batch-[0-9]+\\.txt"))
          .toList()) {
        String n = f.getFileName().toString();
        m.put(Long.parseLong(n.substring(6, n.length() - 4)),
            Files.readAllLines(f, StandardCharsets.UTF_8));
      }
    }
    return m;
  }
}
