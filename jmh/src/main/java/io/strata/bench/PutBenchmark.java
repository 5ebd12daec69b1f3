// SPDX-License-Identifier: Apache-2.0
package io.strata.bench;

import io.strata.objectstore.ObjectBody;
import io.strata.objectstore.ObjectStore;
import io.strata.objectstore.ObjectStores;
import io.strata.objectstore.RequestListener;
import io.strata.objectstore.S3Settings;
import io.strata.objectstore.S3WriteSettings;
import io.strata.testkit.S3ProxyServer;
import io.strata.testkit.S3Relay;
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
 * The cost of one PUT as Strata's commit makes it, against S3Proxy on loopback:
 * {@link ObjectStore#putIfAbsent} (a create-only PUT: {@code If-None-Match: *} and a
 * put-id metadata header) or a plain {@link ObjectStore#put}, with the AWS SDK's CRC32 payload
 * checksum on or off ({@code s3.payloadChecksums}), for a body of {@code bodyBytes} random bytes
 * (60 kB and 600 kB by default; a partition's version object for 1,250 updated keys is about
 * 12 kB, docs/benchmarks.md, "The bytes of a commit"). With {@code addedLatencyMs} above 0 the
 * PUTs go through testkit's {@link S3Relay}, which waits that long before forwarding each one, as
 * the end-to-end benchmark's gateway does (its {@code s3-like} profile adds 30 ms to a PUT).
 * Reports the time per PUT, ms. Each PUT writes a new key, so the server's directory grows by
 * one file per operation; the trial's S3Proxy data directory is deleted at the end.
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

  /** Latency added before each PUT is forwarded, ms; 0: no relay, straight to S3Proxy. */
  @Param({"0"})
  public int addedLatencyMs;

  private Path dir;
  private S3ProxyServer server;
  private S3Relay relay;
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
    java.net.URI endpoint = server.endpoint();
    if (addedLatencyMs > 0) {
      relay = new S3Relay(endpoint, null);
      relay.reuseUpstream(true); // one server connection per client connection, as the bench's
      relay.latency(r -> r.isPut() ? addedLatencyMs : 0);
      endpoint = relay.endpoint();
    }
    S3Settings s3 = new S3Settings(Optional.of(endpoint), "us-east-1", true,
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
    if (relay != null) {
      relay.close();
    }
    server.close();
    try (var paths = Files.walk(dir)) {
      paths.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    }
  }
}
