// SPDX-License-Identifier: Apache-2.0
package io.strata.tools;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Adversarial review of issue 44: schema paths of operator metadata v2 that {@code strata copy}
 * must move but keeps, silently (the copy then reads its schemas from the source, and fails
 * once a move deletes the source). Spark writes the path as Hadoop's {@code Path.toString()}:
 * qualified, characters not escaped ({@code ResolveWriteToStream}: {@code
 * checkpointDir.toString}; {@code statefulOperators.stateSchemaDirPath}).
 */
class OperatorMetadataPathsAdversarialTest {
  @TempDir Path tmp;

  /** A checkpoint whose prefix has a space: Spark writes the space unescaped. */
  @Test
  void aSourceWithASpaceIsMoved() {
    assertEquals(Optional.of("s3a://b/copy/state/0/_stateSchema/default/0_a"),
        OperatorMetadataPaths.moved("s3a://b/my ckpt/state/0/_stateSchema/default/0_a",
            "s3a://b/my ckpt", "s3a://b/copy"));
  }

  /** A destination with a space (the tool writes there; the path must name it). */
  @Test
  void aDestinationWithASpaceIsNamed() {
    assertEquals(Optional.of("s3a://b/my copy/state/0/_stateSchema/default/0_a"),
        OperatorMetadataPaths.moved("s3a://b/ckpt/state/0/_stateSchema/default/0_a",
            "s3a://b/ckpt", "s3a://b/my copy"));
  }

  /**
   * The tool takes a plain local path (ObjectStores.isLocal); Spark qualifies a local
   * checkpoint as {@code file:/...}.
   */
  @Test
  void aPlainLocalSourceIsTheFileSchemesLocation() {
    assertEquals(Optional.of("file:/tmp/dst/state/0/_stateSchema/default/0_a"),
        OperatorMetadataPaths.moved("file:/tmp/src/state/0/_stateSchema/default/0_a",
            "/tmp/src", "/tmp/dst"));
  }

  /**
   * A literal '%' sequence in the destination's prefix: the tool writes under the literal
   * prefix ({@code parseS3} does not decode), the moved path names the decoded one.
   */
  @Test
  void aDestinationWithAPercentSequenceIsNamedLiterally() {
    assertEquals(Optional.of("s3a://b/copy%41/state/0/_stateSchema/default/0_a"),
        OperatorMetadataPaths.moved("s3a://b/ckpt/state/0/_stateSchema/default/0_a",
            "s3a://b/ckpt", "s3a://b/copy%41"));
  }

  /** End to end: a local copy given as plain paths, as the README's examples allow. */
  @Test
  void aCopyBetweenPlainLocalPathsMovesTheSchemaPaths() throws Exception {
    Path source = ToolFixtures.mergedCheckpoint(tmp);
    Path meta = source.resolve("state/0/_metadata/v2/3");
    Files.createDirectories(meta.getParent());
    String under = "file:" + source.toAbsolutePath() + "/state/0/_stateSchema/default/0_a";
    Files.writeString(meta, "v2\n{\"operatorInfo\":{\"operatorId\":0,\"operatorName\":\"tws\"},"
        + "\"stateStoreInfo\":[{\"storeName\":\"default\",\"numColsPrefixKey\":0,"
        + "\"numPartitions\":2,\"stateSchemaFilePaths\":[\"" + under + "\"]}],"
        + "\"operatorPropertiesJson\":\"{}\"}");
    Path copy = tmp.resolve("copy");
    ToolFixtures.Run run = ToolFixtures.tool("copy", source.toAbsolutePath().toString(),
        copy.toAbsolutePath().toString());
    assertEquals(StrataTool.EXIT_OK, run.code(), run::toString);
    String copied = Files.readString(copy.resolve("state/0/_metadata/v2/3"));
    assertEquals("file:" + copy.toAbsolutePath() + "/state/0/_stateSchema/default/0_a",
        ToolContext.JSON.readTree(copied.substring(3)).get("stateStoreInfo").get(0)
            .get("stateSchemaFilePaths").get(0).asText(), copied);
  }
}
