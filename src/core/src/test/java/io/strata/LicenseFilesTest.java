// SPDX-License-Identifier: Apache-2.0
package io.strata;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.testkit.RepoRoot;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Strata is Apache License 2.0: the repository's LICENSE holds the license's text, NOTICE names
 * the copyright holder, and every source file and script under version control states the
 * license in one convention (an SPDX identifier in its first lines: {@code //} for Java and
 * Scala, {@code #} after the shebang for scripts). The jars' copies are checked where the jars
 * are built (strata-core's own in {@link #thisModulesJarResourcesCarryLicenseAndNotice}, the
 * runtime jars' in RuntimeJarContentsIT).
 */
class LicenseFilesTest {
  static final String SPDX = "SPDX-License-Identifier: Apache-2.0";

  @Test
  void licenseIsTheApacheLicense20AndNoticeNamesTheHolder() throws IOException {
    String license = Files.readString(RepoRoot.resolve("LICENSE"));
    assertTrue(license.startsWith("                                 Apache License\n"
        + "                           Version 2.0, January 2004\n"), "LICENSE's first lines");
    assertTrue(license.contains("END OF TERMS AND CONDITIONS"), "LICENSE holds the whole text");
    assertTrue(!license.contains("\r"), "LICENSE has Unix line ends");
    String notice = Files.readString(RepoRoot.resolve("NOTICE"));
    assertTrue(notice.startsWith("Strata\nCopyright 2026 The Strata Authors\n"), notice);
  }

  @Test
  void everySourceFileAndScriptStatesTheLicense() throws IOException {
    Path root = RepoRoot.path();
    List<String> missing = new ArrayList<>();
    List<Path> sources;
    try (Stream<Path> s = Files.walk(root)) {
      sources = s.filter(Files::isRegularFile)
          .filter(p -> !isBuildOutput(root.relativize(p)))
          .filter(LicenseFilesTest::isSourceOrScript)
          .toList();
    }
    for (Path p : sources) {
      List<String> head = firstLines(p, 2);
      String comment = p.toString().endsWith(".java") || p.toString().endsWith(".scala")
          ? "// " : "# ";
      boolean ok = p.toString().endsWith(".java") || p.toString().endsWith(".scala")
          ? !head.isEmpty() && head.get(0).equals(comment + SPDX)
          : head.contains(comment + SPDX) && (head.get(0).startsWith("#!")
              || head.get(0).equals(comment + SPDX));
      if (!ok) {
        missing.add(root.relativize(p).toString());
      }
    }
    assertTrue(sources.size() > 200, "found the sources (" + sources.size() + ")");
    assertEquals(List.of(), missing, "files without the header '" + SPDX + "' in their first "
        + "lines (Java and Scala: line 1; scripts: line 1 or after the shebang)");
  }

  @Test
  void thisModulesJarResourcesCarryLicenseAndNotice() throws IOException {
    // The parent pom copies both into every module's META-INF (main and test resources); the
    // test class path holds this module's target/classes and target/test-classes.
    for (String name : List.of("META-INF/LICENSE", "META-INF/NOTICE")) {
      String source = Files.readString(RepoRoot.resolve(name.substring("META-INF/".length())));
      List<String> dirs = new ArrayList<>();
      var urls = LicenseFilesTest.class.getClassLoader().getResources(name);
      while (urls.hasMoreElements()) {
        var url = urls.nextElement();
        if (!url.getProtocol().equals("file")) {
          continue; // another jar's own file
        }
        String copy = new String(url.openStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(source, copy, name + " at " + url + " is the repository's file");
        dirs.add(Path.of(url.getPath()).getParent().getParent().getFileName().toString());
      }
      assertEquals(List.of("classes", "test-classes"), dirs.stream().sorted().toList(),
          name + " in this module's classes and test classes");
    }
  }

  private static boolean isBuildOutput(Path rel) {
    for (Path part : rel) {
      String s = part.toString();
      if (s.equals("target") || s.equals(".git") || s.equals("node_modules")) {
        return true;
      }
    }
    return false;
  }

  private static boolean isSourceOrScript(Path p) {
    String n = p.getFileName().toString();
    return n.endsWith(".java") || n.endsWith(".scala") || n.endsWith(".sh")
        || p.endsWith(Path.of(".ci", "run"));
  }

  private static List<String> firstLines(Path p, int n) throws IOException {
    try (Stream<String> lines = Files.lines(p)) {
      return lines.limit(n).toList();
    }
  }
}
