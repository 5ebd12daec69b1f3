// SPDX-License-Identifier: Apache-2.0
package io.strata.demo;

import java.io.IOException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.List;
import java.util.stream.Stream;

/** Small file helpers for the demo. */
final class DemoFiles {
  private DemoFiles() {}

  /** How many regular files and bytes lie under a directory. */
  record Usage(long files, long bytes) {}

  /** Deletes a file or directory tree; a missing path is fine. */
  static void deleteRecursively(Path root) throws IOException {
    io.strata.engine.LocalFiles.deleteRecursively(root);
  }

  /** The entries of a directory, sorted by name. */
  static List<Path> list(Path dir) throws IOException {
    try (Stream<Path> s = Files.list(dir)) {
      return s.sorted().toList();
    }
  }

  /** Counts the regular files and their bytes under {@code root} (0, 0 if it does not exist). */
  static Usage usage(Path root) throws IOException {
    if (!Files.exists(root)) {
      return new Usage(0, 0);
    }
    long[] acc = new long[2];
    Files.walkFileTree(
        root,
        new SimpleFileVisitor<>() {
          @Override
          public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) {
            if (attrs.isRegularFile()) {
              acc[0]++;
              acc[1] += attrs.size();
            }
            return FileVisitResult.CONTINUE;
          }

          @Override
          public FileVisitResult visitFileFailed(Path file, IOException e) {
            return FileVisitResult.CONTINUE;
          }
        });
    return new Usage(acc[0], acc[1]);
  }
}
