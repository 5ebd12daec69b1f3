// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.engine.SharedMemory;
import io.strata.format.StoreLayout;
import io.strata.objectstore.ObjectInfo;
import io.strata.objectstore.ObjectStore;
import io.strata.objectstore.ObjectStores;
import io.strata.objectstore.RequestListener;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Clock;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Adversarial review of the cold-load changes (RestoreReads, the marker written ahead, and a
 * reused listing of runs/ that was dropped for the first finding): each test states an
 * invariant the change must keep, in a scenario the review built to break it. Local file
 * system.
 */
class ColdLoadRunsReviewTest {
  @TempDir Path tmp;
  private int executors;

  /** Delegates, with injected faults on PUTs and a record of calls made after close(). */
  static final class Hooked extends ForwardingObjectStore {
    volatile Predicate<String> failPutOnce = k -> false;
    /** PUTs of matching keys wait for {@link #release}, ignoring interrupts (as S3 socket I/O). */
    volatile Predicate<String> holdPut = k -> false;
    final CountDownLatch held = new CountDownLatch(1);
    final CountDownLatch release = new CountDownLatch(1);
    volatile boolean closed;
    final List<String> afterClose = Collections.synchronizedList(new ArrayList<>());
    /** A LIST of this prefix waits until a tail GET of {@link #tailOf} ended, then runs this. */
    volatile String holdList;
    volatile String tailOf;
    volatile IoAction beforeList;
    final CountDownLatch tailDone = new CountDownLatch(1);

    interface IoAction {
      void run() throws IOException;
    }

    Hooked(ObjectStore real) {
      super(real);
    }

    @Override
    void before(String method, String key) throws IOException {
      if (method.equals("PUT")) {
        put(key);
      } else if (method.equals("LIST") && key.equals(holdList)) {
        holdList = null;
        try {
          if (!tailDone.await(10, TimeUnit.SECONDS)) {
            throw new IOException("test: the tail GET never came");
          }
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new java.io.InterruptedIOException();
        }
        beforeList.run();
      }
    }

    private void put(String key) throws IOException {
      if (failPutOnce.test(key)) {
        failPutOnce = k -> false;
        throw new IOException("injected failure of PUT " + key);
      }
      if (holdPut.test(key)) {
        held.countDown();
        boolean done = false;
        while (!done) {
          try {
            release.await();
            done = true;
          } catch (InterruptedException ignored) {
            // blocking socket I/O does not notice an interrupt
          }
        }
      }
      if (closed) {
        afterClose.add("PUT " + key);
      }
    }

    @Override
    public byte[] getTail(String key, int length) throws IOException {
      try {
        return super.getTail(key, length);
      } finally {
        if (key.equals(tailOf)) {
          tailDone.countDown();
        }
      }
    }

    @Override
    public void close() {
      closed = true;
      super.close();
    }
  }

  private ObjectStore objects(String root) {
    return ObjectStores.open(root, SyncedStoreTest.UNUSED_S3, RequestListener.NONE);
  }

  private SyncedStore open(ObjectStore objects, String root, String run, Clock clock) {
    StoreSettings s = new StoreSettings(100, 2, 0, false, SharedMemory.Limits.DEFAULT,
        GcSettings.DEFAULT).withRun(run);
    return new SyncedStore(new StoreIdentity(0, 0, "default", root), objects,
        tmp.resolve("exec-" + (executors++)), s, "{}", "{}", clock);
  }

  private SyncedStore open(String root, String run) {
    return open(objects(root), root, run, new OffsetClock());
  }

  private static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private List<String> runKeys(String root) throws IOException {
    try (ObjectStore o = objects(root)) {
      return o.list(StoreLayout.RUNS).stream().map(ObjectInfo::key).sorted().toList();
    }
  }

  /** Run "a" commits versions 1..3 (epoch 1); returns the store's root. */
  private String threeVersions() throws IOException {
    String root = tmp.resolve("remote").toUri().toString();
    try (SyncedStore w = open(root, "a")) {
      w.load(0, Optional.empty());
      for (int v = 1; v <= 3; v++) {
        w.put(b("k"), b("a" + v));
        w.commit();
      }
    }
    return root;
  }

