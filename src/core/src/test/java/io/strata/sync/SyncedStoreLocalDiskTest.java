// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.engine.SharedMemory;
import io.strata.objectstore.ObjectStore;
import io.strata.objectstore.ObjectStores;
import io.strata.objectstore.RequestListener;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Predicate;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The store's local directory holds the live database plus at most one checkpoint, on success
 * and failure paths alike, and close never races a running commit or snapshot upload. Faults are
 * injected by a wrapper around the real local-filesystem object store.
 */
class SyncedStoreLocalDiskTest {
  @TempDir Path tmp;

  private static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  /** Wraps the real object store: fails or blocks puts whose key matches, counts late calls. */
  static final class FaultyObjectStore extends ForwardingObjectStore {
    volatile Predicate<String> failPut = k -> false;
    volatile Predicate<String> blockPut = k -> false;
    final CountDownLatch blocked = new CountDownLatch(1);
    final CountDownLatch release = new CountDownLatch(1);
    volatile boolean closed;
    final AtomicInteger callsAfterClose = new AtomicInteger();

    FaultyObjectStore(ObjectStore real) {
      super(real);
    }

    @Override
    void before(String method, String key) throws IOException {
      if (closed) {
        callsAfterClose.incrementAndGet();
      }
      boolean put = method.equals("PUT");
      if (put && failPut.test(key)) {
        throw new IOException("injected failure of PUT " + key);
      }
      if (put && blockPut.test(key)) {
        blocked.countDown();
        try {
          release.await();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new InterruptedIOException("PUT " + key + " interrupted");
        }
      }
    }

    @Override
    public void close() {
      closed = true;
      super.close();
    }
  }

  private final List<FaultyObjectStore> stores = new ArrayList<>();

  private SyncedStore open(String name, int snapshotInterval) {
    Path remote = tmp.resolve("remote");
    FaultyObjectStore objects = new FaultyObjectStore(ObjectStores.open(
        remote.toUri().toString(), SyncedStoreTest.UNUSED_S3, RequestListener.NONE));
    stores.add(objects);
    return new SyncedStore(new StoreIdentity(0, 1, "default", remote.toString()), objects,
        tmp.resolve("local-" + name), new StoreSettings(snapshotInterval, 2, 0, false, SharedMemory.Limits.DEFAULT, GcSettings.DEFAULT), "{}",
        "{}");
  }

  private FaultyObjectStore objectsOf(int i) {
    return stores.get(i);
  }

  private static void commitVersions(SyncedStore s, int from, int to) throws IOException {
    for (int v = from; v <= to; v++) {
      for (int i = 0; i < 20; i++) {
        s.put(b("key-" + v + "-" + i), b("value-" + v));
      }
      s.commit();
    }
  }

  /** Names in the store's directory, sorted; tmp/ contents listed as tmp/<name>. */
  private static List<String> localFiles(Path dir) throws IOException {
    List<String> out = new ArrayList<>();
    if (!Files.exists(dir)) {
      return out;
    }
    try (Stream<Path> s = Files.list(dir)) {
      for (Path p : s.sorted().toList()) {
        String name = p.getFileName().toString();
        if (name.equals("tmp")) {
          try (Stream<Path> t = Files.list(p)) {
            t.forEach(f -> out.add("tmp/" + f.getFileName()));
          }
        } else {
          out.add(name);
        }
      }
    }
    return out;
  }

  private static long count(List<String> names, String prefix) {
    return names.stream().filter(n -> n.startsWith(prefix)).count();
  }

  @Test
  void theDirectoryHoldsOnlyTheLiveDatabaseAfterCommitsSnapshotsAndRestores() throws Exception {
    Path dir = tmp.resolve("local-a");
    try (SyncedStore s = open("a", 2)) {
      s.load(0, Optional.empty());
      commitVersions(s, 1, 4);
      assertTrue(s.maintenance(), "a snapshot is due");
      commitVersions(s, 5, 6);
      s.awaitLocalIngestion(); // the last commit's delta is ingested after commit() returned
      assertEquals(List.of("db-1"), localFiles(dir), "one database, no checkpoint, empty tmp");
      s.load(3, Optional.empty()); // another version: restored into a fresh database
      // That cold load replayed a chain of snapshotInterval deltas: it scheduled a snapshot,
      // whose checkpoint goes when its upload ends.
      assertTrue(s.awaitSnapshotUpload(30_000), "the scheduled snapshot finished");
      List<String> after = localFiles(dir);
      assertEquals(1, count(after, "db-"), after.toString());
      assertEquals(0, count(after, "checkpoint-") + count(after, "tmp/"), after.toString());
      assertArrayEquals(b("value-3"), s.get(b("key-3-0")));
    }
    assertFalse(Files.exists(dir), "close deletes the directory");
  }

