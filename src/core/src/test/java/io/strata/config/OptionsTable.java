// SPDX-License-Identifier: Apache-2.0
package io.strata.config;

import io.strata.testkit.RepoRoot;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * Generates README.md's configuration table from {@link StrataConf#OPTIONS}, the one source of
 * truth for keys, types, bounds, defaults and descriptions, and writes it between the markers
 * {@value #BEGIN} and {@value #END}. Run it with {@value #COMMAND} ({@link OptionsTableTest}
 * checks the committed table otherwise), or as a plain main on the test classpath.
 */
public final class OptionsTable {
  /** Line that opens the generated part of README.md. */
  public static final String BEGIN = "<!-- strata-options:begin -->";
  /** Line that closes the generated part of README.md. */
  public static final String END = "<!-- strata-options:end -->";
  /** System property that makes {@link OptionsTableTest} rewrite README.md instead of failing. */
  public static final String REGENERATE_PROPERTY = "strata.regenerate";
  /** The documented command that regenerates the table, run from the project root. */
  public static final String COMMAND = "mvn -B -ntp -pl src/core -am -Dtest=OptionsTableTest -D"
      + REGENERATE_PROPERTY + "=true -Dsurefire.failIfNoSpecifiedTests=false test";

  private OptionsTable() { }

  /**
   * Rewrites the table in the project's README.md (found by {@link RepoRoot#path()}).
   *
   * @param args ignored
   * @throws IOException if README.md cannot be read or written
   * @throws IllegalStateException if the project root or the markers cannot be found
   */
  public static void main(String[] args) throws IOException {
    Path readme = readme();
    boolean changed = write(readme);
    System.out.println((changed ? "Rewrote the configuration table in " : "Up to date: ")
        + readme);
  }

  /**
   * Rewrites the table in {@code readme} if it differs from the generated one.
   *
   * @param readme path of README.md
   * @return true if the file changed
   * @throws IOException if the file cannot be read or written
   * @throws IllegalStateException if the markers are missing or out of order
   */
  public static boolean write(Path readme) throws IOException {
    String before = Files.readString(readme, StandardCharsets.UTF_8);
    String after = splice(before, block(StrataConf.OPTIONS));
    if (after.equals(before)) {
      return false;
    }
    Files.writeString(readme, after, StandardCharsets.UTF_8);
    return true;
  }

  /**
   * The project's README.md.
   *
   * @return its path, in {@link RepoRoot#path()}
   * @throws IllegalStateException if no project root is found
   */
  public static Path readme() {
    return RepoRoot.resolve("README.md");
  }

  /**
   * The generated block between the markers: a comment saying how to regenerate it, then the
   * Markdown table with one row per option (key, default, allowed values, meaning).
   *
   * @param options the options in table order
   * @return lines, each ending in {@code \n}, without the marker lines
   */
  public static String block(List<ConfigOption<?>> options) {
    StringBuilder b = new StringBuilder();
    b.append("<!-- Generated from io.strata.config.StrataConf.OPTIONS; do not edit by hand. "
        + "Regenerate from the project root with: ").append(COMMAND).append(" -->\n\n");
    b.append("| key | default | allowed | meaning |\n");
    b.append("|---|---|---|---|\n");
    for (ConfigOption<?> o : options) {
      b.append("| `").append(o.fullKey()).append("` | ").append(o.defaultText()).append(" | ")
          .append(o.type().allowed()).append(" | ").append(o.description()).append(" |\n");
    }
    return b.append('\n').toString();
  }

  /**
   * Replaces what lies between the marker lines of {@code readme} with {@code block}.
   *
   * @param readme the whole README text
   * @param block the new content, as {@link #block} returns it
   * @return the README text with the new block; everything outside the markers unchanged
   * @throws IllegalStateException if a marker line is missing, repeated or out of order
   */
  public static String splice(String readme, String block) {
    int begin = readme.indexOf(BEGIN + "\n");
    int end = readme.indexOf(END);
    if (begin < 0 || end < begin || readme.indexOf(BEGIN, begin + 1) >= 0
        || readme.indexOf(END, end + 1) >= 0) {
      throw new IllegalStateException("README.md must hold the line " + BEGIN
          + " once, followed later by the line " + END + " once");
    }
    int from = begin + BEGIN.length() + 1;
    return readme.substring(0, from) + block + readme.substring(end);
  }

  /**
   * The block currently between the markers of {@code readme}.
   *
   * @param readme the whole README text
   * @return the text between the marker lines
   * @throws IllegalStateException as {@link #splice}
   */
  public static String committedBlock(String readme) {
    splice(readme, "");
    return readme.substring(readme.indexOf(BEGIN) + BEGIN.length() + 1, readme.indexOf(END));
  }

  /**
   * Reads a file as UTF-8.
   *
   * @throws UncheckedIOException if it cannot be read
   */
  static String read(Path file) {
    try {
      return Files.readString(file, StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException("Cannot read " + file, e);
    }
  }
}
