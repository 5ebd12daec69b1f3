// SPDX-License-Identifier: Apache-2.0
package io.strata;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.testkit.RepoRoot;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Dependencies point one way (docs: STYLE.md): spark -&gt; sync -&gt; {engine, format,
 * objectstore}; only engine imports RocksDB, only objectstore (and the test kit's server
 * launcher) the AWS SDK, only spark and checkpoint (and the demo) Spark, Scala and Hadoop; the
 * compiler keeps Spark out of strata-core, which has no Spark on its class path. checkpoint
 * (Spark's own checkpoint files) sits beside spark on objectstore and knows no state store.
 */
class LayeringTest {
  private static final String SPARK = "org.apache.spark";
  private static final String SCALA = "scala.";
  private static final String HADOOP = "org.apache.hadoop";
  private static final String ROCKSDB = "org.rocksdb";
  private static final String AWS = "software.amazon";

  private static final String CHECKPOINT = "io.strata.checkpoint";

  private static final Map<String, List<String>> FORBIDDEN = Map.of(
      "format", List.of(SPARK, SCALA, HADOOP, ROCKSDB, AWS, "io.strata.spark", "io.strata.sync",
          "io.strata.engine", "io.strata.objectstore", "io.strata.config", "io.strata.metrics",
          CHECKPOINT),
      "engine", List.of(SPARK, SCALA, HADOOP, AWS, "io.strata.spark", "io.strata.sync",
          "io.strata.objectstore", CHECKPOINT),
      "objectstore", List.of(SPARK, SCALA, HADOOP, ROCKSDB, "io.strata.spark", "io.strata.sync",
          "io.strata.engine", "io.strata.format", CHECKPOINT),
      "sync", List.of(SPARK, SCALA, HADOOP, ROCKSDB, AWS, "io.strata.spark", CHECKPOINT),
      "config", List.of(SPARK, SCALA, HADOOP, ROCKSDB, AWS, "io.strata.spark", "io.strata.sync",
          "io.strata.engine", CHECKPOINT),
      "metrics", List.of(SPARK, SCALA, HADOOP, ROCKSDB, AWS, "io.strata.spark", "io.strata.sync",
          "io.strata.engine", CHECKPOINT),
      "spark", List.of(ROCKSDB, AWS, CHECKPOINT),
      // Spark's checkpoint files through the object store: Spark and Hadoop, no SDK, no state.
      "checkpoint", List.of(ROCKSDB, AWS, "io.strata.spark", "io.strata.sync",
          "io.strata.engine", "io.strata.format"),
      // Hadoop's configuration as S3A reads it, for spark and checkpoint alike.
      "hadoop", List.of(SPARK, SCALA, ROCKSDB, AWS, "io.strata.spark", "io.strata.sync",
          "io.strata.engine", "io.strata.format", "io.strata.objectstore", CHECKPOINT));

  @Test
  void packagesImportOnlyWhatTheLayeringAllows() throws IOException {
    List<String> offending = new ArrayList<>();
    for (Map.Entry<String, List<String>> e : FORBIDDEN.entrySet()) {
      Path dir = packageDir(e.getKey());
      assertTrue(Files.isDirectory(dir), "missing: " + dir);
      try (Stream<Path> files = Files.list(dir)) {
        for (Path f : files.filter(p -> p.toString().endsWith(".java")).toList()) {
          for (String line : Files.readAllLines(f)) {
            String t = line.trim();
            if (!t.startsWith("import ")) {
              continue;
            }
            String imported = t.substring("import ".length()).replace("static ", "");
            for (String bad : e.getValue()) {
              if (imported.startsWith(bad)) {
                offending.add(e.getKey() + "/" + f.getFileName() + ": " + t);
              }
            }
          }
        }
      }
    }
    assertEquals(List.of(), offending);
  }

  @Test
  void everyPackageSaysWhatItOwns() {
    for (String p : List.of("format", "engine", "objectstore", "sync", "config", "metrics",
        "spark", "checkpoint", "hadoop", "demo", "testkit")) {
      assertTrue(Files.isRegularFile(packageDir(p).resolve("package-info.java")),
          "package-info.java missing in io.strata." + p);
    }
  }

  /**
   * Where a package's main sources live: strata-core's packages in src/core, the version-neutral
   * Spark-facing ones in src/spark-common (each line's adapters are checked by its compiler),
   * the demo in src/examples, the test kit in src/testkit.
   */
  static Path packageDir(String pkg) {
    Path main = switch (pkg) {
      case "spark", "checkpoint", "hadoop" ->
          RepoRoot.resolve("src", "spark-common", "main", "java");
      case "demo" -> RepoRoot.resolve("src", "examples", "src", "main", "java");
      case "testkit" -> RepoRoot.resolve("src", "testkit", "src", "main", "java");
      default -> RepoRoot.resolve("src", "core", "src", "main", "java");
    };
    return main.resolve(Path.of("io", "strata", pkg));
  }
}
