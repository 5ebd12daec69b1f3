// SPDX-License-Identifier: Apache-2.0
package io.strata.bench;

import io.strata.config.StrataConf;
import io.strata.engine.SharedMemory;
import io.strata.metrics.RestoreStats;
import io.strata.objectstore.ObjectStore;
import io.strata.objectstore.ObjectStores;
import io.strata.objectstore.S3Settings;
import io.strata.sync.GcSettings;
import io.strata.sync.StoreIdentity;
import io.strata.sync.StoreSettings;
import io.strata.sync.SyncedStore;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * Strata's restore path on its own (issue 15's download-rate goal, separated from the query): a
 * run's stores restored again by {@link SyncedStore#load} (read-only, so nothing is written to
 * the checkpoint) into fresh local directories, {@code concurrent} stores at once with
 * Strata's default {@link E2ERun#TRANSFER_THREADS} transfer threads each, through the same
 * gateway, after the run's queries stopped: no Spark task, ingest of another store or query
 * work shares the 2 cores with the downloads, which in the query's own restore batch they do.
 * Measured {@value #TRIES} times like {@link RangedGetCeiling}, its tries alternating with the
 * ceiling's so that both see the server equally warm, and both are judged on their best (first
 * and best are both reported). The download rate is the query's formula: bytes over
 * the stores' {@code downloadMs} (GETs and checksum verification) summed and divided by the
 * stores restoring at once.
 */
final class RestoreAlone implements AutoCloseable {
  static final int TRIES = 5;

  private final String checkpoint;
  private final int partitions;
  private final long version;
  private final int concurrent;
  private final Path work;
  private final S3Settings s3;
  private final StoreSettings settings;
  private final ExecutorService pool;
  private final ObjectStore warm;
  private final List<Map<String, Object>> tries = new ArrayList<>();

  /**
   * Opens the client the restores share; nothing is restored until {@link #tryOnce}.
   *
   * @param endpoint the gateway in front of the S3 server
   * @param checkpoint the query's checkpoint location ({@code s3a://bucket/prefix/ckpt})
   * @param partitions the shuffle partitions (stores of operator 0, store {@code default})
   * @param version the version to restore (the query's last committed one)
   * @param concurrent stores restoring at once
   * @param work a scratch directory (each try's local directories are deleted after it)
   */
  RestoreAlone(URI endpoint, String checkpoint, int partitions, long version, int concurrent,
      Path work) {
    this.checkpoint = checkpoint;
    this.partitions = partitions;
    this.version = version;
    this.concurrent = concurrent;
    this.work = work;
    String p = StrataConf.PREFIX;
    this.s3 = StrataConf.from(Map.of(
        p + "s3.endpoint", endpoint.toString(),
        p + "s3.region", "us-east-1",
        p + "s3.pathStyleAccess", "true",
        p + "s3.accessKeyId", io.strata.testkit.S3ProxyServer.ACCESS_KEY,
        p + "s3.secretAccessKey", io.strata.testkit.S3ProxyServer.SECRET_KEY), Map.of()).s3();
    this.settings = new StoreSettings(10, E2ERun.TRANSFER_THREADS, 64L << 20, false,
        SharedMemory.Limits.DEFAULT, new GcSettings(false, 100, 10, 600_000L))
        // Under a query run of its own, as Spark 4.x runs every store (a read-only load lists
        // runs/ and claims nothing), so the load reads what the query's loads read.
        .withRun(java.util.UUID.randomUUID().toString());
    this.pool = Executors.newFixedThreadPool(concurrent);
    // Held for the whole measurement, as a query's open stores hold it: every store's restore
    // uses the one JVM-wide client for these settings, its connections already open after the
    // first try, instead of a new client whenever no store happens to be open.
    this.warm = ObjectStores.open(checkpoint, s3, null);
  }

  /**
   * One try: every store restored, {@code concurrent} at once.
   *
   * @return the try ({@code bytes}, {@code files}, {@code deltas}, {@code downloadMsSum},
   *     {@code restoreMsSum}, {@code wallMs}, {@code mibPerS}, {@code startMs}, {@code endMs})
   * @throws Exception if a load fails (a {@code StateLoadException} naming store and version)
   */
  Map<String, Object> tryOnce() throws Exception {
    Path dir = Files.createDirectories(work.resolve("restore-alone-" + tries.size()));
    long t0 = System.nanoTime();
    long startMs = System.currentTimeMillis();
    List<Future<RestoreStats>> done = new ArrayList<>();
    for (int part = 0; part < partitions; part++) {
      int partition = part;
      done.add(pool.submit(() -> restore(checkpoint + "/state/0/" + partition, partition,
          s3, settings, version, dir.resolve("p" + partition))));
    }
    long bytes = 0;
    long downloadMs = 0;
    long restoreMs = 0;
    long deltas = 0;
    long files = 0;
    for (Future<RestoreStats> f : done) {
      RestoreStats s = f.get();
      bytes += s.bytesDownloaded();
      downloadMs += s.downloadMs();
      restoreMs += s.restoreMs();
      deltas += s.deltasReplayed();
      files += s.filesDownloaded();
    }
    long wallMs = (System.nanoTime() - t0) / 1_000_000;
    Map<String, Object> one = new LinkedHashMap<>();
    one.put("bytes", bytes);
    one.put("files", files);
    one.put("deltas", deltas);
    one.put("downloadMsSum", downloadMs);
    one.put("restoreMsSum", restoreMs);
    one.put("wallMs", wallMs);
    one.put("mibPerS", round(rate(bytes, downloadMs, concurrent)));
    one.put("startMs", startMs);
    one.put("endMs", System.currentTimeMillis());
    tries.add(one);
    E2ERun.deleteRecursively(dir);
    return one;
  }

  /**
   * The tries so far: {@code version}, {@code stores}, {@code concurrent}, {@code
   * transferThreads}, {@code tries}, {@code firstMibPerS}, {@code bestMibPerS}.
   */
  Map<String, Object> result() {
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("version", version);
    out.put("stores", partitions);
    out.put("concurrent", concurrent);
    out.put("transferThreads", E2ERun.TRANSFER_THREADS);
    out.put("tries", List.copyOf(tries));
    out.put("firstMibPerS", tries.get(0).get("mibPerS"));
    out.put("bestMibPerS", tries.stream().mapToDouble(m -> (Double) m.get("mibPerS")).max()
        .orElse(0));
    return out;
  }

  @Override
  public void close() throws Exception {
    pool.shutdownNow();
    warm.close();
  }

  private static RestoreStats restore(String location, int partition, S3Settings s3,
      StoreSettings settings, long version, Path local) throws Exception {
    StoreIdentity id = new StoreIdentity(0, partition, "default", location);
    try (SyncedStore store = new SyncedStore(id, ObjectStores.open(location, s3, null), local,
        settings, "", "")) {
      store.load(version, Optional.empty(), true);
      return store.lastRestore();
    }
  }

  /** MiB/s of {@code bytes} over {@code msSum} summed over stores, {@code concurrent} at once. */
  static double rate(long bytes, long msSum, int concurrent) {
    double ms = Math.max(1, (double) msSum / concurrent);
    return bytes / (1024.0 * 1024.0) / (ms / 1000.0);
  }

  private static double round(double v) {
    return Math.round(v * 10) / 10.0;
  }
}
