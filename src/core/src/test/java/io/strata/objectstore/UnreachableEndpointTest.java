// SPDX-License-Identifier: Apache-2.0
package io.strata.objectstore;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.config.StrataConf;
import java.net.ServerSocket;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * An endpoint that cannot be reached fails the first request at once (issue 46): with Strata's
 * default settings (10 attempts) a refused connection used to spend about 40 s in the SDK's
 * back-off before any error.
 */
class UnreachableEndpointTest {
  private static final String SECRET = "unreachable-test-secret";

  private static S3ObjectStore store(String endpoint, boolean pathStyle, List<String> attempts) {
    S3Settings s = StrataConf.from(Map.of(
        StrataConf.S3_ENDPOINT.fullKey(), endpoint,
        StrataConf.S3_PATH_STYLE.fullKey(), Boolean.toString(pathStyle),
        StrataConf.S3_ACCESS_KEY.fullKey(), "unreachable-test-key",
        StrataConf.S3_SECRET_KEY.fullKey(), SECRET), Map.of()).s3();
    RequestListener l = r -> attempts.add(r.kind());
    return new S3ObjectStore(SharedS3Clients.lease(s), "strata-nc", "ckpt", l, 1000);
  }

  private static int closedPort() throws Exception {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    }
  }

  @Test
  void aRefusedConnectionFailsAtOnceNamingTheEndpointAndItsSetting() throws Exception {
    String endpoint = "http://127.0.0.1:" + closedPort();
    List<String> attempts = new ArrayList<>();
    try (S3ObjectStore store = store(endpoint, true, attempts)) {
      long t0 = System.nanoTime();
      ObjectStoreException e = assertThrows(ObjectStoreException.class,
          () -> store.head("v/00000000000000000001.svo"));
      long ms = (System.nanoTime() - t0) / 1_000_000;
      System.out.printf("refused endpoint failed after %d ms: %s%n", ms, e.getMessage());
      assertTrue(ms < 5_000, "failed within seconds, not after the SDK's back-off: " + ms
          + " ms");
      assertTrue(e.getMessage().contains(endpoint), e.getMessage());
      assertTrue(e.getMessage().contains("spark.sql.streaming.stateStore.strata.s3.endpoint")
          && e.getMessage().contains("fs.s3a.endpoint"), e.getMessage());
      assertTrue(e.getMessage().contains("refused"), e.getMessage());
      assertFalse(e.retryable(), "a wrong endpoint does not heal");
      assertFalse(e.getMessage().contains(SECRET), "never a secret");
      assertTrue(attempts.size() <= 1, "one attempt, no retries: " + attempts);
    }
  }

  @Test
  void aBucketHostThatDoesNotResolveSuggestsPathStyle() throws Exception {
    // Virtual-hosted style puts the bucket in the host name: strata-nc.s3.invalid (.invalid
    // never resolves, RFC 2606).
    try (S3ObjectStore store = store("http://s3.invalid:" + closedPort(), false,
        new ArrayList<>())) {
      ObjectStoreException e = assertThrows(ObjectStoreException.class,
          () -> store.head("v/00000000000000000001.svo"));
      assertTrue(e.getMessage().contains("strata-nc.s3.invalid")
          && e.getMessage().contains("does not resolve"), e.getMessage());
      assertTrue(e.getMessage().contains("s3.pathStyleAccess=true"), e.getMessage());
      assertFalse(e.retryable());
    }
  }

  /**
   * Once the endpoint has answered, a refused connection is an outage (a server restarting), and
   * the SDK's retries ride it out as before the change (found by a review: failing fast there
   * turned a one-second restart into a failed query).
   */
  @Test
  void afterTheFirstAnswerARefusedConnectionIsRetried() throws Exception {
    int port = closedPort();
    com.sun.net.httpserver.HttpServer first = notFoundServer(port);
    List<String> attempts = new ArrayList<>();
    try (S3ObjectStore store = store("http://127.0.0.1:" + port, true, attempts)) {
      assertTrue(store.head("v/00000000000000000001.svo").isEmpty(), "answered: 404");
      first.stop(0);
      try (RestartLater restart = new RestartLater(port)) {
        assertTrue(store.head("v/00000000000000000002.svo").isEmpty(),
            "the restarted server answered after the SDK's retries");
        assertTrue(attempts.size() >= 3, "retried through the restart: " + attempts);
      }
    }
  }

  /**
   * The same after the client that saw the answer was closed with its last lease and a new one
   * built (an executor whose stores were all unloaded, a query restarted on the driver): the
   * JVM remembers that the endpoint answered (found by a second review).
   */
  @Test
  void aNewClientForAnEndpointThatAnsweredRetriesToo() throws Exception {
    int port = closedPort();
    com.sun.net.httpserver.HttpServer first = notFoundServer(port);
    try (S3ObjectStore store = store("http://127.0.0.1:" + port, true, new ArrayList<>())) {
      assertTrue(store.head("v/00000000000000000001.svo").isEmpty(), "answered: 404");
    }
    first.stop(0);
    try (RestartLater restart = new RestartLater(port);
        S3ObjectStore store = store("http://127.0.0.1:" + port, true, new ArrayList<>())) {
      assertTrue(store.head("v/00000000000000000002.svo").isEmpty(),
          "the new client's request was retried until the restarted server answered");
    }
  }

  /**
   * Starts {@link #notFoundServer} on {@code port} again 700 ms from now (a server restarting);
   * close waits for it and stops it.
   */
  private static final class RestartLater implements AutoCloseable {
    private final java.util.concurrent.atomic.AtomicReference<com.sun.net.httpserver.HttpServer>
        server = new java.util.concurrent.atomic.AtomicReference<>();
    private final Thread thread;

    RestartLater(int port) {
      thread = new Thread(() -> {
        try {
          Thread.sleep(700);
          server.set(notFoundServer(port));
        } catch (Exception e) {
          throw new IllegalStateException(e);
        }
      });
      thread.start();
    }

    @Override
    public void close() throws InterruptedException {
      thread.join();
      if (server.get() != null) {
        server.get().stop(0);
      }
    }
  }

  /**
   * An HTTP server on loopback {@code port} that answers a HEAD of the bucket 200 and every
   * other request 404.
   */
  private static com.sun.net.httpserver.HttpServer notFoundServer(int port) throws Exception {
    com.sun.net.httpserver.HttpServer s = com.sun.net.httpserver.HttpServer.create(
        new java.net.InetSocketAddress(java.net.InetAddress.getLoopbackAddress(), port), 0);
    s.createContext("/", x -> {
      boolean bucket = x.getRequestURI().getPath().replaceAll("/+$", "").equals("/strata-nc");
      x.sendResponseHeaders(bucket ? 200 : 404, -1);
      x.close();
    });
    s.start();
    return s;
  }

  @Test
  void otherIoFailuresKeepTheirRetries() {
    assertTrue(FailFastHttpClient.unreachable(new java.net.UnknownHostException(
        "s3.example: Temporary failure in name resolution")).isEmpty(), "EAI_AGAIN");
    java.io.InterruptedIOException timeout = new java.io.InterruptedIOException("connect timed "
        + "out");
    timeout.initCause(new java.net.ConnectException("Connection timed out"));
    assertTrue(FailFastHttpClient.unreachable(timeout).isEmpty(),
        "a connect timeout over a ConnectException");
    assertTrue(FailFastHttpClient.unreachable(new java.net.SocketException("Connection reset"))
        .isEmpty());
    assertTrue(FailFastHttpClient.unreachable(new java.net.SocketTimeoutException("Read timed "
        + "out")).isEmpty());
    assertTrue(FailFastHttpClient.unreachable(new java.io.IOException("wrapped",
        new java.net.ConnectException("Connection refused"))).isPresent());
  }
}