  /**
   * Finding 1 (mended: the claim lists runs/ afresh). RunEpochs claimed from a read-only load's
   * listing if the store's wall clock said it was at most 5 s old (a clock that can also step
   * back), on the premise that no epoch it would claim can be freed in between. Retirement frees
   * epochs: here two runs start after the read-only load, the later one (e) retires the earlier
   * (d) in two rounds, and the upgraded store (run c) then claimed d's epoch from its stale
   * listing: runs c and d both held epoch 2 (d's instance is still open), and c, the newest
   * run, was ordered below e. c's commit of version 4 then found d's (zombie) commit at the
   * same epoch and adopted it ("first writer wins"), although the version's greatest generation
   * is e's, and c's next load was FENCED. A fresh LIST gives c epoch 4, whose commit supersedes
   * both. The whole sequence takes well under a second of real time (in the message).
   */
  @Test
  void aStaleListingClaimsAnEpochThatRetirementFreedTwoRunsShareIt() throws Exception {
    String root = threeVersions();
    try (SyncedStore c = open(objects(root), root, "c", new OffsetClock());
        SyncedStore d = open(root, "d")) {
      long t0 = System.nanoTime();
      c.load(3, Optional.empty(), true); // lists runs/: epoch 1 is the greatest

      d.load(3, Optional.empty()); // run d claims epoch 2
      assertEquals(2, d.epoch());
      d.put(b("k"), b("d4"));
      d.commit(); // v/4/g1, epoch 2: d's executor then goes quiet (a zombie)
      d.awaitLocalIngestion();
      try (SyncedStore e = open(root, "e")) {
        e.load(3, Optional.empty()); // run e claims epoch 3
        assertEquals(3, e.epoch());
        e.put(b("k"), b("e4"));
        e.commit(); // supersedes d's v4 as g2
        e.put(b("k"), b("e5"));
        e.commit();
        e.awaitLocalIngestion();
        e.collectGarbage(); // phase 1: runs/<n>.retired names d
        e.collectGarbage(); // phase 2: d's claim and marker deleted
      }
      assertFalse(runKeys(root).contains(StoreLayout.runClaim(2)),
          "setup: d's claim was retired: " + runKeys(root));

      c.prepareWrite();
      long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
      long cEpoch = c.epoch();
      List<String> runs = runKeys(root);
      c.put(b("k"), b("c4"));
      CommitResult r = c.commit();
      String next;
      try {
        c.load(4, Optional.empty());
        next = "loads 4";
      } catch (StateLoadException fenced) {
        next = fenced.reason().toString();
      }
      assertTrue(cEpoch > 3 && !r.lostRace(), "run c claimed epoch " + cEpoch
          + " from a listing made " + tookMs + " ms earlier (real time) while run d's open "
          + "instance holds epoch " + d.epoch() + " and run e holds 3 (runs/: " + runs
          + "); c's commit of version 4: lostRace=" + r.lostRace() + ", adopted the manifest of "
          + "attempt " + r.manifest().attempt() + " epoch " + r.manifest().epoch() + " at "
          + r.key() + "; c's next load of 4: " + next);
    }
  }

  /**
   * Finding 2 (mended: RunEpochs#awaitMarker writes a marker whose PUT failed). The claim's
   * marker PUT is awaited by its first commit, so no version of a run is committed before its
   * marker exists. The review found a failed PUT forgotten: the first commit failed, and the
   * same instance's next commit committed without any marker. Now the first commit writes it.
   */
  @Test
  void aFailedMarkerPutIsWrittenAgainByTheFirstCommit() throws Exception {
    String root = threeVersions();
    Hooked objects = new Hooked(objects(root));
    String run = "r";
    objects.failPutOnce = k -> k.equals(StoreLayout.runMarker(2, run));
    try (SyncedStore s = open(objects, root, run, new OffsetClock())) {
      s.load(3, Optional.empty());
      assertEquals(2, s.epoch());
      s.put(b("k"), b("r4"));
      assertEquals(4, s.commit().manifest().version());
      s.awaitLocalIngestion();
    }
    assertTrue(runKeys(root).contains(StoreLayout.runMarker(2, run)),
        "version 4 of run r is committed, so runs/ holds its marker: " + runKeys(root));
  }

