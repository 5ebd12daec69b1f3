// SPDX-License-Identifier: Apache-2.0
package io.strata.cluster;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/**
 * The cluster test's deterministic input: JSON-lines files of events {@code {"id": long, "key":
 * string}} in one local directory that the driver and every executor read (all JVMs run on this
 * host). File {@code n} holds {@value #NEW_PER_FILE} new ids, {@code n * NEW_PER_FILE} onwards,
 * then every {@value #RESEND_EVERY}th id of file {@code n - 1} again (duplicates across files and
 * so across micro-batches) and its own first {@value #REPEAT_IN_FILE} ids again (duplicates inside
 * one batch). An id's key is always {@code "k" + id % KEYS}, so a repeated event is the same row
 * and {@code dropDuplicates("id")} has one right answer.
 *
 * <p>Each file is written beside the directory and moved in atomically, so a file source never
 * sees half a file.
 */
final class StreamInput {
  /** The events' schema: {@code id BIGINT NOT NULL, key STRING NOT NULL}. */
  static final StructType SCHEMA = new StructType()
      .add("id", DataTypes.LongType, false)
      .add("key", DataTypes.StringType, false);
  static final int NEW_PER_FILE = 200;
  static final int RESEND_EVERY = 4;
  static final int REPEAT_IN_FILE = 10;
  static final int KEYS = 16;

  private final Path dir;
  private final Path staging;
  private final Set<Long> ids = new HashSet<>();
  private int files;

  /**
   * @param dir the directory the stream reads; created, must be new or empty
   */
  StreamInput(Path dir) throws IOException {
    this.dir = Files.createDirectories(dir);
    this.staging = Files.createDirectories(dir.resolveSibling(dir.getFileName() + "-staging"));
  }

  /** The directory the stream reads. */
  Path dir() {
    return dir;
  }

  /** How many files were written so far. */
  int files() {
    return files;
  }

  /** Writes the next {@code count} files into the directory, one after the other. */
  void writeFiles(int count) throws IOException {
    for (int i = 0; i < count; i++) {
      int n = files;
      StringBuilder sb = new StringBuilder();
      long first = (long) n * NEW_PER_FILE;
      for (long id = first; id < first + NEW_PER_FILE; id++) {
        line(sb, id);
      }
      if (n > 0) {
        for (long id = first - NEW_PER_FILE; id < first; id += RESEND_EVERY) {
          line(sb, id);
        }
      }
      for (long id = first; id < first + REPEAT_IN_FILE; id++) {
        line(sb, id);
      }
      String name = String.format("events-%05d.json", n);
      Path tmp = staging.resolve(name);
      Files.writeString(tmp, sb, StandardCharsets.UTF_8);
      Files.move(tmp, dir.resolve(name), StandardCopyOption.ATOMIC_MOVE);
      files++;
    }
  }

  private void line(StringBuilder sb, long id) {
    ids.add(id);
    sb.append("{\"id\":").append(id).append(",\"key\":\"").append(key(id)).append("\"}\n");
  }

  private static String key(long id) {
    return "k" + (id % KEYS);
  }

  /**
   * The answer of {@code dropDuplicates("id").groupBy("key").count()} over every file written so
   * far, computed here without Spark: distinct ids per key, sorted by key.
   */
  Map<String, Long> expectedCounts() {
    Map<String, Long> counts = new TreeMap<>();
    for (long id : ids) {
      counts.merge(key(id), 1L, Long::sum);
    }
    return counts;
  }
}
