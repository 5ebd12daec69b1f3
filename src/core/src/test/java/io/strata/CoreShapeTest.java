// SPDX-License-Identifier: Apache-2.0
package io.strata;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.testkit.RepoRoot;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The shape of strata-core's main code that the build enforces (docs: STYLE.md, "One decision,
 * one owner" and "Explicit thread-pool ownership"): no source file over {@value #MAX_LINES}
 * lines (a class that grows past it decides too much: its deciding moves out to an owner of its
 * own, see io.strata.sync's package-info), and no static executor (pools are owned by an object
 * that closes them, or leased from one: io.strata.sync.SharedPools). Each failure names the
 * offenders. There is no per-class exception.
 */
class CoreShapeTest {
  /** The most lines a main source file of strata-core may have. */
  static final int MAX_LINES = 700;

  /** A static field whose type is an executor (a pool nobody closes). */
  private static final Pattern STATIC_EXECUTOR = Pattern.compile("static\\s+(final\\s+)?"
      + "[\\w.<>?, ]*(Executor|ExecutorService|ThreadPoolExecutor|ScheduledExecutorService"
      + "|ScheduledThreadPoolExecutor|ForkJoinPool)\\s+\\w+\\s*[;=]");

  @Test
  void noMainSourceFileIsLongerThanTheLimit() throws IOException {
    List<String> offenders = mainSources().stream()
        .filter(f -> lines(f) > MAX_LINES)
        .map(f -> root().relativize(f) + " (" + lines(f) + " lines)")
        .sorted()
        .toList();
    assertTrue(offenders.isEmpty(), "strata-core main sources over " + MAX_LINES
        + " lines (move a decision out to an owner of its own): " + offenders);
  }

  @Test
  void noMainSourceHoldsAStaticExecutor() throws IOException {
    List<String> offenders = mainSources().stream()
        .filter(f -> STATIC_EXECUTOR.matcher(read(f)).find())
        .map(f -> root().relativize(f).toString())
        .sorted()
        .toList();
    assertTrue(offenders.isEmpty(), "strata-core main sources with a static executor (lease "
        + "shared pools from an owner that closes them, such as SharedPools): " + offenders);
  }

  @Test
  void theChecksSeeTheSources() throws IOException {
    List<Path> sources = mainSources();
    assertTrue(sources.size() > 50, "too few main sources found under " + root() + ": "
        + sources.size());
    assertTrue(sources.stream().anyMatch(f -> f.endsWith(Path.of("sync", "SyncedStore.java"))),
        "SyncedStore.java not found under " + root());
  }

  private static Path root() {
    return RepoRoot.resolve("src", "core", "src", "main", "java");
  }

  private static List<Path> mainSources() throws IOException {
    try (Stream<Path> files = Files.walk(root())) {
      return files.filter(f -> f.toString().endsWith(".java")).toList();
    }
  }

  private static long lines(Path f) {
    try (Stream<String> l = Files.lines(f)) {
      return l.count();
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  private static String read(Path f) {
    try {
      return Files.readString(f);
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }
}
