// SPDX-License-Identifier: Apache-2.0
package io.strata.tools;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.testkit.RepoRoot;
import io.strata.testkit.ShadedJarStrings;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.zip.ZipFile;
import org.junit.jupiter.api.Test;

/**
 * The tools jar's shading (issue 41): every class compared with the unshaded class it came from
 * (on this test's class path); a string constant rewritten to something that names nothing in
 * the jar fails unless {@code src/tools/tools-jar/rewritten-strings.txt} lists it with its
 * reason. And the credential provider names the tool reads from {@code fs.s3a.*} settings reach
 * the jar as written. Reads the jar only; a few seconds.
 */
class ToolsJarStringsIT {
  @Test
  void noStringConstantIsRewrittenBeyondTheJarsOwnNamesUnlessReviewed() throws IOException {
    assertEquals(List.of(), ShadedJarStrings.unreviewed(toolsJar(),
        RepoRoot.resolve("src", "tools", "tools-jar", "rewritten-strings.txt"),
        ShadedJarStrings.fromClassPath(ToolsJarStringsIT.class.getClassLoader()),
        toolsJar().getParent()));
  }

  @Test
  void theCredentialProviderNamesAreTheUnshadedResources() throws IOException {
    try (ZipFile jar = new ZipFile(toolsJar().toFile())) {
      for (String name : List.of("credential-provider-classes.txt",
          "hadoop-default-providers.txt")) {
        String entry = "io/strata/config/" + name;
        assertTrue(jar.getEntry(entry) != null, entry);
        try (InputStream in = jar.getInputStream(jar.getEntry(entry))) {
          assertEquals(Files.readString(RepoRoot.resolve("src", "core", "src", "main",
              "resources", "io", "strata", "config", name)), new String(in.readAllBytes(),
              java.nio.charset.StandardCharsets.UTF_8), name);
        }
      }
    }
  }

  private static Path toolsJar() {
    Path jar = Path.of(System.getProperty("strata.tools.jar", "missing"));
    assertTrue(Files.isRegularFile(jar), "the tools jar (mvn package): " + jar);
    return jar;
  }
}
