// SPDX-License-Identifier: Apache-2.0
package io.strata.testkit;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * An S3-compatible server (S3Proxy 4.1.0, filesystem store) run as a separate JVM on a free
 * loopback port, for the demo, tests and benchmarks. S3Proxy must not share a JVM with Spark
 * (their Jetty/servlet versions clash), hence the child process.
 *
 * <p>The jar is found at the system property {@code strata.s3proxy.jar}, then {@code
 * target/s3proxy/s3proxy.jar}, then the local Maven repository. The build fetches it from Maven
 * Central ({@code org.gaul:s3proxy:4.1.0:jar-with-dependencies}).
 *
 * <p>Latency injection (S3Proxy's latency middleware) is configured by passing properties such
 * as {@code s3proxy.latency-blobstore.put.latency=30} (milliseconds) in {@code extraProperties}.
 */
public final class S3ProxyServer implements S3TestServer {
  /** The access key id the server accepts (SigV2/SigV4 are verified). */
  public static final String ACCESS_KEY = "strata-test";
  /** The secret key the server accepts. Test-only credentials. */
  public static final String SECRET_KEY = "strata-test-secret";

  private static final String VERSION = "4.1.0";

  private final ChildS3Process child;
  private final int port;
  private final Path dataDir;

  private S3ProxyServer(Process process, int port, Path dataDir, Path logFile) {
    this.child = new ChildS3Process("S3Proxy", process, port, logFile);
    this.port = port;
    this.dataDir = dataDir;
  }

  /**
   * Starts a server whose objects live under {@code dataDir} and waits until it accepts
   * connections (about 1 s).
   *
   * @param dataDir directory for the filesystem blob store; created if missing
   * @param extraProperties extra S3Proxy properties (for example latency settings); may be empty
   * @throws IOException if the jar is missing, the process cannot start, or it is not ready
   *     within 60 s (the message includes the tail of its log)
   */
  public static S3ProxyServer start(Path dataDir, Map<String, String> extraProperties)
      throws IOException {
    return start(dataDir, extraProperties, freePort());
  }

  /**
   * As {@link #start(Path, Map)} on a given loopback port, for example to start a server again
   * on a stopped one's port and objects with other credentials ({@code s3proxy.identity} and
   * {@code s3proxy.credential} in {@code extraProperties} replace {@link #ACCESS_KEY} and {@link
   * #SECRET_KEY}), as a key rotation does.
   *
   * @param port a free TCP port on 127.0.0.1
   * @throws IOException as {@link #start(Path, Map)}
   */
  public static S3ProxyServer start(Path dataDir, Map<String, String> extraProperties, int port)
      throws IOException {
    Path jar = locateJar();
    Files.createDirectories(dataDir);
    Map<String, String> props = new LinkedHashMap<>();
    props.put("s3proxy.endpoint", "http://127.0.0.1:" + port);
    props.put("s3proxy.authorization", "aws-v2-or-v4");
    props.put("s3proxy.identity", ACCESS_KEY);
    props.put("s3proxy.credential", SECRET_KEY);
    props.put("jclouds.provider", "filesystem");
    props.put("jclouds.filesystem.basedir", dataDir.toAbsolutePath().toString());
    props.putAll(extraProperties);
    Path conf = dataDir.resolveSibling(dataDir.getFileName() + "-s3proxy.conf");
    StringBuilder sb = new StringBuilder();
    props.forEach((k, v) -> sb.append(k).append('=').append(v).append('\n'));
    Files.writeString(conf, sb.toString(), StandardCharsets.UTF_8);
    Path log = dataDir.resolveSibling(dataDir.getFileName() + "-s3proxy.log");

    List<String> cmd = new ArrayList<>();
    cmd.add(Paths.get(System.getProperty("java.home"), "bin", "java").toString());
    cmd.add("-Xmx512m");
    // A test server: C1 only and the serial collector start it with less CPU (as ChildJvm).
    cmd.add("-XX:TieredStopAtLevel=1");
    cmd.add("-XX:+UseSerialGC");
    cmd.add("-jar");
    cmd.add(jar.toString());
    cmd.add("--properties");
    cmd.add(conf.toString());
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true)
        .redirectOutput(log.toFile());
    pb.environment().put("LOG_LEVEL", "warn");
    pb.environment().put("JETTY_LOG_LEVEL", "warn");
    Process p = pb.start();
    S3ProxyServer server = new S3ProxyServer(p, port, dataDir, log);
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (System.nanoTime() < deadline) {
      server.child.checkAlive();
      try (Socket s = new Socket()) {
        s.connect(new InetSocketAddress("127.0.0.1", port), 200);
        return server;
      } catch (IOException notYet) {
        try {
          sleep(100);
        } catch (IllegalStateException interrupted) {
          server.close();
          throw interrupted;
        }
      }
    }
    throw server.child.notReady("not listening on port " + port + " after 60 s");
  }

  @Override
  public Kind kind() {
    return Kind.S3PROXY;
  }

  @Override
  public String accessKey() {
    return ACCESS_KEY;
  }

  @Override
  public String secretKey() {
    return SECRET_KEY;
  }

  /** S3Proxy verifies SigV2 and SigV4 signatures. */
  @Override
  public boolean verifiesSignatures() {
    return true;
  }

  /** S3Proxy's filesystem store answers 501 NotImplemented to an encryption header. */
  @Override
  public boolean supportsServerSideEncryption() {
    return false;
  }

  /** The endpoint, {@code http://127.0.0.1:<port>}. */
  @Override
  public URI endpoint() {
    return URI.create("http://127.0.0.1:" + port);
  }

  /** The TCP port on loopback. */
  public int port() {
    return port;
  }

  /** The directory holding the stored objects ({@code <dataDir>/<bucket>/<key>}). */
  public Path dataDir() {
    return dataDir;
  }

  /** S3Proxy serialises create-only writes of a key: of racing writers exactly one wins. */
  @Override
  public boolean atomicCreateOnly() {
    return true;
  }

  /**
   * Creates {@code bucket} if it does not exist (S3Proxy does not create buckets on demand, nor
   * does S3A).
   *
   * @throws UncheckedIOException wrapping the SDK failure if the bucket cannot be created
   */
  @Override
  public void createBucket(String bucket) {
    ChildS3Process.createBucket(this, bucket);
  }

  /** A plain SDK client for this server (path-style, us-east-1); the caller closes it. */
  @Override
  public S3Client client() {
    return ChildS3Process.client(endpoint(), ACCESS_KEY, SECRET_KEY);
  }

  /** Stops the process and waits up to 10 s for it to exit. Idempotent. */
  @Override
  public void close() {
    child.close();
  }

  /** Finds the S3Proxy fat jar; see the class comment for the search order. */
  static Path locateJar() throws IOException {
    List<Path> candidates = new ArrayList<>();
    String prop = System.getProperty("strata.s3proxy.jar");
    if (prop != null && !prop.isBlank()) {
      candidates.add(Paths.get(prop));
    }
    candidates.add(Paths.get("target", "s3proxy", "s3proxy.jar"));
    candidates.add(Paths.get(System.getProperty("user.home"), ".m2", "repository", "org", "gaul",
        "s3proxy", VERSION, "s3proxy-" + VERSION + "-jar-with-dependencies.jar"));
    return ChildS3Process.locateJar(candidates, "S3Proxy jar (run 'mvn generate-test-resources',"
        + " which fetches org.gaul:s3proxy:" + VERSION + ":jar-with-dependencies, or set "
        + "-Dstrata.s3proxy.jar=<path>)");
  }

  static int freePort() throws IOException {
    return ChildS3Process.freePort();
  }

  private static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while waiting for S3Proxy", e);
    }
  }
}
