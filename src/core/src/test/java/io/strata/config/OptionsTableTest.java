// SPDX-License-Identifier: Apache-2.0
package io.strata.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.testkit.RepoRoot;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * README.md's configuration table is the one {@link OptionsTable} generates from {@link
 * StrataConf#OPTIONS}. With {@code -Dstrata.regenerate=true} the check rewrites the table
 * instead ({@link OptionsTable#COMMAND}).
 */
class OptionsTableTest {
  @Test
  void readmeTableIsCurrent() throws Exception {
    Path readme = OptionsTable.readme();
    if (Boolean.getBoolean(OptionsTable.REGENERATE_PROPERTY)) {
      OptionsTable.write(readme);
    }
    assertEquals(OptionsTable.block(StrataConf.OPTIONS),
        OptionsTable.committedBlock(OptionsTable.read(readme)),
        "The configuration table in " + readme + " is stale: it differs from "
            + "StrataConf.OPTIONS (keys, defaults, allowed values or descriptions). Do not edit "
            + "it by hand; regenerate it from the project root with: " + OptionsTable.COMMAND);
  }

  @Test
  void tableShowsEveryKeyWithItsTypedDefaultAndFallback() {
    String block = OptionsTable.block(StrataConf.OPTIONS);
    assertTrue(block.contains("| `" + StrataConf.PREFIX + "gc.gracePeriod` | `1h` | "
        + "duration of at least `1m` ("), block);
    assertTrue(block.contains("| `" + StrataConf.PREFIX + "s3.region` | the endpoint's region, "
        + "else the SDK's region chain, else `us-east-1` (or `fs.s3a.endpoint.region`) | "),
        block);
    assertTrue(block.contains("| `" + StrataConf.PREFIX + "spillThreshold` | `64m` | "), block);
    assertTrue(block.contains("| `" + StrataConf.PREFIX + "memory.max` | `auto` | "), block);
    assertTrue(block.contains("| `" + StrataConf.PREFIX + "localDir` | a directory inside "
        + "Spark's local dirs | "), block);
    assertEquals(StrataConf.OPTIONS.size() + 2, block.lines().filter(l -> l.startsWith("|"))
        .count(), "a header, a rule and one row per option");
  }

  @Test
  void projectRootIsFoundFromAModuleDirectoryBelowIt(@TempDir Path dir) throws Exception {
    Path root = dir.resolve("strata");
    Path module = root.resolve("src/core");
    Files.createDirectories(root.resolve(".ci"));
    Files.createDirectories(module);
    Files.writeString(root.resolve("README.md"), "");
    Files.writeString(root.resolve("pom.xml"), "");
    Files.writeString(module.resolve("pom.xml"), "");
    Files.writeString(module.resolve("README.md"), "a module's own README");
    assertEquals(root, RepoRoot.from(module));
    assertEquals(root, RepoRoot.from(root));
    IllegalStateException e = assertThrows(IllegalStateException.class,
        () -> RepoRoot.from(dir));
    assertTrue(e.getMessage().contains(dir.toString()), e.getMessage());
  }

  @Test
  void spliceReplacesOnlyWhatLiesBetweenTheMarkers() {
    String readme = "intro\n" + OptionsTable.BEGIN + "\nold\n" + OptionsTable.END + "\nrest\n";
    assertEquals("intro\n" + OptionsTable.BEGIN + "\nnew\n" + OptionsTable.END + "\nrest\n",
        OptionsTable.splice(readme, "new\n"));
    assertEquals("old\n", OptionsTable.committedBlock(readme));
    assertThrows(IllegalStateException.class, () -> OptionsTable.splice("no markers", "x"));
    assertThrows(IllegalStateException.class, () -> OptionsTable.splice(
        OptionsTable.END + "\n" + OptionsTable.BEGIN + "\n", "x"));
  }

  @Test
  void aDefaultThatDoesNotReadBackFromItsTextIsRefused() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> ConfigOption.key("x").type(OptionType.positiveDuration())
            .defaultValue(Duration.ofNanos(1)).description("d"));
    assertTrue(e.getMessage().contains("does not read back"), e.getMessage());
    assertThrows(IllegalArgumentException.class,
        () -> ConfigOption.key("x").type(OptionType.bool()).description("no default"));
    assertThrows(IllegalArgumentException.class,
        () -> ConfigOption.key("x").type(OptionType.bool()).defaultValue(true)
            .description("a | breaks the table"));
  }

  @Test
  void s3aFallbacksReadEveryOptionsFallbackKey() {
    assertEquals(List.of("fs.s3a.endpoint", "fs.s3a.endpoint.region", "fs.s3a.path.style.access",
        "fs.s3a.access.key", "fs.s3a.secret.key", "fs.s3a.session.token",
        "fs.s3a.aws.credentials.provider", "fs.s3a.auth.profile.name", "fs.s3a.auth.profile.file",
        "fs.s3a.assumed.role.arn",
        "fs.s3a.assumed.role.session.name", "fs.s3a.assumed.role.session.duration",
        "fs.s3a.assumed.role.sts.endpoint", "fs.s3a.encryption.algorithm", "fs.s3a.encryption.key"), S3aFallbacks.KEYS);
  }
}
