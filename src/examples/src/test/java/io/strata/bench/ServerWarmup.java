// SPDX-License-Identifier: Apache-2.0
package io.strata.bench;

import java.net.URI;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicLong;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.core.checksums.RequestChecksumCalculation;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.Delete;
import software.amazon.awssdk.services.s3.model.DeleteObjectsRequest;
import software.amazon.awssdk.services.s3.model.NoSuchKeyException;
import software.amazon.awssdk.services.s3.model.ObjectIdentifier;
import software.amazon.awssdk.services.s3.model.S3Exception;

/**
 * Brings the benchmark's S3 server to a steady state before the first measured run: for a fixed
 * time, two threads send it every kind of request the set-ups send (create-only and plain PUTs
 * of commit-sized and MiB-sized bodies, with and without trailing checksums; whole, ranged and
 * missing GETs; HEADs; delimited LISTs; single and multi-object DELETEs), under a scratch prefix
 * that is deleted afterwards.
 *
 * <p>Why: S3Proxy is a JVM. Without this, the set-up that runs first meets a server that is
 * still JIT-compiling its request path (a CPU profile of the server during the first set-up's
 * steady batches had 75 % of its samples in the C2 compiler threads, against 40 % during the
 * second's), and on a 2-core machine that compile work competes with the query and slows every
 * request of whichever set-up happens to be first. A real object store is always warm; every
 * set-up should meet the same warm server.
 */
final class ServerWarmup {
  private ServerWarmup() { }

  /** The prefix the warm-up writes under; nothing else uses it. */
  static final String PREFIX = "server-warmup/";

  /**
   * Sends requests to {@code bucket} on {@code endpoint} for {@code seconds}, then deletes what
   * it wrote.
   *
   * @param endpoint the S3 server, {@code http://host:port}
   * @param accessKey the server's access key
   * @param secretKey the server's secret key
   * @param bucket an existing bucket
   * @param seconds how long to send requests; 0 does nothing
   * @return {@code requests} (count) and {@code ms} (wall time), for the results file
   * @throws Exception if a request fails other than as intended (412 on a taken key, 404 on a
   *     missing one)
   */
  static Map<String, Object> run(URI endpoint, String accessKey, String secretKey, String bucket,
      int seconds) throws Exception {
    Map<String, Object> result = new LinkedHashMap<>();
    if (seconds <= 0) {
      result.put("requests", 0);
      result.put("ms", 0);
      return result;
    }
    long start = System.nanoTime();
    long deadline = start + seconds * 1_000_000_000L;
    AtomicLong requests = new AtomicLong();
    // The set-ups sign chunked bodies without a checksum (Strata, S3A); the SDK's default adds a
    // CRC32 trailer. Warm both of the server's paths.
    List<S3Client> clients = List.of(client(endpoint, accessKey, secretKey, true),
        client(endpoint, accessKey, secretKey, false));
    ExecutorService pool = Executors.newFixedThreadPool(2);
    try {
      List<Future<?>> fs = new ArrayList<>();
      for (int t = 0; t < 2; t++) {
        S3Client c = clients.get(t);
        String prefix = PREFIX + t + "/";
        fs.add(pool.submit(() -> {
          loop(c, bucket, prefix, deadline, requests);
          return null;
        }));
      }
      for (Future<?> f : fs) {
        f.get();
      }
    } finally {
      pool.shutdownNow();
      for (S3Client c : clients) {
        c.close();
      }
    }
    result.put("requests", requests.get());
    result.put("ms", (System.nanoTime() - start) / 1_000_000);
    return result;
  }

  private static void loop(S3Client c, String bucket, String prefix, long deadline,
      AtomicLong requests) {
    Random random = new Random(prefix.hashCode());
    byte[] small = new byte[12_000];
    byte[] large = new byte[2 << 20];
    random.nextBytes(small);
    random.nextBytes(large);
    long round = 0;
    while (System.nanoTime() < deadline) {
      String dir = prefix + "v/" + round + "/";
      String a = dir + "a";
      String b = dir + "b";
      c.putObject(p -> p.bucket(bucket).key(a).ifNoneMatch("*")
          .metadata(Map.of("warmup-id", UUID.randomUUID().toString())),
          RequestBody.fromBytes(small));
      try {
        c.putObject(p -> p.bucket(bucket).key(a).ifNoneMatch("*"), RequestBody.fromBytes(small));
        throw new IllegalStateException("the server let a create-only PUT overwrite " + a);
      } catch (S3Exception e) {
        if (e.statusCode() != 412) {
          throw e;
        }
      }
      c.putObject(p -> p.bucket(bucket).key(b), RequestBody.fromBytes(
          round % 50 == 0 ? large : small));
      c.getObjectAsBytes(g -> g.bucket(bucket).key(a));
      c.getObjectAsBytes(g -> g.bucket(bucket).key(b).range("bytes=100-4195"));
      c.getObjectAsBytes(g -> g.bucket(bucket).key(b).range("bytes=-64"));
      c.headObject(h -> h.bucket(bucket).key(a));
      try {
        c.headObject(h -> h.bucket(bucket).key(dir + "missing"));
      } catch (NoSuchKeyException e) {
        // expected
      } catch (S3Exception e) {
        if (e.statusCode() != 404) {
          throw e;
        }
      }
      c.listObjectsV2(l -> l.bucket(bucket).prefix(dir).delimiter("/"));
      c.listObjectsV2(l -> l.bucket(bucket).prefix(prefix + "v/").delimiter("/").maxKeys(20));
      if (round % 2 == 0) {
        c.deleteObject(d -> d.bucket(bucket).key(a));
        c.deleteObject(d -> d.bucket(bucket).key(b));
      } else {
        c.deleteObjects(DeleteObjectsRequest.builder().bucket(bucket).delete(Delete.builder()
            .objects(ObjectIdentifier.builder().key(a).build(),
                ObjectIdentifier.builder().key(b).build()).build()).build());
      }
      requests.addAndGet(round % 2 == 0 ? 12 : 11);
      round++;
    }
  }

  private static S3Client client(URI endpoint, String accessKey, String secretKey,
      boolean checksumOnlyWhenRequired) {
    return S3Client.builder()
        .endpointOverride(endpoint)
        .region(Region.US_EAST_1)
        .forcePathStyle(true)
        .requestChecksumCalculation(checksumOnlyWhenRequired
            ? RequestChecksumCalculation.WHEN_REQUIRED : RequestChecksumCalculation.WHEN_SUPPORTED)
        .credentialsProvider(
            StaticCredentialsProvider.create(AwsBasicCredentials.create(accessKey, secretKey)))
        .build();
  }
}
