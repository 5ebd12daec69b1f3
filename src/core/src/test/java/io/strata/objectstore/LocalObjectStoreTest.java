// SPDX-License-Identifier: Apache-2.0
package io.strata.objectstore;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.RepeatedTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class LocalObjectStoreTest {
  @TempDir Path dir;
  private LocalObjectStore store;

  @BeforeEach
  void open() {
    store = new LocalObjectStore(dir.resolve("root"));
  }

  @AfterEach
  void close() {
    store.close();
  }

  private static ObjectBody body(String s) {
    return ObjectBody.of(s.getBytes(UTF_8));
  }

  private String read(String key) throws IOException {
    try (InputStream in = store.get(key)) {
      return new String(in.readAllBytes(), UTF_8);
    }
  }

  @Test
  void putIfAbsentCreatesThenRefusesAndKeepsTheFirstObject() throws IOException {
    store.putIfAbsent("a/b/1.manifest", body("first"));
    ObjectAlreadyExistsException e = assertThrows(ObjectAlreadyExistsException.class,
        () -> store.putIfAbsent("a/b/1.manifest", body("second")));
    assertTrue(e.getMessage().contains("a/b/1.manifest"), e.getMessage());
    assertFalse(e.retryable(), "already-exists is not retryable");
    assertEquals("first", read("a/b/1.manifest"), "the loser did not overwrite");
    assertEquals(List.of("a/b/1.manifest"), keys(store.list("")), "no temp file is left");
  }

  @RepeatedTest(5)
  void putIfAbsentRaceOfEightWritersHasExactlyOneWinner() throws Exception {
    int writers = 8;
    ExecutorService pool = Executors.newFixedThreadPool(writers);
    try {
      CountDownLatch start = new CountDownLatch(1);
      List<Future<Boolean>> results = new ArrayList<>();
      for (int i = 0; i < writers; i++) {
        String content = "writer-" + i;
        Callable<Boolean> task = () -> {
          start.await();
          try {
            store.putIfAbsent("race/v1", body(content));
            return true;
          } catch (ObjectAlreadyExistsException lost) {
            return false;
          }
        };
        results.add(pool.submit(task));
      }
      start.countDown();
      List<Integer> winners = new ArrayList<>();
      for (int i = 0; i < writers; i++) {
        if (results.get(i).get()) {
          winners.add(i);
        }
      }
      assertEquals(1, winners.size(), "exactly one winner, got " + winners);
      assertEquals("writer-" + winners.get(0), read("race/v1"), "the winner's bytes are stored");
      try (Stream<Path> files = Files.list(dir.resolve("root/race"))) {
        assertEquals(List.of("v1"), files.map(p -> p.getFileName().toString()).toList(),
            "no temp files left behind");
      }
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void putReplaces() throws IOException {
    store.put("k", body("one"));
    store.put("k", body("two"));
    assertEquals("two", read("k"));
    store.putIfAbsent("k2", body("x"));
    store.put("k2", body("y"));
    assertEquals("y", read("k2"), "put replaces an object made by putIfAbsent");
  }

  @Test
  void bodyShorterThanDeclaredFailsAndLeavesNothing() {
    ObjectBody lying = new ObjectBody(10, () -> new java.io.ByteArrayInputStream(new byte[3]));
    ObjectStoreException e = assertThrows(ObjectStoreException.class,
        () -> store.putIfAbsent("short", lying));
    assertTrue(e.getMessage().contains("short"), e.getMessage());
    assertFalse(Files.exists(dir.resolve("root/short")));
  }

  @Test
  void emptyObject() throws IOException {
    store.putIfAbsent("empty", ObjectBody.of(new byte[0]));
    assertEquals("", read("empty"));
    assertEquals(0, store.head("empty").orElseThrow().size());
    assertArrayEquals(new byte[0], store.getTail("empty", 4));
  }

  @Test
  void rangesAndTail() throws IOException {
    store.put("r", body("0123456789"));
    try (InputStream in = store.getRange("r", 2, 3)) {
      assertEquals("234", new String(in.readAllBytes(), UTF_8));
    }
    try (InputStream in = store.getRange("r", 8, 100)) {
      assertEquals("89", new String(in.readAllBytes(), UTF_8), "a range past the end is clamped");
    }
    assertThrows(ObjectStoreException.class, () -> store.getRange("r", 10, 1),
        "first byte at the end is unsatisfiable, as S3 416");
    assertEquals("789", new String(store.getTail("r", 3), UTF_8));
    assertEquals("0123456789", new String(store.getTail("r", 50), UTF_8),
        "tail longer than the object is the whole object");
    assertThrows(IllegalArgumentException.class, () -> store.getRange("r", -1, 1));
    assertThrows(IllegalArgumentException.class, () -> store.getRange("r", 0, 0));
    assertThrows(IllegalArgumentException.class, () -> store.getTail("r", 0));
  }

  @Test
  void headReportsSizeAndMissing() throws IOException {
    store.put("h/x", body("abc"));
    ObjectInfo info = store.head("h/x").orElseThrow();
    assertEquals("h/x", info.key());
    assertEquals(3, info.size());
    assertTrue(info.lastModifiedMillis() > 0);
    assertTrue(store.head("h/missing").isEmpty());
    assertTrue(store.head("h").isEmpty(), "a directory is not an object");
    assertTrue(store.head("h/x/deeper").isEmpty(), "a path through a file is not an object");
  }

  @Test
  void listIsRecursiveInKeyOrderAndFiltersByPrefix() throws IOException {
    for (String k : List.of("b/2", "a", "b/10", "b/1", "c/d/e", "b1", "ab")) {
      store.put(k, body(k));
    }
    assertEquals(List.of("a", "ab", "b/1", "b/10", "b/2", "b1", "c/d/e"), keys(store.list("")));
    assertEquals(List.of("b/1", "b/10", "b/2"), keys(store.list("b/")));
    assertEquals(List.of("b/1", "b/10", "b/2", "b1"), keys(store.list("b")));
    assertEquals(List.of("b/1", "b/10"), keys(store.list("b/1")));
    assertEquals(List.of("c/d/e"), keys(store.list("c/d")));
    assertEquals(List.of(), keys(store.list("zz/")));
    assertEquals(4, store.list("b/10").get(0).size(), "sizes are reported");
    assertEquals(List.of(), new LocalObjectStore(dir.resolve("nowhere")).list(""),
        "a missing root lists nothing");
  }

  @Test
  void listDelimitedReturnsOneLevel() throws IOException {
    for (String k : List.of("b/2", "a", "b/10", "b/1", "c/d/e", "b1", "ab", "b/x/y")) {
      store.put(k, body(k));
    }
    DelimitedListing top = store.listDelimited("");
    assertEquals(List.of("a", "ab", "b1"), keys(top.objects()));
    assertEquals(List.of("b/", "c/"), top.commonPrefixes());
    DelimitedListing b = store.listDelimited("b/");
    assertEquals(List.of("b/1", "b/10", "b/2"), keys(b.objects()));
    assertEquals(List.of("b/x/"), b.commonPrefixes());
    DelimitedListing bare = store.listDelimited("b");
    assertEquals(List.of("b1"), keys(bare.objects()), "siblings sharing the prefix are listed");
    assertEquals(List.of("b/"), bare.commonPrefixes());
  }

  @Test
  void listOrdersByCodePointLikeS3() throws IOException {
    // U+FF21 (BMP, after the surrogates in UTF-16) sorts before U+1F600 in UTF-8 and code points.
    store.put("k\uFF21", body("1"));
    store.put("k\uD83D\uDE00", body("2"));
    assertEquals(List.of("k\uFF21", "k\uD83D\uDE00"), keys(store.list("")));
  }

  @Test
  void deleteRemovesAndIgnoresMissing() throws IOException {
    store.put("d/1", body("1"));
    store.put("d/2", body("2"));
    store.delete(List.of("d/1", "d/missing"));
    assertEquals(List.of("d/2"), keys(store.list("d/")));
    store.delete(List.of());
  }

  @Test
  void readingMissingObjectsThrowsNotFound() {
    ObjectNotFoundException e =
        assertThrows(ObjectNotFoundException.class, () -> store.get("no/such"));
    assertTrue(e.getMessage().contains("no/such"), e.getMessage());
    assertThrows(ObjectNotFoundException.class, () -> store.getRange("no/such", 0, 1));
    assertThrows(ObjectNotFoundException.class, () -> store.getTail("no/such", 1));
  }

  @Test
  void invalidKeysAreRejected() {
    for (String bad : List.of("", "/abs", "a/../b", "..", "a//b", "a/", "./a", "a\\b")) {
      assertThrows(IllegalArgumentException.class, () -> store.put(bad, body("x")),
          "key '" + bad + "' must be rejected");
      assertThrows(IllegalArgumentException.class, () -> store.get(bad),
          "key '" + bad + "' must be rejected on read");
    }
    assertThrows(IllegalArgumentException.class, () -> store.list("../"));
  }

  @Test
  void useAfterCloseIsAnIllegalStateException() {
    store.close();
    assertThrows(IllegalStateException.class, () -> store.put("k", body("x")));
    assertThrows(IllegalStateException.class, () -> store.list(""));
  }

  @Test
  void describeIsAFileUri() {
    assertTrue(store.describe("a/b").startsWith("file:"), store.describe("a/b"));
    assertTrue(store.describe("a/b").endsWith("/root/a/b"), store.describe("a/b"));
  }

  private static List<String> keys(List<ObjectInfo> infos) {
    return infos.stream().map(ObjectInfo::key).collect(Collectors.toList());
  }

  @Test
  void abortIncompleteUploadsDeletesOnlyStaleTemporaryFilesUnderThePrefix() throws IOException {
    store.putIfAbsent("spill/a.sst", body("done"));
    Path root = dir.resolve("root");
    Path staleSpill = root.resolve("spill/.b.sst.strata-tmp-1111");
    Path freshSpill = root.resolve("spill/.c.sst.strata-tmp-2222");
    Path staleOther = root.resolve("v/.x.svo.strata-tmp-3333");
    Files.createDirectories(staleOther.getParent());
    for (Path p : List.of(staleSpill, freshSpill, staleOther)) {
      Files.writeString(p, "partial");
    }
    long now = System.currentTimeMillis();
    java.nio.file.attribute.FileTime old =
        java.nio.file.attribute.FileTime.fromMillis(now - 7_200_000L);
    Files.setLastModifiedTime(staleSpill, old);
    Files.setLastModifiedTime(staleOther, old);
    Files.setLastModifiedTime(root.resolve("spill/a.sst"), old);
    long cutoff = now - 3_600_000L;

    assertEquals(1, store.abortIncompleteUploads("spill/", cutoff));
    assertFalse(Files.exists(staleSpill), "a write unfinished for 2 h is aborted");
    assertTrue(Files.exists(freshSpill), "a recent (maybe running) write is not");
    assertTrue(Files.exists(staleOther), "outside the prefix");
    assertEquals("done", read("spill/a.sst"), "objects are never touched, however old");
    assertEquals(1, store.abortIncompleteUploads("", cutoff));
    assertFalse(Files.exists(staleOther));
    assertEquals(0, store.abortIncompleteUploads("", cutoff));
    assertEquals(0, store.abortIncompleteUploads("nowhere/", cutoff), "a missing prefix");
  }
}
