// SPDX-License-Identifier: Apache-2.0
package io.strata.bench;

import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.core.ResponseInputStream;
import software.amazon.awssdk.http.apache.ApacheHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.GetObjectRequest;
import software.amazon.awssdk.services.s3.model.GetObjectResponse;

/**
 * The download ceiling a restore is judged against (issue 15): the same objects a restore
 * downloaded, fetched again by plain parallel ranged GETs (AWS SDK v2, {@code Range: bytes=a-b}
 * of at most {@value #RANGE_BYTES} bytes, {@code streams} at a time, the body read and
 * discarded) through the same gateway, so with the same added latency, from the same server on
 * the same machine. Nothing is verified, decoded or written to disk: no restore can be faster.
 * Measured {@value #TRIES} times; the best is the ceiling.
 *
 * <p>Alongside, in alternating tries so that both see the same warm-up, the same GETs grouped
 * the way a query's restores issue them ({@code byStore}): the GETs of one store (one {@code
 * state/<operator>/<partition>/} prefix) on {@code threadsPerStore} streams, {@code
 * concurrentStores} stores at once (a Spark task restores one store, one per task slot), a
 * store done when its last GET is. It is the ceiling of any restore shaped like that: it shows
 * how much of the flat ceiling the shape alone leaves, before any verification or disk write.
 */
final class RangedGetCeiling implements AutoCloseable {
  static final long RANGE_BYTES = 8L << 20;
  static final int TRIES = 3;
  private static final Pattern STORE = Pattern.compile("^.*?/state/\\d+/\\d+/");

  private final String bucket;
  private final int objects;
  private final int streams;
  private final int concurrentStores;
  private final int threadsPerStore;
  private final List<String[]> ranges = new ArrayList<>();
  private final Map<String, List<String[]>> byStore = new TreeMap<>();
  private final long bytes;
  private final List<Long> tries = new ArrayList<>();
  private final List<Long> storeTries = new ArrayList<>();
  private final ExecutorService pool;
  private final ExecutorService storePool;
  private final S3Client s3;

  /**
   * Plans the GETs of {@code keys} and opens the client; nothing is fetched until {@link
   * #tryOnce}.
   *
   * @param endpoint the gateway in front of the S3 server
   * @param bucketDir the bucket's directory in the server's filesystem store (object sizes)
   * @param keys the objects, keys within the bucket
   * @param streams GETs in flight at once
   * @param concurrentStores stores fetched at once in the {@code byStore} tries
   * @param threadsPerStore GETs in flight per store in the {@code byStore} tries
   * @throws IOException if an object's size cannot be read
   */
  RangedGetCeiling(URI endpoint, String bucket, Path bucketDir, List<String> keys, int streams,
      int concurrentStores, int threadsPerStore) throws IOException {
    this.bucket = bucket;
    this.objects = keys.size();
    this.streams = streams;
    this.concurrentStores = concurrentStores;
    this.threadsPerStore = threadsPerStore;
    long total = 0;
    for (String k : keys) {
      long size = Files.size(bucketDir.resolve(k));
      total += size;
      for (long from = 0; from < size; from += RANGE_BYTES) {
        long to = Math.min(size, from + RANGE_BYTES) - 1;
        ranges.add(new String[] {k, "bytes=" + from + "-" + to});
      }
    }
    this.bytes = total;
    // Grouped by store: the key up to its partition directory (state/<operator>/<partition>/).
    for (String[] r : ranges) {
      Matcher m = STORE.matcher(r[0]);
      byStore.computeIfAbsent(m.find() ? m.group() : r[0], k -> new ArrayList<>()).add(r);
    }
    this.pool = Executors.newFixedThreadPool(streams);
    this.storePool = Executors.newFixedThreadPool(concurrentStores);
    this.s3 = S3Client.builder()
        .endpointOverride(endpoint)
        .region(Region.US_EAST_1)
        .forcePathStyle(true)
        .credentialsProvider(StaticCredentialsProvider.create(AwsBasicCredentials.create(
            io.strata.testkit.S3ProxyServer.ACCESS_KEY,
            io.strata.testkit.S3ProxyServer.SECRET_KEY)))
        .httpClientBuilder(ApacheHttpClient.builder()
            .maxConnections(Math.max(streams, concurrentStores * threadsPerStore)))
        .build();
  }

  /**
   * {@value #TRIES} tries in a row of a new ceiling (the parameters are the constructor's), its
   * result.
   *
   * @return {@link #result()}
   * @throws IOException if an object's size cannot be read or a GET fails
   */
  static Map<String, Object> measure(URI endpoint, String bucket, Path bucketDir,
      List<String> keys, int streams, int concurrentStores, int threadsPerStore)
      throws Exception {
    try (RangedGetCeiling c = new RangedGetCeiling(endpoint, bucket, bucketDir, keys, streams,
        concurrentStores, threadsPerStore)) {
      for (int t = 0; t < TRIES; t++) {
        c.tryOnce();
      }
      return c.result();
    }
  }

