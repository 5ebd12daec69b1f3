// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.engine.SharedMemory;
import io.strata.format.StoreLayout;
import io.strata.objectstore.ObjectInfo;
import io.strata.objectstore.ObjectStore;
import io.strata.objectstore.ObjectStores;
import io.strata.objectstore.RequestListener;
import io.strata.objectstore.S3Settings;
import io.strata.objectstore.S3WriteSettings;
import io.strata.testkit.S3Relay;
import io.strata.testkit.S3ProxyServer;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/**
 * Adversarial review of issue 43's run-claim retirement on a store whose reads lag behind its
 * writes (docs/operations.md; S3Relay lag mode, S3Proxy behind it): the retiring round
 * writes the retired-runs list and deletes the earlier run's claim and marker at once; for as
 * long as the new list is hidden, an executor of the retired run that opens a new instance
 * finds neither its marker nor the list, and claims a new, greatest epoch.
 */
class RunRetirementLagIT {

  @Test
  void aRetiredRunIsFencedWhileTheNewListIsStillHidden() throws Exception {
    Path work = Files.createTempDirectory("strata-retire-lag-it");
    try (S3ProxyServer server = S3ProxyServer.start(work.resolve("s3"), Map.of())) {
      String bucket = "rl-" + UUID.randomUUID().toString().substring(0, 13);
      server.createBucket(bucket);
      try (S3Relay proxy = new S3Relay(server.endpoint(), null)) {
        S3Settings s3 = new S3Settings(Optional.of(proxy.endpoint()), "us-east-1", true,
            Optional.of(S3ProxyServer.ACCESS_KEY), Optional.of(S3ProxyServer.SECRET_KEY),
            Optional.empty(), 2, Duration.ofSeconds(20), Duration.ofSeconds(5), 8)
            .withWrites(new S3WriteSettings("none", Optional.empty(), Optional.empty(), false,
                false));
        String location = "s3://" + bucket + "/ckpt/state/0/0";
        String runA = UUID.randomUUID().toString();
        String runB = UUID.randomUUID().toString();
        int[] n = {0};
        java.util.function.Function<String, SyncedStore> open = run -> new SyncedStore(
            new StoreIdentity(0, 0, "default", location),
            ObjectStores.open(location, s3, RequestListener.NONE),
            work.resolve("local-" + (n[0]++)), new StoreSettings(10, 2, 0, false,
                SharedMemory.Limits.DEFAULT, new GcSettings(true, 100, 30, 3_600_000))
                .withRun(run), "{}", "{}", new OffsetClock());
        TreeMap<String, String> state = new TreeMap<>();
        try (SyncedStore a = open.apply(runA)) {
          a.load(0, Optional.empty());
          for (long v = 1; v <= 2; v++) {
            state = GcWorkload.write(a, state, v, "a");
            a.commit();
          }
          a.awaitLocalIngestion();
        }
        TreeMap<String, String> bState;
        try (SyncedStore b = open.apply(runB)) {
          b.load(2, Optional.empty()); // run B claims epoch 2
          proxy.lag(3_000); // from now on new objects stay hidden for 3 s
          bState = GcWorkload.write(b, state, 3, "b");
          b.commit();
          b.awaitLocalIngestion(); // and B's first round, which retires run A
          try (ObjectStore o = ObjectStores.open(location, s3, RequestListener.NONE)) {
            List<String> runs = o.list(StoreLayout.RUNS).stream().map(ObjectInfo::key).toList();
            assertTrue(runs.stream().anyMatch(k -> k.contains(runA)), "run A's marker stays "
                + "until a round's listing shows a list naming run A (two phases): " + runs);
          }
          // A task of run A's old driver opens a new instance of the store right then, and
          // commits version 3 (as a zombie would).
          IOException fenced = null;
          long zombieEpoch = -1;
          try (SyncedStore zombie = open.apply(runA)) {
            try {
              zombie.load(2, Optional.empty());
              zombieEpoch = zombie.epoch();
              GcWorkload.write(zombie, state, 3, "zombie");
              zombie.commit();
            } catch (IOException e) {
              fenced = e;
            }
          }
          Thread.sleep(3_500); // the lag is over
          String got;
          try (SyncedStore reader = open.apply(UUID.randomUUID().toString())) {
            reader.load(3, Optional.empty(), true);
            got = String.valueOf(reader.loadedManifest().orElseThrow().epoch());
            GcWorkload.assertState(reader, bState, "version 3 must be run B's (epoch " + b.epoch()
                + "), the zombie of retired run A got epoch " + zombieEpoch
                + " and the version read has epoch " + got);
          }
          assertTrue(fenced != null && fenced.getMessage().contains("superseded"),
              "run A's new instance is fenced (its marker, or the list naming it); it got epoch "
              + zombieEpoch + " (run B holds " + b.epoch() + "): " + fenced);
          // After the lag, B's next round sees the list naming A and deletes A's claim and
          // marker; a new instance of run A is then fenced by the list.
          b.collectGarbage();
          try (ObjectStore o = ObjectStores.open(location, s3, RequestListener.NONE)) {
            List<String> runs = o.list(StoreLayout.RUNS).stream().map(ObjectInfo::key).toList();
            assertTrue(runs.stream().noneMatch(k -> k.contains(runA)), "run A's claim and "
                + "marker go once a listed list names run A: " + runs);
          }
          try (SyncedStore zombie = open.apply(runA)) {
            StateLoadException e = org.junit.jupiter.api.Assertions.assertThrows(
                StateLoadException.class, () -> zombie.load(3, Optional.empty()));
            assertEquals(StateLoadException.Reason.FENCED, e.reason(), e.getMessage());
          }
        }
      }
    }
  }
  /**
   * Run C's last round lists {@code runs/} before run D's claim and writes its list after it
   * (a slow round, or one of a stopped driver's executors); on a lagging store D's first round
   * then sees neither that list nor the claims it replaced, writes a list of C alone, and its
   * next round deletes C's list: the retired ids of A and B are lost, and a zombie of B is not
   * fenced.
   */
  @Test
  void theRetiredRunsListKeepsEveryRunWhenAnEarlierRoundsListIsStillHidden() throws Exception {
    Path work = Files.createTempDirectory("strata-retire-lag-it");
    try (S3ProxyServer server = S3ProxyServer.start(work.resolve("s3"), Map.of())) {
      String bucket = "rl-" + UUID.randomUUID().toString().substring(0, 13);
      server.createBucket(bucket);
      try (S3Relay proxy = new S3Relay(server.endpoint(), null)) {
        S3Settings s3 = new S3Settings(Optional.of(proxy.endpoint()), "us-east-1", true,
            Optional.of(S3ProxyServer.ACCESS_KEY), Optional.of(S3ProxyServer.SECRET_KEY),
            Optional.empty(), 2, Duration.ofSeconds(20), Duration.ofSeconds(5), 8)
            .withWrites(new S3WriteSettings("none", Optional.empty(), Optional.empty(), false,
                false));
        String location = "s3://" + bucket + "/ckpt/state/0/0";
        StoreIdentity id = new StoreIdentity(0, 0, "default", location);
        List<String> runIds = new java.util.ArrayList<>();
        int[] n = {0};
        java.util.function.BiFunction<String, Boolean, SyncedStore> open = (run, gc) ->
            new SyncedStore(id, ObjectStores.open(location, s3, RequestListener.NONE),
                work.resolve("local-" + (n[0]++)), new StoreSettings(10, 2, 0, false,
                    SharedMemory.Limits.DEFAULT, new GcSettings(gc, 100, 30, 3_600_000))
                    .withRun(run), "{}", "{}", new OffsetClock());
        TreeMap<String, String> state = new TreeMap<>();
        // Runs A and B (B's first round retires A), then C, which commits and has not
        // collected yet.
        for (int r = 0; r < 3; r++) {
          String run = UUID.randomUUID().toString();
          runIds.add(run);
          try (SyncedStore s = open.apply(run, r < 2)) {
            s.load(r, Optional.empty());
            state = GcWorkload.write(s, state, r + 1, "r" + r);
            s.commit();
            s.awaitLocalIngestion();
          }
        }
        String runD = UUID.randomUUID().toString();
        try (SyncedStore d = open.apply(runD, true);
            ObjectStore o = ObjectStores.open(location, s3, RequestListener.NONE)) {
          // C's round lists before D claims ...
          List<io.strata.format.Reachability.Listed> cListing = new java.util.ArrayList<>();
          for (ObjectInfo i : o.list("")) {
            cListing.add(new io.strata.format.Reachability.Listed(i.key(), i.size(),
                i.lastModifiedMillis()));
          }
          d.load(3, Optional.empty()); // D claims epoch 4
          proxy.lag(3_000);
          // ... and writes its list (hidden for 3 s) and deletes what it replaces after.
          new RunRetirement(id, o, java.time.Clock.systemUTC()).retire(cListing, 3);
          state = GcWorkload.write(d, state, 4, "d");
          d.commit();
          d.awaitLocalIngestion(); // D's first round
          Thread.sleep(3_500);
          d.collectGarbage();
          List<String> runs = o.list(StoreLayout.RUNS).stream().map(ObjectInfo::key).toList();
          for (int r = 0; r < 3; r++) {
            assertTrue(RunRetirement.isRetired(o, id, runs, runIds.get(r)), "run "
                + (char) ('A' + r) + " is in a retired-runs list: runs/ " + runs);
          }
        }
      }
    }
  }
}