  @Test
  void aFailedCommitLeavesNoTemporaryFile() throws Exception {
    Path dir = tmp.resolve("local-a");
    try (SyncedStore s = open("a", 100)) {
      s.load(0, Optional.empty());
      commitVersions(s, 1, 1);
      objectsOf(0).failPut = k -> true;
      s.put(b("k"), b("v"));
      assertThrows(IOException.class, s::commit);
      assertEquals(0, count(localFiles(dir), "tmp/"), localFiles(dir).toString());
      s.abort();
      assertEquals(-1, s.loadedVersion(), "the database of the failed PUT is discarded");
      objectsOf(0).failPut = k -> false;
      s.load(1, Optional.empty()); // Spark's retry of the task loads the version again
      commitVersions(s, 2, 2);
      s.awaitLocalIngestion(); // the last commit's delta is ingested after commit() returned
      List<String> after = localFiles(dir);
      assertEquals(1, after.size(), after.toString());
      assertTrue(after.get(0).startsWith("db-"), after.toString());
      assertArrayEquals(b("value-1"), s.get(b("key-1-0")));
      assertNull(s.get(b("k")), "the failed version's write is gone");
    }
  }

  @Test
  void aFailedRestoreLeavesNoDatabaseAndNoDownloads() throws Exception {
    try (SyncedStore writer = open("w", 100)) {
      writer.load(0, Optional.empty());
      commitVersions(writer, 1, 3);
    }
    // Lose the object of version 2: its delta is named by version 3's manifest.
    Path remote = tmp.resolve("remote");
    try (Stream<Path> s = Files.walk(remote)) {
      for (Path p : s.filter(Files::isRegularFile).toList()) {
        if (p.toString().contains("0000000002")) {
          Files.delete(p);
        }
      }
    }
    Path dir = tmp.resolve("local-r");
    try (SyncedStore reader = open("r", 100)) {
      reader.load(1, Optional.empty());
      assertEquals(List.of("db-1"), localFiles(dir));
      assertThrows(StateLoadException.class, () -> reader.load(3, Optional.empty()));
      List<String> after = localFiles(dir);
      assertEquals(0, count(after, "db-") + count(after, "tmp/"),
          "neither the old nor the half-restored database, nor downloads: " + after);
      assertEquals(-1, reader.loadedVersion());
      reader.load(1, Optional.empty());
      assertArrayEquals(b("value-1"), reader.get(b("key-1-0")));
    }
  }

  @Test
  void leftoversOfFailedDeletesAreSweptByTheNextMaintenanceOrLoad() throws Exception {
    Path dir = tmp.resolve("local-a");
    try (SyncedStore s = open("a", 100)) {
      s.load(0, Optional.empty());
      commitVersions(s, 1, 2);
      Files.createDirectories(dir.resolve("db-99"));
      Files.write(dir.resolve("db-99").resolve("000007.sst"), new byte[100]);
      Files.createDirectories(dir.resolve("checkpoint-98"));
      Files.createDirectories(dir.resolve("tmp"));
      Files.write(dir.resolve("tmp").resolve("delta-2-x.sst"), new byte[100]);
      assertFalse(s.maintenance(), "no snapshot due, but the sweep runs");
      assertEquals(List.of("db-1"), localFiles(dir));

      Files.createDirectories(dir.resolve("checkpoint-97"));
      s.load(2, Optional.empty());
      assertEquals(List.of("db-1"), localFiles(dir));
      assertArrayEquals(b("value-2"), s.get(b("key-2-0")));
    }
  }

  @Test
  void aFailedSnapshotUploadDeletesItsCheckpoint() throws Exception {
    Path dir = tmp.resolve("local-a");
    try (SyncedStore s = open("a", 1)) {
      s.load(0, Optional.empty());
      commitVersions(s, 1, 2);
      objectsOf(0).failPut = k -> k.startsWith("sst/") || k.startsWith("snap/") || k.startsWith("b/");
      assertThrows(IOException.class, s::maintenance);
      assertEquals(List.of("db-1"), localFiles(dir));
      objectsOf(0).failPut = k -> false;
      assertTrue(s.maintenance());
      assertEquals(List.of("db-1"), localFiles(dir));
    }
  }

