// SPDX-License-Identifier: Apache-2.0
package io.strata.bench;

import io.strata.objectstore.ObjectBody;
import io.strata.objectstore.ObjectStore;
import io.strata.objectstore.ObjectStores;
import io.strata.objectstore.RequestListener;
import io.strata.objectstore.S3Settings;
import io.strata.objectstore.S3WriteSettings;
import io.strata.testkit.S3ProxyServer;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The cost of one PUT as Strata's commit makes it, against S3Proxy on loopback without added
 * latency: {@link ObjectStore#putIfAbsent} (a create-only PUT: {@code If-None-Match: *} and a
 * put-id metadata header) or a plain {@link ObjectStore#put}, with the AWS SDK's CRC32 payload
 * checksum on or off ({@code s3.payloadChecksums}), for a body of {@code bodyBytes} bytes (60 kB
 * is about one partition's version object for 1,250 updated keys; 600 kB for ten times more).
 * Reports the average time per PUT, ms. Each PUT writes a new key, so the server's directory
 * grows by one file per operation; the trial's S3Proxy data directory is deleted at the end.
 */
@State(Scope.Benchmark)
@Fork(1)
@Warmup(iterations = 2, time = 5)
@Measurement(iterations = 5, time = 5)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
public class PutBenchmark {
  @Param({"false", "true"})
  public boolean payloadChecksums;

  @Param({"true", "false"})
  public boolean createOnly;

  @Param({"60000", "600000"})
  public int bodyBytes;

  private Path dir;
  private S3ProxyServer server;
  private ObjectStore objects;
  private ObjectBody body;
  private long next;

  /**
   * Starts S3Proxy and opens Strata's object store on it.
   *
   * @throws IOException if the server cannot start
   */
  @Setup(Level.Trial)
  public void open() throws IOException {
    dir = Files.createTempDirectory("strata-put-bench");
    server = S3ProxyServer.start(dir.resolve("s3"), Map.of());
    server.createBucket("bench");
    S3Settings s3 = new S3Settings(Optional.of(server.endpoint()), "us-east-1", true,
        Optional.of(S3ProxyServer.ACCESS_KEY), Optional.of(S3ProxyServer.SECRET_KEY),
        Optional.empty(), 3, Duration.ofSeconds(30), Duration.ofSeconds(10), 8)
        .withWrites(new S3WriteSettings("none", Optional.empty(), Optional.empty(),
            payloadChecksums));
    objects = ObjectStores.open("s3://bench/put", s3, RequestListener.NONE);
    byte[] bytes = new byte[bodyBytes];
    new Random(42).nextBytes(bytes);
    body = ObjectBody.of(bytes);
  }

  /**
   * One PUT of a new key.
   *
   * @throws IOException if the PUT fails
   */
  @Benchmark
  public void put() throws IOException {
    String key = "o/" + (next++);
    if (createOnly) {
      objects.putIfAbsent(key, body);
    } else {
      objects.put(key, body);
    }
  }

  /** Closes the store and the server and deletes the server's data. */
  @TearDown(Level.Trial)
  public void close() throws IOException {
    objects.close();
    server.close();
    try (var paths = Files.walk(dir)) {
      paths.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    }
  }
}
