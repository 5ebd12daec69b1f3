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
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
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
 */
final class RangedGetCeiling {
  static final long RANGE_BYTES = 8L << 20;
  static final int TRIES = 3;

  private RangedGetCeiling() { }

  /**
   * @param endpoint the gateway in front of the S3 server
   * @param bucketDir the bucket's directory in the server's filesystem store (object sizes)
   * @param keys the objects, keys within the bucket
   * @param streams GETs in flight at once
   * @return {@code objects}, {@code bytes}, {@code ranges}, {@code streams}, {@code rangeBytes},
   *     {@code triesMs}, {@code bestMs}, {@code mibPerS} (bytes / best time) and {@code
   *     mibPerSPerStream}
   * @throws IOException if an object's size cannot be read or a GET fails
   */
  static Map<String, Object> measure(URI endpoint, String bucket, Path bucketDir,
      List<String> keys, int streams) throws Exception {
    List<String[]> ranges = new ArrayList<>();
    long bytes = 0;
    for (String k : keys) {
      long size = Files.size(bucketDir.resolve(k));
      bytes += size;
      for (long from = 0; from < size; from += RANGE_BYTES) {
        long to = Math.min(size, from + RANGE_BYTES) - 1;
        ranges.add(new String[] {k, "bytes=" + from + "-" + to});
      }
    }
    List<Long> tries = new ArrayList<>();
    ExecutorService pool = Executors.newFixedThreadPool(streams);
    try (S3Client s3 = S3Client.builder()
        .endpointOverride(endpoint)
        .region(Region.US_EAST_1)
        .forcePathStyle(true)
        .credentialsProvider(StaticCredentialsProvider.create(AwsBasicCredentials.create(
            io.strata.testkit.S3ProxyServer.ACCESS_KEY,
            io.strata.testkit.S3ProxyServer.SECRET_KEY)))
        .httpClientBuilder(ApacheHttpClient.builder().maxConnections(streams))
        .build()) {
      for (int t = 0; t < TRIES; t++) {
        long t0 = System.nanoTime();
        List<Future<Long>> done = new ArrayList<>();
        for (String[] r : ranges) {
          done.add(pool.submit(() -> read(s3, bucket, r[0], r[1])));
        }
        long got = 0;
        for (Future<Long> f : done) {
          got += f.get();
        }
        tries.add((System.nanoTime() - t0) / 1_000_000);
        if (got != bytes) {
          throw new IOException("ranged GETs returned " + got + " bytes, expected " + bytes);
        }
      }
    } finally {
      pool.shutdownNow();
    }
    long best = tries.stream().mapToLong(Long::longValue).min().orElse(0);
    double mibPerS = best == 0 ? 0 : bytes / (1024.0 * 1024.0) / (best / 1000.0);
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("objects", keys.size());
    out.put("bytes", bytes);
    out.put("ranges", ranges.size());
    out.put("streams", streams);
    out.put("rangeBytes", RANGE_BYTES);
    out.put("triesMs", tries);
    out.put("bestMs", best);
    out.put("mibPerS", Math.round(mibPerS * 10) / 10.0);
    out.put("mibPerSPerStream", Math.round(mibPerS / streams * 100) / 100.0);
    return out;
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