  @Test
  void closeWaitsForARunningCommit() throws Exception {
    SyncedStore s = open("a", 100);
    s.load(0, Optional.empty());
    commitVersions(s, 1, 1);
    FaultyObjectStore objects = objectsOf(0);
    objects.blockPut = k -> true;
    s.put(b("k"), b("v"));
    AtomicReference<Object> commitResult = new AtomicReference<>();
    Thread task = new Thread(() -> {
      try {
        commitResult.set(s.commit());
      } catch (Throwable t) {
        commitResult.set(t);
      }
    });
    task.start();
    assertTrue(objects.blocked.await(10, TimeUnit.SECONDS), "the commit's upload started");
    Thread closer = new Thread(s::close);
    closer.start();
    closer.join(300);
    assertTrue(closer.isAlive(), "close waits while the commit runs");
    objects.release.countDown();
    task.join(10_000);
    closer.join(10_000);
    assertFalse(closer.isAlive());
    assertTrue(commitResult.get() instanceof CommitResult,
        "the commit completed: " + commitResult.get());
    assertEquals(2, ((CommitResult) commitResult.get()).manifest().version());
    assertFalse(Files.exists(tmp.resolve("local-a")));
    assertEquals(0, objects.callsAfterClose.get());
  }

  @Test
  void closeStopsARunningSnapshotUploadAndWaitsForIt() throws Exception {
    Path dir = tmp.resolve("local-a");
    SyncedStore s = open("a", 1);
    s.load(0, Optional.empty());
    commitVersions(s, 1, 2);
    FaultyObjectStore objects = objectsOf(0);
    objects.blockPut = k -> k.startsWith("sst/") || k.startsWith("snap/") || k.startsWith("b/");
    AtomicReference<Throwable> maintenanceError = new AtomicReference<>();
    Thread maintenance = new Thread(() -> {
      try {
        s.maintenance();
      } catch (Throwable t) {
        maintenanceError.set(t);
      }
    });
    maintenance.start();
    assertTrue(objects.blocked.await(10, TimeUnit.SECONDS), "the snapshot upload started");
    List<String> during = localFiles(dir);
    assertEquals(List.of("checkpoint-2", "db-1"), during,
        "bounded by the live database plus one checkpoint");

    s.close(); // interrupts the blocked transfer, waits for maintenance to give up
    maintenance.join(10_000);
    assertFalse(maintenance.isAlive(), "maintenance ended");
    assertTrue(maintenanceError.get() != null, "the interrupted upload failed maintenance");
    assertFalse(Files.exists(dir), "close deleted the directory after the upload stopped");
    assertEquals(0, objects.callsAfterClose.get(), "no object store call after close");
  }
  /**
   * Issue 43 part 6: Spark 3.5 closes providers under its executor-wide provider lock, so a
   * close that waited for a slow base-snapshot upload (up to 30 + 30 s) stalled every stateful
   * task of the executor. {@code close(false)} during an upload whose PUTs are held returns at
   * once; another store loads and commits meanwhile; once the PUTs go through, the upload
   * finishes and publishes its snapshot whole (a new instance restores from it), and only then
   * is the local directory deleted and the object store closed.
   */
  @Test
  void closeWithoutWaitingReturnsAtOnceDuringASlowUploadWhichStillPublishes() throws Exception {
    Path dir = tmp.resolve("local-a");
    SyncedStore s = open("a", 1);
    s.load(0, Optional.empty());
    commitVersions(s, 1, 2);
    FaultyObjectStore objects = objectsOf(0);
    objects.blockPut = k -> k.startsWith("sst/") || k.startsWith("snap/") || k.startsWith("b/");
    Thread maintenance = new Thread(() -> {
      try {
        s.maintenance();
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    });
    maintenance.start();
    assertTrue(objects.blocked.await(10, TimeUnit.SECONDS), "the snapshot upload started");

    long t0 = System.nanoTime();
    s.close(false);
    long closeMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
    assertTrue(closeMs < 1_000, "close returned in " + closeMs + " ms, not after the upload");
    assertTrue(Files.exists(dir), "the checkpoint the upload reads is still there");
    try (SyncedStore other = open("b", 100)) { // another store is not held up meanwhile
      long t1 = System.nanoTime();
      other.load(0, Optional.empty());
      commitVersions(other, 1, 1);
      assertTrue(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t1) < 5_000);
    }

    objects.release.countDown(); // the slow PUTs go through
    maintenance.join(10_000);
    assertFalse(maintenance.isAlive(), "the upload ended");
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (Files.exists(dir) && System.nanoTime() < deadline) {
      Thread.sleep(20);
    }
    assertFalse(Files.exists(dir), "the close finished after the upload: directory deleted");
    assertEquals(0, objects.callsAfterClose.get(), "no object store call after its close");
    try (SyncedStore fresh = open("c", 100)) {
      fresh.load(2, Optional.empty());
      assertTrue(fresh.lastRestore().fromPublishedSnapshot(),
          "the snapshot published after close serves the next cold load: " + fresh.lastRestore());
      assertArrayEquals(b("value-2"), fresh.get(b("key-2-0")));
    }
  }
}
