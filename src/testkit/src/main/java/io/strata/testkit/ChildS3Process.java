// SPDX-License-Identifier: Apache-2.0
package io.strata.testkit;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.core.exception.SdkException;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.BucketAlreadyOwnedByYouException;

/**
 * What {@link S3ProxyServer} and {@link S3MockServer} share: a server's child JVM, its log file
 * and the shutdown hook that stops it if the test JVM exits without closing it, finding the
 * server's jar, and an SDK client for the server.
 */
final class ChildS3Process {
  private final String name;
  private final Process process;
  private final Path logFile;
  /** Stops the child if this JVM exits without {@link #close()} (Ctrl-C, System.exit). */
  private final Thread shutdownHook;

  /**
   * Watches a started child.
   *
   * @param name the server's name for messages and the hook's thread, e.g. {@code S3Proxy}
   */
  ChildS3Process(String name, Process process, int port, Path logFile) {
    this.name = name;
    this.process = process;
    this.logFile = logFile;
    this.shutdownHook = new Thread(process::destroy, name.toLowerCase() + "-shutdown-" + port);
    Runtime.getRuntime().addShutdownHook(shutdownHook);
  }

  /**
   * Fails if the child has exited, with its exit code and the tail of its log.
   *
   * @throws IOException if the process is no longer alive
   */
  void checkAlive() throws IOException {
    if (!process.isAlive()) {
      throw new IOException("Cannot start " + name + ": process exited with "
          + process.exitValue() + "; log " + logFile + ":\n" + logTail());
    }
  }

  /** An error saying the server did not come up, with the tail of its log; stops the child. */
  IOException notReady(String what) {
    close();
    return new IOException("Cannot start " + name + ": " + what + "; log " + logFile + ":\n"
        + logTail());
  }

  /** Stops the process and waits up to 10 s for it to exit. Idempotent. */
  void close() {
    try {
      Runtime.getRuntime().removeShutdownHook(shutdownHook);
    } catch (IllegalStateException shuttingDown) {
      // the hook runs or has run
    }
    process.destroy();
    try {
      if (!process.waitFor(10, TimeUnit.SECONDS)) {
        process.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private String logTail() {
    try (InputStream in = Files.newInputStream(logFile)) {
      String s = new String(in.readAllBytes(), StandardCharsets.UTF_8);
      return s.length() > 4000 ? s.substring(s.length() - 4000) : s;
    } catch (IOException e) {
      return "(no log: " + e.getMessage() + ")";
    }
  }

  /**
   * The first existing file of {@code candidates}, absolute.
   *
   * @param what the jar and how to get it, for the message
   * @throws IOException naming every candidate if none exists
   */
  static Path locateJar(List<Path> candidates, String what) throws IOException {
    for (Path c : candidates) {
      if (Files.isRegularFile(c)) {
        return c.toAbsolutePath();
      }
    }
    throw new IOException("Cannot find the " + what + ": looked at " + candidates);
  }

  /** A free TCP port on loopback (free when asked; the child binds it a moment later). */
  static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      return s.getLocalPort();
    }
  }

  /** A plain SDK client (path-style, us-east-1); the caller closes it. */
  static S3Client client(URI endpoint, String accessKey, String secretKey) {
    return S3Client.builder()
        .endpointOverride(endpoint)
        .region(Region.US_EAST_1)
        .forcePathStyle(true)
        .credentialsProvider(
            StaticCredentialsProvider.create(AwsBasicCredentials.create(accessKey, secretKey)))
        .build();
  }

  /**
   * Creates {@code bucket} with {@code s3} if it does not exist.
   *
   * @throws UncheckedIOException wrapping the SDK failure if the bucket cannot be created
   */
  static void createBucket(S3TestServer server, String bucket) {
    try (S3Client s3 = server.client()) {
      s3.createBucket(b -> b.bucket(bucket));
    } catch (BucketAlreadyOwnedByYouException exists) {
      // fine
    } catch (SdkException e) {
      throw new UncheckedIOException(
          new IOException("Cannot create bucket " + bucket + " on " + server.endpoint(), e));
    }
  }
}
