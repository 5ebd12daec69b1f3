// SPDX-License-Identifier: Apache-2.0
package io.strata.testkit;

import java.io.IOException;
import java.net.HttpURLConnection;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * Adobe's S3Mock 4.11.0 (a Spring Boot application with its own file store, an S3 implementation
 * independent of S3Proxy's) run as a separate JVM on a free loopback port: the second real S3
 * server the behaviour tests run against. It supports conditional writes ({@code If-None-Match:
 * *} answers 412 on an existing key), ranged and suffix reads, delimited and paginated listings,
 * multi-object delete, multipart uploads and SSE headers; it accepts any credentials (no
 * signature check).
 *
 * <p>The endpoint is Spring Boot's connector on 127.0.0.1 (TLS off). S3Mock always opens a second
 * plain-HTTP connector too, on every interface (it has no setting to bind or disable it), here on
 * another free port: a test-only server holding test data, reachable from the network while
 * it runs.
 *
 * <p>The jar is found at the system property {@code strata.s3mock.jar}, then {@code
 * target/s3mock/s3mock.jar}, then the local Maven repository. The build fetches it from Maven
 * Central ({@code com.adobe.testing:s3mock:4.11.0:jar:exec}).
 */
public final class S3MockServer implements S3TestServer {
  private static final String VERSION = "4.11.0";
  /** S3Mock checks no signature; these keys only make requests well-formed. */
  private static final String ACCESS_KEY = "strata-s3mock";
  private static final String SECRET_KEY = "strata-s3mock-secret";

  private final ChildS3Process child;
  private final int port;

  private S3MockServer(Process process, int port, Path logFile) {
    this.child = new ChildS3Process("S3Mock", process, port, logFile);
    this.port = port;
  }

  /**
   * Starts a server whose objects live under {@code dataDir} and waits until it answers a
   * ListBuckets (about 5 s).
   *
   * @param dataDir the server's store root; created if missing
   * @throws IOException if the jar is missing, the process cannot start, or it does not answer
   *     within 90 s (the message includes the tail of its log)
   */
  public static S3MockServer start(Path dataDir) throws IOException {
    Path jar = locateJar();
    Files.createDirectories(dataDir);
    int port = ChildS3Process.freePort();
    int extraPort = ChildS3Process.freePort();
    Path log = dataDir.resolveSibling(dataDir.getFileName() + "-s3mock.log");
    List<String> cmd = new ArrayList<>(List.of(
        Paths.get(System.getProperty("java.home"), "bin", "java").toString(),
        "-Xmx512m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-jar", jar.toString(),
        // The endpoint: Spring Boot's connector, plain HTTP, on loopback.
        "--server.address=127.0.0.1",
        "--server.ssl.enabled=false",
        "--server.port=" + port,
        // S3Mock's own second connector cannot be turned off and binds every interface; a free
        // port keeps it from clashing (its default is 9090). Nothing here uses it.
        "--com.adobe.testing.s3mock.http-port=" + extraPort,
        "--com.adobe.testing.s3mock.store.root=" + dataDir.toAbsolutePath(),
        "--com.adobe.testing.s3mock.store.retain-files-on-exit=true",
        "--logging.level.root=WARN",
        "--spring.main.banner-mode=off"));
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile())
        .start();
    S3MockServer server = new S3MockServer(p, port, log);
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
    while (System.nanoTime() < deadline) {
      server.child.checkAlive();
      if (server.answers()) {
        return server;
      }
      try {
        sleep(200);
      } catch (IOException interrupted) {
        server.close();
        throw interrupted;
      }
    }
    throw server.child.notReady("no answer on port " + port + " after 90 s");
  }

  private boolean answers() {
    try {
      HttpURLConnection c = (HttpURLConnection) endpoint().toURL().openConnection();
      c.setConnectTimeout(500);
      c.setReadTimeout(2000);
      try {
        return c.getResponseCode() == 200;
      } finally {
        c.disconnect();
      }
    } catch (IOException notYet) {
      return false;
    }
  }

  @Override
  public Kind kind() {
    return Kind.S3MOCK;
  }

  @Override
  public URI endpoint() {
    return URI.create("http://127.0.0.1:" + port);
  }

  @Override
  public String accessKey() {
    return ACCESS_KEY;
  }

  @Override
  public String secretKey() {
    return SECRET_KEY;
  }

  /** S3Mock accepts any signature. */
  @Override
  public boolean verifiesSignatures() {
    return false;
  }

  /** S3Mock stores {@code x-amz-server-side-encryption} and returns it on GET and HEAD. */
  @Override
  public boolean supportsServerSideEncryption() {
    return true;
  }

  /**
   * S3Mock 4.11 checks {@code If-None-Match: *} against what is stored, but not atomically: of
   * writers racing to create one key, more than one may get 200, the later overwriting.
   */
  @Override
  public boolean atomicCreateOnly() {
    return false;
  }

  @Override
  public void createBucket(String bucket) {
    ChildS3Process.createBucket(this, bucket);
  }

  @Override
  public S3Client client() {
    return ChildS3Process.client(endpoint(), ACCESS_KEY, SECRET_KEY);
  }

  /** Stops the process and waits up to 10 s for it to exit. Idempotent. */
  @Override
  public void close() {
    child.close();
  }

  /** Finds the S3Mock executable jar; see the class comment for the search order. */
  static Path locateJar() throws IOException {
    List<Path> candidates = new ArrayList<>();
    String prop = System.getProperty("strata.s3mock.jar");
    if (prop != null && !prop.isBlank()) {
      candidates.add(Paths.get(prop));
    }
    candidates.add(Paths.get("target", "s3mock", "s3mock.jar"));
    candidates.add(Paths.get(System.getProperty("user.home"), ".m2", "repository", "com",
        "adobe", "testing", "s3mock", VERSION, "s3mock-" + VERSION + "-exec.jar"));
    return ChildS3Process.locateJar(candidates, "S3Mock jar (run 'mvn generate-test-resources',"
        + " which fetches com.adobe.testing:s3mock:" + VERSION + ":jar:exec, or set "
        + "-Dstrata.s3mock.jar=<path>)");
  }

  private static void sleep(long ms) throws IOException {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new java.io.InterruptedIOException("interrupted while S3Mock starts");
    }
  }
}
