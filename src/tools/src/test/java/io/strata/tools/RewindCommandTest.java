// SPDX-License-Identifier: Apache-2.0
package io.strata.tools;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;


import io.strata.engine.SharedMemory;
import io.strata.objectstore.ObjectStores;
import io.strata.objectstore.RequestListener;
import io.strata.sync.GcSettings;
import io.strata.sync.StoreIdentity;
import io.strata.sync.StoreSettings;
import io.strata.sync.SyncedStore;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code strata rewind} on a checkpoint on the local file system ({@link
 * ToolFixtures#checkpoint}: a store with versions 1 to 6, Spark's logs of batches 0 to 5 with
 * batch 6 planned). What it deletes and in which order, that it keeps every state object, and each
 * refusal with its exit code and message. Real queries rewound by the tool are compared with the
 * HDFS provider's hand-deleted rewinds in {@code RerunAfterRewindIT}.
 */
class RewindCommandTest {
  @TempDir Path tmp;

  private static ToolFixtures.Run tool(String... args) {
    return ToolFixtures.tool(args);
  }

  private Path checkpoint() throws IOException {
    return ToolFixtures.checkpoint(tmp);
  }

  private static void age(Path checkpoint) throws IOException {
    ToolFixtures.age(checkpoint);
  }

  /** Both of Spark's logs hold batches 0 to 2 only. */
  private static void assertLogsEndAtBatch2(Path checkpoint, ToolFixtures.Run r) throws IOException {
    assertEquals(List.of("0", "1", "2"), files(checkpoint.resolve("offsets")), r::toString);
    assertEquals(List.of("0", "1", "2"), files(checkpoint.resolve("commits")), r::toString);
  }

  private static List<String> files(Path dir) throws IOException {
    try (Stream<Path> s = Files.walk(dir)) {
      return s.filter(Files::isRegularFile).map(p -> dir.relativize(p).toString()).sorted()
          .toList();
    }
  }

  @Test
  void deletesTheLaterBatchesNewestFirstCommitBeforeOffsetsAndKeepsEveryStateObject()
      throws Exception {
    Path checkpoint = checkpoint();
    age(checkpoint);
    String uri = checkpoint.toUri().toString();
    List<String> state = files(checkpoint.resolve("state"));

    ToolFixtures.Run dry = tool("rewind", uri, "--to-batch", "3", "--dry-run", "--json");
    assertEquals(StrataTool.EXIT_OK, dry.code(), dry::toString);
    List<String> planned = new ArrayList<>();
    dry.json().get("objects").forEach(k -> planned.add(k.asText()));
    assertEquals(List.of("offsets/6", "commits/5", "offsets/5", "commits/4", "offsets/4",
        "commits/3", "offsets/3"), planned, dry::toString);
    assertTrue(Files.exists(checkpoint.resolve("offsets/6")), "a dry run deletes nothing");

    ToolFixtures.Run apply = tool("rewind", uri, "--to-batch", "3");
    assertEquals(StrataTool.EXIT_OK, apply.code(), apply::toString);
    assertTrue(apply.out().contains("Deleted 7 objects in 7 DELETE requests"), apply::toString);
    assertEquals(List.of("0", "1", "2"), files(checkpoint.resolve("offsets")));
    assertEquals(List.of("0", "1", "2"), files(checkpoint.resolve("commits")));
    assertEquals(state, files(checkpoint.resolve("state")), "no state object is touched");

    ToolFixtures.Run again = tool("rewind", uri, "--to-batch", "3");
    assertEquals(StrataTool.EXIT_USAGE, again.code(), again::toString);
    assertTrue(again.err().contains("nothing to rewind"), again::toString);
  }

  @Test
  void refusesALiveQueryBatchZeroAndBatchesPastTheEnd() throws Exception {
    Path checkpoint = checkpoint(); // written just now: looks alive
    String uri = checkpoint.toUri().toString();

    ToolFixtures.Run live = tool("rewind", uri, "--to-batch", "3");
    assertEquals(StrataTool.EXIT_REFUSED, live.code(), live::toString);
    assertTrue(live.err().contains("Refusing to rewind " + uri.substring(0, uri.length() - 1)
        + " to batch 3: the query looks alive"), live::toString);

    ToolFixtures.Run negative = tool("rewind", uri, "--to-batch", "3", "--idle-minutes", "-1");
    assertEquals(StrataTool.EXIT_USAGE, negative.code(), negative::toString);
    assertTrue(negative.err().contains("Invalid --idle-minutes -1"), negative::toString);
    assertTrue(Files.exists(checkpoint.resolve("offsets/6")), "nothing deleted");

    ToolFixtures.Run zero = tool("rewind", uri, "--to-batch", "0", "--force");
    assertEquals(StrataTool.EXIT_USAGE, zero.code(), zero::toString);
    assertTrue(zero.err().contains("expected a batch >= 1"), zero::toString);

    ToolFixtures.Run past = tool("rewind", uri, "--to-batch", "7", "--force");
    assertEquals(StrataTool.EXIT_USAGE, past.code(), past::toString);
    assertTrue(past.err().contains("the offset log ends at batch 6"), past::toString);

    ToolFixtures.Run forced = tool("rewind", uri, "--to-batch", "6", "--force");
    assertEquals(StrataTool.EXIT_OK, forced.code(), forced::toString);
    assertFalse(Files.exists(checkpoint.resolve("offsets/6")), forced::toString);
  }

  @Test
  void refusesABatchWhoseLogsOrStateAreNoLongerRetainedNamingTheOldestThatIs()
      throws Exception {
    Path checkpoint = checkpoint();
    Path store = checkpoint.resolve("state/0/0");
    String uri = checkpoint.toUri().toString();
    Files.delete(checkpoint.resolve("offsets/0"));
    Files.delete(checkpoint.resolve("commits/0"));
    age(checkpoint);

    ToolFixtures.Run logs = tool("rewind", uri, "--to-batch", "1");
    assertEquals(StrataTool.EXIT_REFUSED, logs.code(), logs::toString);
    assertTrue(logs.err().contains("the oldest batch a rewind can re-run from is 3"),
        logs::toString);

    // Version 3's object deleted: version 3 has none, and every later version's chain names its
    // delta.
    ToolFixtures.deleteVersion(store, 3);
    ToolFixtures.Run missing = tool("rewind", uri, "--to-batch", "3");
    assertEquals(StrataTool.EXIT_REFUSED, missing.code(), missing::toString);
    assertTrue(missing.err().contains("store 0/0/default has no version object of version 3"),
        missing::toString);
    ToolFixtures.Run last = tool("rewind", uri, "--to-batch", "6");
    assertEquals(StrataTool.EXIT_REFUSED, last.code(), last::toString);
    assertTrue(last.err().contains("no later batch up to 5 can be re-run either"),
        last::toString);
    ToolFixtures.Run named = tool("rewind", uri, "--to-batch", "4");
    assertEquals(StrataTool.EXIT_REFUSED, named.code(), named::toString);
    assertTrue(named.err().contains("which is gone"), named::toString);
    assertTrue(named.err().contains("no later batch up to 5 can be re-run either"),
        named::toString);
    assertTrue(Files.exists(checkpoint.resolve("offsets/4")), "nothing deleted");

    // A restart after a rewind to N reads offsets/N-2 too (Spark checks the offset log).
    Files.delete(checkpoint.resolve("offsets/1")); // commits/1 stays, as a purge may leave it
    ToolFixtures.Run prev = tool("rewind", uri, "--to-batch", "3", "--force");
    assertEquals(StrataTool.EXIT_REFUSED, prev.code(), prev::toString);
    assertTrue(prev.err().contains("the offsets of the batch before (offsets/1)")
        && prev.err().contains("the oldest batch a rewind can re-run from is 4"), prev::toString);
  }

  /**
   * A store whose small files were merged and published in a base snapshot at version 20: once
   * version 2's object is gone, versions 3 to 19 cannot load, version 20 and later can; the
   * refusal names batch 20.
   */
  @Test
  void aRefusalNamesTheOldestBatchWhoseStateIsWhole() throws Exception {
    Path checkpoint = ToolFixtures.mergedCheckpoint(tmp);
    Path store = checkpoint.resolve("state/0/0");
    ToolFixtures.deleteVersion(store, 2);
    age(checkpoint);
    ToolFixtures.Run r = tool("rewind", checkpoint.toUri().toString(), "--to-batch", "5");
    assertEquals(StrataTool.EXIT_REFUSED, r.code(), r::toString);
    assertTrue(r.err().contains("the oldest batch a rewind can re-run from is 20"),
        r::toString);
    ToolFixtures.Run ok = tool("rewind", checkpoint.toUri().toString(), "--to-batch", "20");
    assertEquals(StrataTool.EXIT_OK, ok.code(), ok::toString);
  }

  @Test
  void refusesAnotherProvidersCheckpoint() throws Exception {
    Path checkpoint = checkpoint();
    Files.createDirectories(checkpoint.resolve("state/1/0"));
    Files.writeString(checkpoint.resolve("state/1/0/1.delta"), "HDFS provider's file");
    age(checkpoint);
    ToolFixtures.Run r = tool("rewind", checkpoint.toUri().toString(), "--to-batch", "3");
    assertEquals(StrataTool.EXIT_UNREADABLE, r.code(), r::toString);
    assertTrue(r.err().contains("HDFSBackedStateStoreProvider"), r::toString);
  }
  /**
   * Checkpoint format 2: {@code commits/2} names attempt A of version 3, whose object is gone;
   * another attempt B of version 3 (a lost race) is whole. Spark loads version 3 by the id the
   * commit log names, so the load would fail: the rewind to batch 3 is refused, naming the
   * attempt.
   */
  @Test
  void format2RefusesWhenTheAttemptTheCommitLogNamesIsGoneThoughAnotherIsWhole()
      throws Exception {
    Path checkpoint = ToolFixtures.checkpointFormat2(tmp);
    Path store = checkpoint.resolve("state/0/0");
    String named = ToolFixtures.attempts(store, 3).get(0);
    try (SyncedStore s = new SyncedStore(new StoreIdentity(0, 0, "default", store.toString()),
        ObjectStores.open(store.toUri().toString(), () -> null, RequestListener.NONE),
        tmp.resolve("local-race"), new StoreSettings(3, 2, 1 << 20, true,
            SharedMemory.Limits.DEFAULT, GcSettings.DEFAULT), "{}", "{}")) {
      s.load(2, Optional.of(ToolFixtures.attempts(store, 2).get(0)));
      s.put("k3".getBytes(StandardCharsets.UTF_8), "race".getBytes(StandardCharsets.UTF_8));
      s.commit();
    }
    assertEquals(2, ToolFixtures.attempts(store, 3).size(), "a second attempt of version 3");
    Files.delete(store.resolve("v/" + String.format("%020d", 3) + "/" + named + ".svo"));
    age(checkpoint);

    ToolFixtures.Run r = tool("rewind", checkpoint.toUri().toString(), "--to-batch", "3");
    assertEquals(StrataTool.EXIT_REFUSED, r.code(), r::toString);
    assertTrue(r.err().contains(named) && r.err().contains("commits/2"), r::toString);
    assertTrue(Files.exists(checkpoint.resolve("offsets/3")), "nothing deleted");
  }
  /**
   * A commit log that runs past the offset log (a hand rewind that deleted {@code offsets/6}
   * first and stopped): Spark refuses to start from offsets ending at 2 with {@code commits/6}
   * left, so the rewind deletes every commit of batch 3 and later, not only those up to the
   * offset log's end.
   */
  @Test
  void deletesCommitsPastTheEndOfTheOffsetLog() throws Exception {
    Path checkpoint = checkpoint();
    Files.writeString(checkpoint.resolve("commits/6"), "v1\n{\"nextBatchWatermarkMs\":0}");
    Files.delete(checkpoint.resolve("offsets/6"));
    age(checkpoint);

    ToolFixtures.Run r = tool("rewind", checkpoint.toUri().toString(), "--to-batch", "3");
    assertEquals(StrataTool.EXIT_OK, r.code(), r::toString);
    assertLogsEndAtBatch2(checkpoint, r);
  }
  /**
   * A query in the middle of a batch longer than the idle time (its offsets written at the
   * batch's start, no version yet) still writes into its stores: a spill of the batch's writes,
   * a new run's epoch claim on its first load. Either makes it look alive.
   */
  @Test
  void refusesAQueryWritingItsStoresMidBatch() throws Exception {
    Path checkpoint = checkpoint();
    Path store = checkpoint.resolve("state/0/0");
    String uri = checkpoint.toUri().toString();
    for (String key : new String[] {
        io.strata.format.StoreLayout.spill(7, io.strata.format.StoreLayout.newAttemptId(), 0),
        io.strata.format.StoreLayout.runClaim(2)}) {
      age(checkpoint);
      Files.createDirectories(store.resolve(key).getParent());
      Files.writeString(store.resolve(key), "written by a running batch");
      ToolFixtures.Run r = tool("rewind", uri, "--to-batch", "3");
      assertEquals(StrataTool.EXIT_REFUSED, r.code(), r::toString);
      assertTrue(r.err().contains("the query looks alive (state/0/0/" + key), r::toString);
      assertTrue(Files.exists(checkpoint.resolve("offsets/6")), "nothing deleted");
    }
    // Garbage collection's list of retired runs (gc --apply writes it too) does not count.
    age(checkpoint);
    String retired = io.strata.format.StoreLayout.retiredRuns(1);
    Files.writeString(store.resolve(retired), "retired by gc");
    ToolFixtures.Run dry = tool("rewind", uri, "--to-batch", "3", "--dry-run", "--json");
    assertEquals(StrataTool.EXIT_OK, dry.code(), dry::toString);
    assertTrue(dry.json().get("looksAlive").isNull(), dry::toString);
  }
  /**
   * A store gone as a whole (every object of {@code state/0/1} deleted): the listing has no
   * store to check, but Spark loads version 3 of every partition, so the rewind is refused,
   * naming the store.
   */
  @Test
  void refusesWhenAPartitionsStoreIsGoneAsAWhole() throws Exception {
    Path checkpoint = ToolFixtures.checkpoint(tmp, 3);
    try (Stream<Path> s = Files.walk(checkpoint.resolve("state/0/1"))) {
      for (Path p : s.sorted(java.util.Comparator.reverseOrder()).toList()) {
        Files.delete(p);
      }
    }
    age(checkpoint);
    ToolFixtures.Run r = tool("rewind", checkpoint.toUri().toString(), "--to-batch", "3");
    assertEquals(StrataTool.EXIT_REFUSED, r.code(), r::toString);
    assertTrue(r.err().contains("store 0/1/default has no object at all"), r::toString);
    assertTrue(r.err().contains("no later batch up to 5 can be re-run either"), r::toString);
    assertTrue(Files.exists(checkpoint.resolve("offsets/3")), "nothing deleted");
  }
  /**
   * A checkpoint on the local file system has Hadoop's {@code .<batch>.crc} beside each log
   * file: the rewind deletes those of the batches it deletes (a stale one would fail Spark's
   * read of the re-written file), keeps the others, and touches nothing of {@code ckpt2}, a
   * sibling whose name extends {@code ckpt}.
   */
  @Test
  void deletesHadoopChecksumFilesAndNothingOfASiblingWhoseNameExtendsIt() throws Exception {
    Path checkpoint = checkpoint();
    Path sibling = ToolFixtures.checkpointFormat2(tmp);
    for (String log : new String[] {"offsets", "commits"}) {
      for (int b = 0; b <= 6; b++) {
        if (Files.exists(checkpoint.resolve(log + "/" + b))) {
          Files.writeString(checkpoint.resolve(log + "/." + b + ".crc"), "crc");
        }
      }
    }
    age(checkpoint);
    age(sibling);
    List<String> siblingBefore = files(sibling);
    String uri = checkpoint.toUri().toString();

    // Each checksum file before its batch file: a rewind cut between them never leaves a stale
    // checksum for the file Spark writes next in its place.
    ToolFixtures.Run dry = tool("rewind", uri, "--to-batch", "5", "--dry-run", "--json");
    List<String> planned = new ArrayList<>();
    dry.json().get("objects").forEach(k -> planned.add(k.asText()));
    assertEquals(List.of("offsets/.6.crc", "offsets/6", "commits/.5.crc", "commits/5",
        "offsets/.5.crc", "offsets/5"), planned, dry::toString);

    ToolFixtures.Run r = tool("rewind", uri.substring(0, uri.length() - 1), "--to-batch", "3");
    assertEquals(StrataTool.EXIT_OK, r.code(), r::toString);
    for (String log : new String[] {"offsets", "commits"}) {
      assertEquals(List.of(".0.crc", ".1.crc", ".2.crc", "0", "1", "2"),
          files(checkpoint.resolve(log)), r::toString);
    }
    assertEquals(siblingBefore, files(sibling), "the sibling checkpoint is untouched");
  }

  /** A stateless query's checkpoint (no state/): only Spark's logs to check and delete. */
  @Test
  void rewindsAStatelessCheckpoint() throws Exception {
    Path checkpoint = checkpoint();
    try (Stream<Path> s = Files.walk(checkpoint.resolve("state"))) {
      for (Path p : s.sorted(java.util.Comparator.reverseOrder()).toList()) {
        Files.delete(p);
      }
    }
    age(checkpoint);
    ToolFixtures.Run r = tool("rewind", checkpoint.toUri().toString(), "--to-batch", "1");
    assertEquals(StrataTool.EXIT_OK, r.code(), r::toString);
    assertEquals(List.of("0"), files(checkpoint.resolve("offsets")), r::toString);
    assertEquals(List.of("0"), files(checkpoint.resolve("commits")), r::toString);
  }

  /**
   * Checkpoint format 2 with a lost race: attempt B of version 3 is newer than the attempt A
   * {@code commits/2} names. The rewind to batch 3 checks A (the one Spark loads) and goes on.
   */
  @Test
  void format2RewindsWithALostRacesAttemptBeside() throws Exception {
    Path checkpoint = ToolFixtures.checkpointFormat2(tmp);
    Path store = checkpoint.resolve("state/0/0");
    try (SyncedStore s = new SyncedStore(new StoreIdentity(0, 0, "default", store.toString()),
        ObjectStores.open(store.toUri().toString(), () -> null, RequestListener.NONE),
        tmp.resolve("local-race"), new StoreSettings(3, 2, 1 << 20, true,
            SharedMemory.Limits.DEFAULT, GcSettings.DEFAULT), "{}", "{}")) {
      s.load(2, Optional.of(ToolFixtures.attempts(store, 2).get(0)));
      s.put("k3".getBytes(StandardCharsets.UTF_8), "race".getBytes(StandardCharsets.UTF_8));
      s.commit();
    }
    age(checkpoint);
    ToolFixtures.Run r = tool("rewind", checkpoint.toUri().toString(), "--to-batch", "3");
    assertEquals(StrataTool.EXIT_OK, r.code(), r::toString);
    assertEquals(List.of("0", "1", "2"), files(checkpoint.resolve("commits")), r::toString);
    assertEquals(List.of("0", "1", "2"), files(checkpoint.resolve("offsets")), r::toString);
  }
  /**
   * Every batch committed (offsets and commits end at 19) and, of versions 3 to 20, only 20
   * whole (a base snapshot of version 20; version 2's object gone): version 20 is what the
   * next start loads anyway, so no batch can be rewound to, and the refusal must not name batch
   * 20 (a rewind to it says "nothing to rewind").
   */
  @Test
  void aRefusalNeverNamesABatchPastTheEndOfTheLogs() throws Exception {
    Path checkpoint = ToolFixtures.mergedCheckpoint(tmp, 20);
    Path store = checkpoint.resolve("state/0/0");
    ToolFixtures.deleteVersion(store, 2);
    age(checkpoint);
    String uri = checkpoint.toUri().toString();
    ToolFixtures.Run r = tool("rewind", uri, "--to-batch", "5");
    assertEquals(StrataTool.EXIT_REFUSED, r.code(), r::toString);
    ToolFixtures.Run to20 = tool("rewind", uri, "--to-batch", "20");
    assertEquals(StrataTool.EXIT_USAGE, to20.code(), to20::toString);
    assertFalse(r.err().contains("can re-run from is 20"), r::toString);
    assertTrue(r.err().contains("no later batch up to 19 can be re-run either"), r::toString);
  }
  /**
   * The greatest partition's store gone as a whole: the listing alone cannot tell, but
   * {@code offsets/<N-1>} records {@code spark.sql.shuffle.partitions}, the number of state
   * partitions Spark loads. An operator with partition 0 only (a global aggregation, a limit)
   * is not held to it.
   */
  @Test
  void refusesWhenTheLastPartitionsStoreIsGoneByTheLoggedPartitionCount() throws Exception {
    Path checkpoint = ToolFixtures.checkpoint(tmp, 3);
    try (Stream<Path> s = Files.walk(checkpoint.resolve("state/0/2"))) {
      for (Path p : s.sorted(java.util.Comparator.reverseOrder()).toList()) {
        Files.delete(p);
      }
    }
    for (int b = 0; b <= 6; b++) {
      Files.writeString(checkpoint.resolve("offsets/" + b), "v1\n{\"batchWatermarkMs\":0,"
          + "\"batchTimestampMs\":" + b + ",\"conf\":{\"spark.sql.shuffle.partitions\":"
          + "\"3\"}}\n{\"logOffset\":" + b + "}");
    }
    age(checkpoint);
    ToolFixtures.Run r = tool("rewind", checkpoint.toUri().toString(), "--to-batch", "3");
    assertEquals(StrataTool.EXIT_REFUSED, r.code(), r::toString);
    assertTrue(r.err().contains("store 0/2/default has no object at all"), r::toString);
    assertTrue(Files.exists(checkpoint.resolve("offsets/3")), "nothing deleted");

    try (Stream<Path> s = Files.walk(checkpoint.resolve("state/0/1"))) {
      for (Path p : s.sorted(java.util.Comparator.reverseOrder()).toList()) {
        Files.delete(p);
      }
    }
    ToolFixtures.Run global = tool("rewind", checkpoint.toUri().toString(), "--to-batch", "3");
    assertEquals(StrataTool.EXIT_OK, global.code(), "partition 0 only: " + global);
  }
  /**
   * A Hadoop checksum file past the end of a log ({@code offsets/.7.crc} left by a hand
   * deletion of {@code offsets/7}): Spark's rename-based write of a new {@code offsets/7} keeps
   * it beside the new file (HADOOP-16255), and its read then fails the checksum. The rewind
   * deletes every checksum file of a batch it rewinds.
   */
  @Test
  void deletesChecksumFilesPastTheEndOfTheLogs() throws Exception {
    Path checkpoint = checkpoint();
    Files.writeString(checkpoint.resolve("offsets/.7.crc"), "crc");
    Files.writeString(checkpoint.resolve("commits/.7.crc"), "crc");
    age(checkpoint);
    ToolFixtures.Run r = tool("rewind", checkpoint.toUri().toString(), "--to-batch", "3");
    assertEquals(StrataTool.EXIT_OK, r.code(), r::toString);
    assertLogsEndAtBatch2(checkpoint, r);
  }
  /**
   * A stray batch file with a huge number ({@code offsets/999999999999999999}): the plan is
   * made from the listing, not by counting down from the greatest batch, so it does not hang.
   */
  @Test
  void aHugeStrayBatchNumberDoesNotHang() throws Exception {
    Path checkpoint = checkpoint();
    Files.writeString(checkpoint.resolve("offsets/999999999999999999"), "v1\n{}\n{}");
    age(checkpoint);
    ToolFixtures.Run r = org.junit.jupiter.api.Assertions.assertTimeoutPreemptively(
        java.time.Duration.ofSeconds(20),
        () -> tool("rewind", checkpoint.toUri().toString(), "--to-batch", "3", "--dry-run"));
    assertEquals(StrataTool.EXIT_OK, r.code(), r::toString);
    assertTrue(r.out().contains("would delete offsets/999999999999999999"), r::toString);

    // A refusal looks for the oldest whole version among the listed ones only.
    Files.writeString(checkpoint.resolve("commits/999999999999999999"), "v1\n{}");
    ToolFixtures.deleteVersion(checkpoint.resolve("state/0/0"), 2);
    age(checkpoint);
    ToolFixtures.Run refused = org.junit.jupiter.api.Assertions.assertTimeoutPreemptively(
        java.time.Duration.ofSeconds(20),
        () -> tool("rewind", checkpoint.toUri().toString(), "--to-batch", "3", "--dry-run"));
    assertEquals(StrataTool.EXIT_REFUSED, refused.code(), refused::toString);
  }
  /** A store whose newest version is below the batch: the refusal says which versions it has. */
  @Test
  void aStoreEndingBelowTheBatchIsNamedWithTheVersionsItHolds() throws Exception {
    Path checkpoint = checkpoint();
    ToolFixtures.deleteVersion(checkpoint.resolve("state/0/0"), 6);
    age(checkpoint);
    ToolFixtures.Run r = tool("rewind", checkpoint.toUri().toString(), "--to-batch", "6");
    assertEquals(StrataTool.EXIT_REFUSED, r.code(), r::toString);
    assertTrue(r.err().contains("store 0/0/default has no version object of version 6 (it "
        + "holds versions 1 to 5)"), r::toString);
  }
  /**
   * A join's named stores ({@code state/0/<p>/<name>/}, two of them in two partitions): whole,
   * the rewind goes on; one of them gone in one partition, it is refused naming that store.
   */
  @Test
  void joinStoresAreCheckedByNameInEveryPartition() throws Exception {
    Path checkpoint = checkpoint();
    String[] names = {"left-keyToNumValues", "right-keyToNumValues"};
    for (int p = 0; p < 2; p++) {
      for (String name : names) {
        Path store = checkpoint.resolve("state/1/" + p + "/" + name);
        try (SyncedStore s = new SyncedStore(new StoreIdentity(1, p, name, store.toString()),
            ObjectStores.open(store.toUri().toString(), () -> null, RequestListener.NONE),
            tmp.resolve("local-" + p + name), new StoreSettings(3, 2, 1 << 20, false,
                SharedMemory.Limits.DEFAULT, GcSettings.DEFAULT), "{}", "{}")) {
          s.load(0, Optional.empty());
          for (int v = 1; v <= 6; v++) {
            s.put(("k" + v).getBytes(StandardCharsets.UTF_8),
                name.getBytes(StandardCharsets.UTF_8));
            s.commit();
          }
        }
      }
    }
    age(checkpoint);
    String uri = checkpoint.toUri().toString();
    ToolFixtures.Run dry = tool("rewind", uri, "--to-batch", "3", "--dry-run");
    assertEquals(StrataTool.EXIT_OK, dry.code(), dry::toString);

    try (Stream<Path> s = Files.walk(checkpoint.resolve("state/1/1/" + names[1]))) {
      for (Path p : s.sorted(java.util.Comparator.reverseOrder()).toList()) {
        Files.delete(p);
      }
    }
    ToolFixtures.Run r = tool("rewind", uri, "--to-batch", "3");
    assertEquals(StrataTool.EXIT_REFUSED, r.code(), r::toString);
    assertTrue(r.err().contains("store 1/1/" + names[1] + " has no object at all"),
        r::toString);
  }
  /**
   * A gap in the commit log ({@code commits/4} gone): a rewind to 5 is refused naming 6, the
   * oldest batch above the gap; a rewind to 4, below it, goes on and deletes from the end.
   */
  @Test
  void aGapInTheCommitLogIsNamedAndARewindBelowItGoesOn() throws Exception {
    Path checkpoint = checkpoint();
    Files.delete(checkpoint.resolve("commits/4"));
    age(checkpoint);
    String uri = checkpoint.toUri().toString();
    ToolFixtures.Run above = tool("rewind", uri, "--to-batch", "5");
    assertEquals(StrataTool.EXIT_REFUSED, above.code(), above::toString);
    assertTrue(above.err().contains("the oldest batch a rewind can re-run from is 6"),
        above::toString);
    ToolFixtures.Run below = tool("rewind", uri, "--to-batch", "4");
    assertEquals(StrataTool.EXIT_OK, below.code(), below::toString);
    assertEquals(List.of("0", "1", "2", "3"), files(checkpoint.resolve("offsets")));
    assertEquals(List.of("0", "1", "2", "3"), files(checkpoint.resolve("commits")));
  }
}