  /**
   * One try: every GET flat on {@code streams}, then the same GETs grouped by store.
   *
   * @throws IOException if a GET fails or the bytes returned are not the objects' sizes
   */
  void tryOnce() throws Exception {
    long t0 = System.nanoTime();
    tries.add(check(submit(pool, ranges), bytes, t0));
    t0 = System.nanoTime();
    List<Future<Long>> stores = new ArrayList<>();
    for (List<String[]> store : byStore.values()) {
      stores.add(storePool.submit(() -> fetchStore(store, threadsPerStore)));
    }
    storeTries.add(check(stores, bytes, t0));
  }

  /**
   * The tries so far: {@code objects}, {@code bytes}, {@code ranges}, {@code streams}, {@code
   * rangeBytes}, {@code triesMs}, {@code bestMs}, {@code mibPerS} (bytes / best time), {@code
   * mibPerSPerStream} and {@code byStore} ({@code stores}, {@code concurrentStores}, {@code
   * threadsPerStore}, {@code triesMs}, {@code bestMs}, {@code mibPerS}).
   */
  Map<String, Object> result() {
    long best = tries.stream().mapToLong(Long::longValue).min().orElse(0);
    double mibPerS = best == 0 ? 0 : bytes / (1024.0 * 1024.0) / (best / 1000.0);
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("objects", objects);
    out.put("bytes", bytes);
    out.put("ranges", ranges.size());
    out.put("streams", streams);
    out.put("rangeBytes", RANGE_BYTES);
    out.put("triesMs", List.copyOf(tries));
    out.put("bestMs", best);
    out.put("mibPerS", Math.round(mibPerS * 10) / 10.0);
    out.put("mibPerSPerStream", Math.round(mibPerS / streams * 100) / 100.0);
    long storeBest = storeTries.stream().mapToLong(Long::longValue).min().orElse(0);
    Map<String, Object> grouped = new LinkedHashMap<>();
    grouped.put("stores", byStore.size());
    grouped.put("concurrentStores", concurrentStores);
    grouped.put("threadsPerStore", threadsPerStore);
    grouped.put("triesMs", List.copyOf(storeTries));
    grouped.put("bestMs", storeBest);
    grouped.put("mibPerS", storeBest == 0 ? 0
        : Math.round(bytes / (1024.0 * 1024.0) / (storeBest / 1000.0) * 10) / 10.0);
    out.put("byStore", grouped);
    return out;
  }

  @Override
  public void close() {
    pool.shutdownNow();
    storePool.shutdownNow();
    s3.close();
  }

  /** Waits for {@code done}; the elapsed ms since {@code t0}, checking every byte came back. */
  private static long check(List<Future<Long>> done, long bytes, long t0) throws Exception {
    long got = sum(done);
    if (got != bytes) {
      throw new IOException("ranged GETs returned " + got + " bytes, expected " + bytes);
    }
    return (System.nanoTime() - t0) / 1_000_000;
  }

  /** The GETs of {@code ranges} ({@code {key, range}}) submitted to {@code on}. */
  private List<Future<Long>> submit(ExecutorService on, List<String[]> ranges) {
    List<Future<Long>> done = new ArrayList<>();
    for (String[] r : ranges) {
      done.add(on.submit(() -> read(s3, bucket, r[0], r[1])));
    }
    return done;
  }

  /** Waits for every future; the sum of their bytes. */
  private static long sum(List<Future<Long>> done) throws Exception {
    long got = 0;
    for (Future<Long> f : done) {
      got += f.get();
    }
    return got;
  }

  /** One store's GETs on {@code threads} streams of its own; returns their bytes. */
  private long fetchStore(List<String[]> ranges, int threads) throws Exception {
    ExecutorService own = Executors.newFixedThreadPool(threads);
    try {
      return sum(submit(own, ranges));
    } finally {
      own.shutdownNow();
    }
  }

  private static long read(S3Client s3, String bucket, String key, String range)
      throws IOException {
    byte[] buf = new byte[64 * 1024];
    long n = 0;
    try (ResponseInputStream<GetObjectResponse> in = s3.getObject(
        GetObjectRequest.builder().bucket(bucket).key(key).range(range).build())) {
      InputStream s = in;
      for (int r; (r = s.read(buf)) > 0; ) {
        n += r;
      }
    }
    return n;
  }
}