  /**
   * Finding 3 (mended: CommitConflicts#closing). The marker PUT runs on the transfer pool. A
   * store that loads (claims) and is then closed without committing (the task failed or was
   * killed after its load; the provider is unloaded) waits for the PUT still in flight (up to 5
   * s; a PUT blocked in socket I/O ignores the interrupt of shutdownNow) before it closes the
   * object store, as it waits for its uploads (SyncedStoreLocalDiskTest: "no object store call
   * after close").
   */
  @Test
  void theMarkerPutOutlivesTheStoresClose() throws Exception {
    String root = threeVersions();
    Hooked objects = new Hooked(objects(root));
    objects.holdPut = k -> StoreLayout.markerEpochOf(k) > 0;
    SyncedStore s = open(objects, root, "r", new OffsetClock());
    s.load(3, Optional.empty());
    assertTrue(objects.held.await(10, TimeUnit.SECONDS), "the marker PUT is in flight");
    Thread response = new Thread(() -> {
      try {
        Thread.sleep(500);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      objects.release.countDown(); // the PUT's response arrives while close() waits for it
    });
    response.start();
    s.close();
    assertTrue(objects.closed, "close() returned and closed the object store");
    response.join();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
    while (objects.afterClose.isEmpty() && System.nanoTime() < deadline) {
      Thread.sleep(20);
    }
    assertEquals(List.of(), objects.afterClose, "object store calls after the store's close");
  }

  /**
   * Finding 4 (mended: the fetched tail serves only at the size the LIST gives). The tail of
   * v/<v>/g0000000001.svo is fetched before (or while) the version is
   * listed, and used if the LIST picks that key. Keys are create-only but not forever: garbage
   * collection frees a generation's slot and a later run's commit takes it again
   * (docs/format.md, "What a stale or concurrent instance can delete"). If that happens between
   * the speculative GET and the LIST, the load reads the manifest of an object that no longer
   * exists at the key the LIST picked. A version without writes names no bytes of its own
   * object, so nothing fails a checksum: the load returns the deleted object's state. Before the
   * change the GET followed the LIST, and read the object the key then held. Here the swap is
   * forced between the two requests (a read-only load, as the state data source's).
   */
  @Test
  void theSpeculativeTailServesAnObjectTheListNoLongerNames() throws Exception {
    String root = threeVersions();
    try (SyncedStore a = open(root, "a")) { // version 4 without writes, run a's g1
      a.load(3, Optional.empty());
      a.commit();
    }
    String g1 = StoreLayout.generationVersionObject(4, 1);
    Hooked objects = new Hooked(objects(root));
    objects.tailOf = g1;
    objects.holdList = StoreLayout.versionPrefix(4);
    objects.beforeList = () -> {
      try (ObjectStore raw = objects(root)) {
        raw.delete(List.of(g1)); // a round collects run a's v4 ...
      }
      try (SyncedStore bRun = open(root, "b")) { // ... and run b re-commits it into g1
        bRun.load(3, Optional.empty());
        bRun.put(b("k"), b("b4"));
        bRun.commit();
        bRun.awaitLocalIngestion();
      }
    };
    try (SyncedStore reader = open(objects, root, "reader", new OffsetClock())) {
      reader.load(4, Optional.empty(), true);
      String got = new String(reader.get(b("k")), StandardCharsets.UTF_8);
      long epoch = reader.loadedManifest().get().epoch();
      try (ObjectStore raw = objects(root)) {
        assertEquals(List.of(g1), raw.list(StoreLayout.versionPrefix(4)).stream()
            .map(ObjectInfo::key).toList());
      }
      assertEquals("b4", got, "version 4 is run b's (epoch 2) at " + g1 + "; the load returned "
          + "the state of the deleted object (epoch " + epoch + ")");
    }
  }
}
