// SPDX-License-Identifier: Apache-2.0
package io.strata.tools;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code strata copy} on local checkpoints ({@link ToolFixtures#mergedCheckpoint}): a copy of a
 * savepoint, and of the newest batch, verify clean on their own once the source is deleted, and
 * hold only what their batch needs; a non-empty destination is refused.
 */
class CopyCommandTest {
  @TempDir Path tmp;

  private static long files(Path dir) throws Exception {
    try (Stream<Path> s = Files.walk(dir)) {
      return s.filter(Files::isRegularFile).count();
    }
  }

  @Test
  void aCopyIsSelfContainedAndHoldsOnlyWhatItsBatchNeeds() throws Exception {
    Path source = ToolFixtures.mergedCheckpoint(tmp);
    String src = source.toUri().toString();
    // Spark's state schema file, in partition 0's directory (new-user walk of issue 44: it was
    // left out of copies and savepoints).
    Path schema = source.resolve("state/0/0/_metadata/schema");
    Files.createDirectories(schema.getParent());
    Files.writeString(schema, "v2\n{\"fields\":[]}");
    assertEquals(StrataTool.EXIT_OK, ToolFixtures.tool("savepoint", "create", src, "--batch",
        "5", "--name", "five").code());
    Path fromSavepoint = tmp.resolve("copy-5");
    Path newest = tmp.resolve("copy-21");
    ToolFixtures.Run a = ToolFixtures.tool("copy", src, fromSavepoint.toUri().toString(),
        "--savepoint", "five");
    assertEquals(StrataTool.EXIT_OK, a.code(), a::toString);
    ToolFixtures.Run b = ToolFixtures.tool("copy", src, newest.toUri().toString());
    assertEquals(StrataTool.EXIT_OK, b.code(), b::toString);
    ToolFixtures.Run again = ToolFixtures.tool("copy", src, newest.toUri().toString());
    assertEquals(StrataTool.EXIT_REFUSED, again.code(), again::toString);
    assertTrue(again.err().contains("it is not empty"), again::toString);
    assertTrue(files(newest) < files(source), "only what batch 21 needs: " + files(newest)
        + " of " + files(source));

    for (Path copy : new Path[] {fromSavepoint, newest}) {
      assertEquals("v2\n{\"fields\":[]}", Files.readString(copy.resolve(
          "state/0/0/_metadata/schema")), "Spark's schema file in " + copy);
    }
    try (Stream<Path> s = Files.walk(source)) {
      s.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    }
    // A copy of batch N holds offsets/N-1 for Spark's restart check but only version N+1:
    // plain verify checks what a restart can load (from the oldest commit + 1), so it passes.
    String[][] checks = {{fromSavepoint.toUri().toString(), "6"},
        {newest.toUri().toString(), "22"}};
    for (String[] c : checks) {
      ToolFixtures.Run verify = ToolFixtures.tool("verify", c[0], "--version", c[1]);
      assertEquals(StrataTool.EXIT_OK, verify.code(), verify::toString);
      ToolFixtures.Run plain = ToolFixtures.tool("verify", c[0]);
      assertEquals(StrataTool.EXIT_OK, plain.code(), plain::toString);
    }
    ToolFixtures.Run describe = ToolFixtures.tool("describe", fromSavepoint.toUri().toString(),
        "--json");
    assertEquals(6, describe.json().get("stores").get(0).get("newestVersion").asLong(),
        describe::toString);
  }
  /**
   * A destination inside the source is refused before anything is written (deleting the source
   * would delete the copy, and the source's own tools would list it), while a sibling whose name
   * merely starts with the source's is not; a {@code --savepoint} that is not a savepoint name
   * ({@code ../x}, {@code a/b}, empty) is a usage error naming it, not an unexpected one.
   */
  @Test
  void aDestinationInsideTheSourceAndABadSavepointNameAreRefused() throws Exception {
    Path source = ToolFixtures.mergedCheckpoint(tmp);
    String src = source.toUri().toString();
    ToolFixtures.Run inside = ToolFixtures.tool("copy", src,
        source.resolve("fork").toUri().toString());
    assertEquals(StrataTool.EXIT_USAGE, inside.code(), inside::toString);
    assertTrue(inside.err().contains("inside"), inside::toString);
    assertFalse(Files.exists(source.resolve("fork")), inside::toString);
    ToolFixtures.Run sibling = ToolFixtures.tool("copy", src,
        tmp.resolve("merged2").toUri().toString());
    assertEquals(StrataTool.EXIT_OK, sibling.code(), sibling::toString);

    for (String bad : new String[] {"../merged", "a/b", ""}) {
      ToolFixtures.Run r = ToolFixtures.tool("copy", src, tmp.resolve("x").toUri().toString(),
          "--savepoint", bad);
      assertEquals(StrataTool.EXIT_USAGE, r.code(), r::toString);
      assertTrue(r.err().contains("Invalid --savepoint '" + bad + "'"), r::toString);
    }
    assertFalse(Files.exists(tmp.resolve("x")));
  }
  /**
   * A copy of a savepoint whose state lost an object (collected by a build that does not know
   * holds, or deleted by hand) is refused before anything is written, naming the savepoint, the
   * store and the missing object; likewise when the held version object itself is gone. A
   * copy cut short would leave a destination that is not empty, so not copyable again, and not
   * loadable.
   */
  @Test
  void aSavepointMissingAnObjectIsRefusedBeforeAnythingIsWritten() throws Exception {
    Path source = ToolFixtures.mergedCheckpoint(tmp);
    String src = source.toUri().toString();
    assertEquals(StrataTool.EXIT_OK, ToolFixtures.tool("savepoint", "create", src, "--batch",
        "5", "--name", "five").code());
    Path store = source.resolve("state/0/0");
    ToolFixtures.deleteVersion(store, 3); // its delta is in version 6's chain
    Path dest = tmp.resolve("copy-5");
    ToolFixtures.Run copy = ToolFixtures.tool("copy", src, dest.toUri().toString(),
        "--savepoint", "five");
    assertEquals(StrataTool.EXIT_REFUSED, copy.code(), copy::toString);
    assertTrue(copy.err().contains("five") && copy.err().contains("0/0/default")
        && copy.err().contains("state/0/0/v/00000000000000000003"), copy::toString);
    assertFalse(Files.exists(dest), copy::toString);

    ToolFixtures.deleteVersion(store, 6); // the held version object
    copy = ToolFixtures.tool("copy", src, dest.toUri().toString(), "--savepoint", "five");
    assertEquals(StrataTool.EXIT_REFUSED, copy.code(), copy::toString);
    assertTrue(copy.err().contains("state/0/0/v/00000000000000000006"), copy::toString);
    assertFalse(Files.exists(dest), copy::toString);
  }
  /**
   * A destination that cannot be written (here a path under a regular file) fails the copy with
   * exit 3 and a message naming the destination and saying what to do, not as an unexpected
   * error (exit 70).
   */
  @Test
  void aDestinationThatCannotBeWrittenIsAStorageErrorNotABug() throws Exception {
    Path source = ToolFixtures.mergedCheckpoint(tmp);
    Path blocker = Files.writeString(tmp.resolve("blocker"), "a file, not a directory");
    String dest = blocker.resolve("copy").toUri().toString();
    ToolFixtures.Run copy = ToolFixtures.tool("copy", source.toUri().toString(), dest);
    assertEquals(StrataTool.EXIT_UNREADABLE, copy.code(), copy::toString);
    assertTrue(copy.err().contains("Cannot copy") && copy.err().contains(dest)
        && !copy.err().contains("unexpected error"), copy::toString);
  }
  /**
   * A copy of a savepoint copies every store the savepoint holds: when one of them is no longer
   * in the source (its state deleted), the copy is refused, naming it, rather than made without
   * that store's state (a query started there would not resume as the source would).
   */
  @Test
  void aSavepointWhoseStoreIsGoneIsNotCopiedWithoutIt() throws Exception {
    Path source = ToolFixtures.mergedCheckpoint(tmp);
    String src = source.toUri().toString();
    assertEquals(StrataTool.EXIT_OK, ToolFixtures.tool("savepoint", "create", src, "--batch",
        "5", "--name", "five").code());
    try (Stream<Path> s = Files.walk(source.resolve("state"))) {
      s.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    }
    Path dest = tmp.resolve("copy-5");
    ToolFixtures.Run copy = ToolFixtures.tool("copy", src, dest.toUri().toString(),
        "--savepoint", "five");
    assertEquals(StrataTool.EXIT_REFUSED, copy.code(), copy::toString);
    assertTrue(copy.err().contains("state/0/0"), copy::toString);
    assertFalse(Files.exists(dest), copy::toString);
  }
  /**
   * {@code --new-query-id}: the copy's Spark metadata file names a new query id (so a fork can
   * run beside its source, even in one Spark session), every other field kept; the source's is
   * unchanged, and a copy without the option keeps the source's id (a move).
   */
  @Test
  void aForkGetsANewQueryIdAndAMoveKeepsIt() throws Exception {
    Path source = ToolFixtures.mergedCheckpoint(tmp);
    String id = "2f1c7e4e-9d4b-4a52-b1c5-4b1d8f0d6a11";
    Files.writeString(source.resolve("metadata"), "{\"id\":\"" + id + "\",\"extra\":1}");
    String src = source.toUri().toString();
    Path fork = tmp.resolve("fork");
    Path move = tmp.resolve("move");
    ToolFixtures.Run a = ToolFixtures.tool("copy", src, fork.toUri().toString(),
        "--new-query-id");
    assertEquals(StrataTool.EXIT_OK, a.code(), a::toString);
    ToolFixtures.Run b = ToolFixtures.tool("copy", src, move.toUri().toString());
    assertEquals(StrataTool.EXIT_OK, b.code(), b::toString);

    com.fasterxml.jackson.databind.JsonNode forked = ToolContext.JSON.readTree(
        Files.readString(fork.resolve("metadata")));
    assertFalse(forked.get("id").asText().equals(id), forked::toString);
    java.util.UUID.fromString(forked.get("id").asText());
    assertEquals(1, forked.get("extra").asInt(), forked::toString);
    assertTrue(a.out().contains(forked.get("id").asText()), a::toString);
    assertTrue(Files.readString(move.resolve("metadata")).contains(id));
    assertTrue(Files.readString(source.resolve("metadata")).contains(id));
  }

  /**
   * Operator metadata of version 2 (Spark 4.x, {@code transformWithState}) names its schema
   * files by absolute path: in a copy each path under the source names the same file under the
   * destination (4.1's {@code stateSchemaFilePaths} list and 4.0's {@code stateSchemaFilePath}),
   * a path elsewhere is kept, and the source's file is unchanged.
   */
  @Test
  void operatorMetadataV2NamesTheCopysSchemaFiles() throws Exception {
    Path source = ToolFixtures.mergedCheckpoint(tmp);
    Path meta = source.resolve("state/0/_metadata/v2/3");
    Files.createDirectories(meta.getParent());
    String under = "file:" + source.toAbsolutePath() + "/state/0/_stateSchema/default/0_a";
    String file = "v2\n{\"operatorInfo\":{\"operatorId\":0,\"operatorName\":\"tws\"},"
        + "\"stateStoreInfo\":[{\"storeName\":\"default\",\"numColsPrefixKey\":0,"
        + "\"numPartitions\":2,\"stateSchemaFilePaths\":[\"" + under + "\","
        + "\"s3a://elsewhere/x/0_b\"]},{\"storeName\":\"other\",\"numColsPrefixKey\":0,"
        + "\"numPartitions\":2,\"stateSchemaFilePath\":\"" + under + "\"}],"
        + "\"operatorPropertiesJson\":\"{}\"}";
    Files.writeString(meta, file);
    Path copy = tmp.resolve("copy");
    ToolFixtures.Run run = ToolFixtures.tool("copy", source.toUri().toString(),
        copy.toUri().toString());
    assertEquals(StrataTool.EXIT_OK, run.code(), run::toString);

    String copied = Files.readString(copy.resolve("state/0/_metadata/v2/3"));
    assertTrue(copied.startsWith("v2\n"), copied);
    com.fasterxml.jackson.databind.JsonNode json = ToolContext.JSON.readTree(
        copied.substring(3));
    String moved = "file:" + copy.toAbsolutePath() + "/state/0/_stateSchema/default/0_a";
    com.fasterxml.jackson.databind.JsonNode stores = json.get("stateStoreInfo");
    assertEquals(moved, stores.get(0).get("stateSchemaFilePaths").get(0).asText(), copied);
    assertEquals("s3a://elsewhere/x/0_b", stores.get(0).get("stateSchemaFilePaths").get(1)
        .asText(), copied);
    assertEquals(moved, stores.get(1).get("stateSchemaFilePath").asText(), copied);
    assertEquals("{}", json.get("operatorPropertiesJson").asText(), copied);
    assertEquals(file, Files.readString(meta), "the source's file is unchanged");
  }

  /** S3 schemes are one family: the path keeps the scheme Spark wrote, the copy's bucket. */
  @Test
  void aSchemaPathMovesWithinTheS3FamilyAndOnlyFromUnderTheSource() {
    assertEquals(java.util.Optional.of("s3a://dst/new/ckpt/state/0/_stateSchema/d/0_a"),
        OperatorMetadataPaths.moved("s3a://src/ckpt/state/0/_stateSchema/d/0_a",
            "s3://src/ckpt/", "s3://dst/new/ckpt"));
    assertEquals(java.util.Optional.empty(), OperatorMetadataPaths.moved(
        "s3a://src/ckpt-2/state/0/x", "s3://src/ckpt", "s3://dst/c"), "a sibling prefix");
    assertEquals(java.util.Optional.empty(), OperatorMetadataPaths.moved(
        "s3a://other/ckpt/state/0/x", "s3://src/ckpt", "s3://dst/c"), "another bucket");
  }
}
