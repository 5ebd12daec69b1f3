// SPDX-License-Identifier: Apache-2.0
package io.strata.bench;

import io.strata.testkit.S3ProxyServer;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Random;
import java.util.UUID;
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
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.core.checksums.RequestChecksumCalculation;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.http.apache5.Apache5HttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.S3Configuration;

/**
 * A question about what remains of a commit's PUT time, not a product path: the same
 * create-only PUT as Strata's commit ({@code If-None-Match: *}, a put-id metadata header, no
 * payload checksum, a 60 kB body) made with a plain AWS SDK S3 client, with the SDK's {@code
 * Expect: 100-continue} handshake on (the SDK's default, and Strata's) or off ({@code
 * S3Configuration.expectContinueEnabled(false)}). With it on, the client sends the headers,
 * waits for the server's {@code 100 Continue}, then sends the body. Against S3Proxy on
 * loopback without added latency; average time per PUT, ms.
 */
@State(Scope.Benchmark)
@Fork(1)
@Warmup(iterations = 2, time = 5)
@Measurement(iterations = 5, time = 5)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
public class RawPutBenchmark {
  @Param({"true", "false"})
  public boolean expectContinue;

  @Param({"60000"})
  public int bodyBytes;

  private Path dir;
  private S3ProxyServer server;
  private S3Client s3;
  private byte[] body;

  /**
   * Starts S3Proxy and builds the client.
   *
   * @throws IOException if the server cannot start
   */
  @Setup(Level.Trial)
  public void open() throws IOException {
    dir = Files.createTempDirectory("strata-raw-put-bench");
    server = S3ProxyServer.start(dir.resolve("s3"), Map.of());
    server.createBucket("bench");
    s3 = S3Client.builder().endpointOverride(server.endpoint()).region(Region.US_EAST_1)
        .forcePathStyle(true)
        .credentialsProvider(StaticCredentialsProvider.create(AwsBasicCredentials.create(
            S3ProxyServer.ACCESS_KEY, S3ProxyServer.SECRET_KEY)))
        .requestChecksumCalculation(RequestChecksumCalculation.WHEN_REQUIRED)
        .serviceConfiguration(S3Configuration.builder()
            .expectContinueEnabled(expectContinue).build())
        .httpClientBuilder(Apache5HttpClient.builder().maxConnections(8))
        .build();
    body = new byte[bodyBytes];
    new Random(42).nextBytes(body);
  }

  /** One create-only PUT of a new key. */
  @Benchmark
  public void put() {
    s3.putObject(b -> b.bucket("bench").key("o/" + UUID.randomUUID()).ifNoneMatch("*")
        .metadata(Map.of("strata-put-id", UUID.randomUUID().toString()))
        .contentLength((long) body.length), RequestBody.fromBytes(body));
  }

  /** Closes the client and the server and deletes the server's data. */
  @TearDown(Level.Trial)
  public void close() throws IOException {
    s3.close();
    server.close();
    try (var paths = Files.walk(dir)) {
      paths.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    }
  }
}
