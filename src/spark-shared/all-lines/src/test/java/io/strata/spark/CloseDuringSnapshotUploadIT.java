// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.config.StrataConf;
import io.strata.format.StoreLayout;
import io.strata.testkit.S3Relay;
import io.strata.testkit.S3Relay.Fault;
import io.strata.testkit.OnlyOnSparkLines;
import io.strata.testkit.S3ProxyServer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.execution.streaming.state.StateStore;
import org.apache.spark.sql.execution.streaming.state.StateStoreId;
import org.apache.spark.sql.internal.SQLConf;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * Issue 43 part 6: Spark 3.5 (and 4.0) closes a provider (unload, maintenance) while it holds its
 * executor-wide provider lock ({@code StateStore.loadedProviders}), which every stateful task's
 * load takes too. A close that waited for a slow base-snapshot upload (up to 30 + 30 s) stalled
 * every stateful task of the executor meanwhile. Here a {@link S3Relay} in front of S3Proxy
 * delays the snapshot's pack PUT by {@value #DELAY_MS} ms; the provider is closed under a lock
 * standing in for Spark's while the upload runs; another store's load, which needs that lock
 * first as Spark's does, is not held up; the upload still finishes in the background and
 * publishes its snapshot whole, and only then are the closed store's local files deleted.
 */
@OnlyOnSparkLines(value = {"3.5", "4.0"}, reason = "only Spark 3.5 and 4.0 close providers "
    + "under a lock their tasks need; 4.1+ closes them outside it, where close still waits")
class CloseDuringSnapshotUploadIT {
  private static final long DELAY_MS = 4_000;
  @TempDir Path tmp;

  @Test
  @Timeout(value = 2, unit = TimeUnit.MINUTES)
  void closeUnderSparksLockDoesNotWaitForTheUploadWhichStillPublishes() throws Exception {
    S3ProxyServer s3 = SparkS3Harness.sharedServer();
    try (S3Client admin = s3.client();
        S3Relay proxy = new S3Relay(s3.endpoint(),
            (b, k) -> admin.deleteObject(d -> d.bucket(b).key(k)))) {
      String prefix = "close-during-upload-" + UUID.randomUUID();
      String root = "s3a://" + SparkS3Harness.BUCKET + "/" + prefix + "/state";
      SQLConf sql = new SQLConf();
      sql.setConfString(StrataConf.PREFIX + "s3.endpoint", proxy.endpoint().toString());
      sql.setConfString(StrataConf.PREFIX + "s3.region", "us-east-1");
      sql.setConfString(StrataConf.PREFIX + "s3.pathStyleAccess", "true");
      sql.setConfString(StrataConf.PREFIX + "s3.accessKeyId", S3ProxyServer.ACCESS_KEY);
      sql.setConfString(StrataConf.PREFIX + "s3.secretAccessKey", S3ProxyServer.SECRET_KEY);
      sql.setConfString(StrataConf.PREFIX + "localDir", tmp.resolve("local").toString());
      sql.setConfString(StrataConf.PREFIX + "snapshotInterval", "1");
      sql.setConfString(StrataConf.PREFIX + "snapshotOnCommit", "false");
      StrataStateStoreProvider a = provider(root, 0, sql);
      StrataStateStoreProvider b = provider(root, 1, sql);
      for (long v = 0; v < 2; v++) {
        StateStore w = SparkApi.getStore(a, v);
        StoreApi.put(w, TestRows.row(TestRows.KEY, (int) v), TestRows.row(TestRows.VALUE, 1));
        w.commit();
      }
      proxy.delayMillis = DELAY_MS;
      proxy.rule(r -> r.isPut() && r.key().contains("/" + StoreLayout.PUBLISHED_SNAPSHOTS)
          ? Fault.DELAY : Fault.NONE);
      Thread maintenance = new Thread(a::doMaintenance, "maintenance-of-a");
      maintenance.start();
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
      while (proxy.injected(Fault.DELAY) == 0 && System.nanoTime() < deadline) {
        Thread.sleep(10);
      }
      assertEquals(1, proxy.injected(Fault.DELAY),
          "the snapshot's upload (its one object) is under way");

      Object sparksLock = new Object(); // StateStore.loadedProviders on Spark 3.5
      long t0 = System.nanoTime();
      Thread unload = new Thread(() -> {
        synchronized (sparksLock) {
          a.close();
        }
      }, "unload-of-a");
      unload.start();
      Thread.sleep(50); // the unload holds the lock first
      long t1 = System.nanoTime();
      synchronized (sparksLock) { // another task's StateStore.get
        StateStore w = SparkApi.getStore(b, 0);
        StoreApi.put(w, TestRows.row(TestRows.KEY, 9), TestRows.row(TestRows.VALUE, 9));
        w.commit();
      }
      long otherMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t1);
      unload.join(10_000);
      long closeMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
      assertTrue(otherMs < DELAY_MS / 2, "another store loaded and committed in " + otherMs
          + " ms while the closed store's upload was delayed " + DELAY_MS + " ms");
      assertTrue(closeMs < DELAY_MS / 2, "close (and the other load) took " + closeMs + " ms");
      assertTrue(storeDirs().size() >= 1, "the closed store's files stay while its upload runs");

      maintenance.join(30_000);
      assertFalse(maintenance.isAlive(), "the upload ended");
      deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
      while (storeDirs().stream().anyMatch(d -> d.getFileName().toString().startsWith("0-0-"))
          && System.nanoTime() < deadline) {
        Thread.sleep(20);
      }
      assertEquals(List.of(), storeDirs().stream()
          .filter(d -> d.getFileName().toString().startsWith("0-0-")).toList(),
          "the close finished once the upload stopped: the store's directory is deleted");
      Path state = s3.dataDir().resolve(SparkS3Harness.BUCKET).resolve(prefix).resolve("state");
      try (Stream<Path> files = Files.walk(state)) {
        assertEquals(1, files.filter(p -> p.toString().endsWith(".bsm")).count(),
            "the upload finished after close and published its snapshot");
      }
      assertEquals(List.of(), RestoreChains.missingPublishedFiles(s3.dataDir(),
          SparkS3Harness.BUCKET, prefix), "every file the published snapshot names exists");
      b.close();
    }
  }

  private StrataStateStoreProvider provider(String root, int partition, SQLConf sql) {
    StrataStateStoreProvider p = new StrataStateStoreProvider();
    StoreApi.init(p, new StateStoreId(root, 0, partition, StateStoreId.DEFAULT_STORE_NAME()),
        TestRows.KEY, TestRows.VALUE, sql, new Configuration());
    return p;
  }

  /** The stores' local directories ({@code <op>-<part>-<name>-<uuid>}) under the local dir. */
  private List<Path> storeDirs() throws java.io.IOException {
    Path base = tmp.resolve("local").resolve("strata");
    if (!Files.exists(base)) {
      return List.of();
    }
    try (Stream<Path> s = Files.walk(base, 2)) {
      return s.filter(Files::isDirectory)
          .filter(p -> p.getFileName().toString().matches("\\d+-\\d+-.*")).toList();
    }
  }
}
