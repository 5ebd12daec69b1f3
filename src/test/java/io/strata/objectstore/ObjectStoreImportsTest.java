package io.strata.objectstore;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/** The objectstore package imports the AWS SDK and nothing heavy besides (STYLE.md layout). */
class ObjectStoreImportsTest {
  private static final List<String> FORBIDDEN = List.of(
      "import org.apache.spark", "import scala.", "import org.apache.hadoop", "import org.rocksdb",
      "import io.strata.spark", "import io.strata.sync", "import io.strata.engine");

  @Test
  void noSparkHadoopRocksDbOrUpperLayers() throws IOException {
    Path dir = Path.of("src", "main", "java", "io", "strata", "objectstore");
    assertTrue(Files.isDirectory(dir), "run from the project root: " + dir.toAbsolutePath());
    List<String> offending = new ArrayList<>();
    try (Stream<Path> files = Files.list(dir)) {
      for (Path f : files.filter(p -> p.toString().endsWith(".java")).toList()) {
        for (String line : Files.readAllLines(f)) {
          if (FORBIDDEN.stream().anyMatch(line.trim()::startsWith)) {
            offending.add(f.getFileName() + ": " + line.trim());
          }
        }
      }
    }
    assertEquals(List.of(), offending);
  }
}
