// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.engine.SharedMemory;
import io.strata.format.StoreLayout;
import io.strata.objectstore.ObjectStore;
import io.strata.objectstore.ObjectStores;
import io.strata.objectstore.RequestListener;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The requests of a cold load (checkpoint format 1 with query runs), which on S3 cost a round
 * trip each: the listings of {@code runs/}, {@code v/<version>/} and {@code b/} are in flight at
 * once, with the tail GET of the version's likely object ({@link RestoreReads}), and the marker
 * of a new epoch claim is written beside the task, before the first commit ({@link RunEpochs}).
 * Local file system, behind a recording wrapper.
 */
class ColdLoadRequestsTest {
  @TempDir Path tmp;
  private int executors;

  /** Records every request's method and key; LISTs of the prefixes in {@link #meet} meet. */
  static final class Recording extends ForwardingObjectStore {
    final List<String> requests = Collections.synchronizedList(new ArrayList<>());
    /** Prefixes whose LISTs wait for one another (all must be in flight at once), or empty. */
    volatile List<String> meet = List.of();
    volatile CountDownLatch met = new CountDownLatch(0);
    volatile boolean missed;

    Recording(ObjectStore real) {
      super(real);
    }

    long count(String method, String keyPrefix) {
      synchronized (requests) {
        return requests.stream().filter(r -> r.startsWith(method + " " + keyPrefix)).count();
      }
    }

    @Override
    void before(String method, String key) throws IOException {
      requests.add(method + " " + key);
      if (method.equals("LIST") && meet.contains(key)) {
        CountDownLatch l = met;
        l.countDown();
        try {
          if (!l.await(10, TimeUnit.SECONDS)) {
            missed = true;
          }
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new java.io.InterruptedIOException();
        }
      }
    }
  }

  private Recording recording(String root) {
    return new Recording(ObjectStores.open(root, SyncedStoreTest.UNUSED_S3,
        RequestListener.NONE));
  }

  private SyncedStore open(ObjectStore objects, String root) {
    return open(objects, root, UUID.randomUUID().toString());
  }

  private SyncedStore open(ObjectStore objects, String root, String run) {
    StoreSettings s = new StoreSettings(100, 2, 0, false, SharedMemory.Limits.DEFAULT,
        GcSettings.DEFAULT).withRun(run);
    return new SyncedStore(new StoreIdentity(0, 0, "default", root), objects,
        tmp.resolve("exec-" + (executors++)), s, "{}", "{}", new OffsetClock());
  }

  private static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  /** Commits versions 1..3 under a first run; returns the store's root. */
  private String threeVersions() throws IOException {
    String root = tmp.resolve("remote").toUri().toString();
    try (SyncedStore w = open(recording(root), root)) {
      w.load(0, Optional.empty());
      for (int v = 1; v <= 3; v++) {
        w.put(b("k" + v), b("v" + v));
        w.commit();
      }
    }
    return root;
  }

  @Test
  void aColdLoadHasItsThreeListingsInFlightAtOnce() throws Exception {
    String root = threeVersions();
    Recording objects = recording(root);
    objects.meet = List.of(StoreLayout.RUNS, StoreLayout.versionPrefix(3),
        StoreLayout.PUBLISHED_SNAPSHOTS);
    objects.met = new CountDownLatch(3);
    try (SyncedStore s = open(objects, root)) {
      s.load(3, Optional.empty());
      assertTrue(!objects.missed && objects.met.getCount() == 0,
          "runs/, v/3/ and b/ listed at once: " + objects.requests);
      assertEquals(1, objects.count("TAIL", StoreLayout.versionPrefix(3)),
          "the tail fetched beside the LIST served the manifest: " + objects.requests);
      assertArrayEquals(b("v1"), s.get(b("k1")));
      assertArrayEquals(b("v3"), s.get(b("k3")));
      s.put(b("k4"), b("v4"));
      assertEquals(4, s.commit().manifest().version());
    }
  }

  @Test
  void aReadStoreUpgradedForWritingWritesItsMarkerBeforeItsFirstCommit() throws Exception {
    String root = threeVersions();
    Recording objects = recording(root);
    String run = UUID.randomUUID().toString();
    try (SyncedStore s = open(objects, root, run)) {
      s.load(3, Optional.empty(), true);
      assertEquals(0, objects.count("PUT", StoreLayout.RUNS), "a read-only load writes nothing");
      s.prepareWrite();
      assertEquals(2, objects.count("LIST", StoreLayout.RUNS),
          "the claim lists runs/ afresh: " + objects.requests);
      assertEquals(2, s.epoch(), "the first run held epoch 1");
      s.put(b("k4"), b("v4"));
      assertEquals(4, s.commit().manifest().version());
      // The marker, written beside the task, is in place before the commit's PUT.
      List<String> puts = objects.requests.stream().filter(r -> r.startsWith("PUT ")).toList();
      assertEquals(List.of("PUT " + StoreLayout.runClaim(2),
          "PUT " + StoreLayout.runMarker(2, run), "PUT "
              + StoreLayout.generationVersionObject(4, 1)), puts.subList(0, 3), puts.toString());
    }
  }
}
