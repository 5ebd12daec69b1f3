// SPDX-License-Identifier: Apache-2.0
package io.strata.testkit;

import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The top directory of Strata's repository (the one holding the root {@code pom.xml},
 * {@code README.md}, {@code docs/} and {@code docker/}), for tests that read or check files of
 * the tree while Maven runs them from their module's directory.
 */
public final class RepoRoot {
  /** The system property the build sets to the repository's top directory. */
  public static final String PROPERTY = "strata.root.dir";

  private RepoRoot() {
  }

  /**
   * The repository's top directory: the system property {@value #PROPERTY} when set, else the
   * first directory at or above the working directory that holds {@code README.md},
   * {@code pom.xml} and {@code .ci/}.
   *
   * @return the directory, absolute and normalized
   * @throws IllegalStateException if neither gives such a directory
   */
  public static Path path() {
    String prop = System.getProperty(PROPERTY, "").trim();
    if (!prop.isEmpty() && isRoot(Path.of(prop))) {
      return Path.of(prop).toAbsolutePath().normalize();
    }
    return from(Path.of(""));
  }

  /**
   * The first of {@code start} and its parents that holds {@code README.md}, {@code pom.xml} and
   * {@code .ci/}. Walking up finds the top from a module directory such as {@code src/core},
   * whose own {@code pom.xml} (and perhaps README) does not qualify without {@code .ci/}.
   *
   * @param start a directory, relative to the working directory or absolute
   * @return that directory, absolute and normalized
   * @throws IllegalStateException if neither {@code start} nor any parent qualifies (the message
   *     names {@code start})
   */
  public static Path from(Path start) {
    for (Path d = start.toAbsolutePath().normalize(); d != null; d = d.getParent()) {
      if (isRoot(d)) {
        return d;
      }
    }
    throw new IllegalStateException("Cannot find Strata's repository root: no directory at or "
        + "above " + start.toAbsolutePath() + " holds README.md, pom.xml and .ci/");
  }

  /**
   * A path inside the repository.
   *
   * @param first the first name below the top directory, e.g. {@code "docs"}
   * @param more further names
   * @return the path below {@link #path()}
   */
  public static Path resolve(String first, String... more) {
    return path().resolve(Path.of(first, more));
  }

  private static boolean isRoot(Path d) {
    return Files.isRegularFile(d.resolve("README.md")) && Files.isRegularFile(d.resolve("pom.xml"))
        && Files.isDirectory(d.resolve(".ci"));
  }
}
