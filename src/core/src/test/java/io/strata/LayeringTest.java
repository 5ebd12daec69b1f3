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
 *
 * <p>The rules apply to every main source folder of the library and its tools ({@link
 * #mainRoots()}): strata-core (sub-packages such as format/sst included), strata-tools, every
 * shared Spark folder under src/spark-shared/ and each Spark line's own src/main/java. A package
 * found there without a rule fails the test, so a new one is never left unchecked.
 */
class LayeringTest {
  private static final String SPARK = "org.apache.spark";
  private static final String SCALA = "scala.";
  private static final String HADOOP = "org.apache.hadoop";
  private static final String ROCKSDB = "org.rocksdb";
  private static final String AWS = "software.amazon";

  private static final String CHECKPOINT = "io.strata.checkpoint";

  private static final Map<String, List<String>> FORBIDDEN = Map.ofEntries(
      Map.entry("format", List.of(SPARK, SCALA, HADOOP, ROCKSDB, AWS, "io.strata.spark",
          "io.strata.sync", "io.strata.engine", "io.strata.objectstore", "io.strata.config",
          "io.strata.metrics", CHECKPOINT)),
      Map.entry("engine", List.of(SPARK, SCALA, HADOOP, AWS, "io.strata.spark", "io.strata.sync",
          "io.strata.objectstore", CHECKPOINT)),
      Map.entry("objectstore", List.of(SPARK, SCALA, HADOOP, ROCKSDB, "io.strata.spark",
          "io.strata.sync", "io.strata.engine", "io.strata.format", CHECKPOINT)),
      Map.entry("sync",
          List.of(SPARK, SCALA, HADOOP, ROCKSDB, AWS, "io.strata.spark", CHECKPOINT)),
      Map.entry("config", List.of(SPARK, SCALA, HADOOP, ROCKSDB, AWS, "io.strata.spark",
          "io.strata.sync", "io.strata.engine", CHECKPOINT)),
      Map.entry("metrics", List.of(SPARK, SCALA, HADOOP, ROCKSDB, AWS, "io.strata.spark",
          "io.strata.sync", "io.strata.engine", CHECKPOINT)),
      Map.entry("spark", List.of(ROCKSDB, AWS, CHECKPOINT)),
      // Spark's checkpoint files through the object store: Spark and Hadoop, no SDK, no state.
      Map.entry("checkpoint", List.of(ROCKSDB, AWS, "io.strata.spark", "io.strata.sync",
          "io.strata.engine", "io.strata.format")),
      // What Strata reports to Spark, for spark and checkpoint alike: error conditions and the
      // metrics source. Spark and Strata's settings and counters; no SDK, no state, neither of
      // the two packages it serves.
      Map.entry("reporting", List.of(ROCKSDB, AWS, HADOOP, "io.strata.spark", CHECKPOINT,
          "io.strata.sync", "io.strata.engine", "io.strata.format", "io.strata.objectstore")),
      // Hadoop's configuration as S3A reads it, for spark and checkpoint alike.
      Map.entry("hadoop", List.of(SPARK, SCALA, ROCKSDB, AWS, "io.strata.spark",
          "io.strata.sync", "io.strata.engine", "io.strata.format", "io.strata.objectstore",
          CHECKPOINT)),
      // The SST files of deltas written and read in Java: part of the pure format.
      Map.entry("format/sst", List.of(SPARK, SCALA, HADOOP, ROCKSDB, AWS, "io.strata.spark",
          "io.strata.sync", "io.strata.engine", "io.strata.objectstore", "io.strata.config",
          "io.strata.metrics", CHECKPOINT)),
      // The command line over strata-core: no Spark, Hadoop or SDK. RocksDB only for verify,
      // which checks SST block checksums with RocksDB's own reader.
      Map.entry("tools", List.of(SPARK, SCALA, HADOOP, AWS, "io.strata.spark", CHECKPOINT,
          "io.strata.hadoop")));

  @Test
  void packagesImportOnlyWhatTheLayeringAllows() throws IOException {
    List<String> offending = new ArrayList<>();
    for (Path root : mainRoots()) {
      Path top = root.resolve(Path.of("io", "strata"));
      List<Path> sources;
      try (Stream<Path> files = Files.walk(top)) {
        sources = files.filter(p -> p.toString().endsWith(".java")).sorted().toList();
      }
      for (Path f : sources) {
        String pkg = top.relativize(f.getParent()).toString().replace('\\', '/');
        String where = RepoRoot.path().relativize(f).toString();
        List<String> forbidden = FORBIDDEN.get(pkg);
        if (forbidden == null) {
          offending.add(where + ": no layering rule for io/strata/" + pkg);
          continue;
        }
        for (String line : Files.readAllLines(f)) {
          String t = line.trim();
          if (!t.startsWith("import ")) {
            continue;
          }
          String imported = t.substring("import ".length()).replace("static ", "");
          for (String bad : forbidden) {
            if (imported.startsWith(bad)) {
              offending.add(where + ": " + t);
            }
          }
        }
      }
    }
    assertEquals(List.of(), offending);
  }

  @Test
  void everySparkFolderIsChecked() throws IOException {
    List<String> roots = mainRoots().stream()
        .map(r -> RepoRoot.path().relativize(r).toString().replace('\\', '/')).toList();
    for (String expected : List.of("src/core/src/main/java", "src/tools/src/main/java",
        "src/spark-shared/all-lines/src/main/java", "src/spark-shared/3.5-and-4.0/src/main/java",
        "src/spark-shared/4.0-and-later/src/main/java",
        "src/spark-shared/4.0-and-4.1/src/main/java",
        "src/spark-shared/4.1-and-later/src/main/java",
        "src/spark-shared/scala-2.12/src/main/java", "src/spark-shared/scala-2.13/src/main/java",
        "src/spark-3.5/src/main/java", "src/spark-4.0/src/main/java",
        "src/spark-4.1/src/main/java", "src/spark-4.2/src/main/java")) {
      assertTrue(roots.contains(expected), expected + " not among the checked folders " + roots);
    }
  }

  /**
   * The main source folders the layering rules apply to: strata-core's, strata-tools', every
   * shared Spark folder ({@code src/spark-shared/<lines>/src/main/java}) and each Spark line
   * module's ({@code src/spark-<line>/src/main/java}; the Scala 2.13 twin of 3.5 has none of
   * its own). Found by listing, so a new Spark line or shared folder is checked without a change
   * here.
   *
   * @return the folders, each holding {@code io/strata}, in name order
   * @throws IOException if src/ or src/spark-shared/ cannot be listed
   */
  static List<Path> mainRoots() throws IOException {
    Path src = RepoRoot.resolve("src");
    List<Path> roots = new ArrayList<>(List.of(src.resolve("core/src/main/java"),
        src.resolve("tools/src/main/java")));
    try (Stream<Path> shared = Files.list(src.resolve("spark-shared"));
        Stream<Path> lines = Files.list(src)) {
      Stream.concat(shared, lines.filter(d -> d.getFileName().toString().startsWith("spark-")))
          .map(d -> d.resolve("src/main/java"))
          .filter(d -> Files.isDirectory(d.resolve("io/strata")))
          .sorted()
          .forEach(roots::add);
    }
    return roots;
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
   * Where a package's {@code package-info.java} lives: strata-core's packages in src/core, the
   * Spark-facing ones in the version-neutral folder src/spark-shared/all-lines, the demo in
   * src/examples, the test kit in src/testkit.
   */
  static Path packageDir(String pkg) {
    Path main = switch (pkg) {
      case "spark", "checkpoint", "hadoop" ->
          RepoRoot.resolve("src", "spark-shared", "all-lines", "src", "main", "java");
      case "demo" -> RepoRoot.resolve("src", "examples", "src", "main", "java");
      case "testkit" -> RepoRoot.resolve("src", "testkit", "src", "main", "java");
      default -> RepoRoot.resolve("src", "core", "src", "main", "java");
    };
    return main.resolve(Path.of("io", "strata", pkg));
  }
}
