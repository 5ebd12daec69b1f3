// SPDX-License-Identifier: Apache-2.0
package io.strata.testkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The HTTP framing {@link S3Relay} gets from Netty's codec, against a stub server (the fault
 * kinds run against S3Proxy in the core and Spark fault tests): HEAD answers, chunked and
 * 100-continue uploads, answers that end with the connection, and what it records.
 */
class S3RelayTest {
  private HttpServer stub;
  private final List<String> bodies = new CopyOnWriteArrayList<>();
  private S3Relay relay;

  @BeforeEach
  void start() throws IOException {
    stub = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    stub.createContext("/", ex -> {
      byte[] in = ex.getRequestBody().readAllBytes();
      bodies.add(new String(in, StandardCharsets.UTF_8));
      byte[] out = ("echo:" + in.length).getBytes(StandardCharsets.UTF_8);
      ex.getResponseHeaders().add("x-amz-meta-kept", "yes");
      if (ex.getRequestMethod().equals("HEAD")) {
        ex.getResponseHeaders().add("Content-Length", "1234");
        ex.sendResponseHeaders(200, -1);
      } else {
        ex.sendResponseHeaders(200, out.length);
        ex.getResponseBody().write(out);
      }
      ex.close();
    });
    stub.start();
    relay = new S3Relay(URI.create("http://127.0.0.1:" + stub.getAddress().getPort()), null);
  }

  @AfterEach
  void stop() throws IOException {
    relay.close();
    stub.stop(0);
  }

  private static HttpClient client() {
    return HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
        .connectTimeout(Duration.ofSeconds(5)).build();
  }

  @Test
  void headThenChunkedAndContinuedUploadsOnOneConnectionAreRelayedAndRecorded()
      throws Exception {
    HttpClient c = client();
    URI base = relay.endpoint().resolve("/bucket/dir/key%2Bplus");
    HttpResponse<String> head = c.send(HttpRequest.newBuilder(base)
        .method("HEAD", HttpRequest.BodyPublishers.noBody()).build(),
        HttpResponse.BodyHandlers.ofString());
    assertEquals(200, head.statusCode());
    assertEquals("1234", head.headers().firstValue("content-length").orElse(""));
    // Unknown length: the JDK client sends it chunked.
    byte[] body = "x".repeat(200_000).getBytes(StandardCharsets.UTF_8);
    HttpResponse<String> chunked = c.send(HttpRequest.newBuilder(base)
        .PUT(HttpRequest.BodyPublishers.ofInputStream(
            () -> new java.io.ByteArrayInputStream(body))).build(),
        HttpResponse.BodyHandlers.ofString());
    assertEquals("echo:200000", chunked.body());
    HttpResponse<String> continued = c.send(HttpRequest.newBuilder(base).expectContinue(true)
        .header("If-None-Match", "*").header("x-amz-decoded-content-length", "5")
        .PUT(HttpRequest.BodyPublishers.ofString("hello")).build(),
        HttpResponse.BodyHandlers.ofString());
    assertEquals("echo:5", continued.body());
    assertEquals("yes", continued.headers().firstValue("x-amz-meta-kept").orElse(""));
    assertEquals(List.of("", "x".repeat(200_000), "hello"), bodies);
    List<S3Relay.Seen> seen = relay.seen();
    assertEquals(3, seen.size());
    S3Relay.Request put = seen.get(2).request();
    assertEquals(List.of("bucket", "dir/key+plus", true, true, 5L),
        List.of(put.bucket(), put.key(), put.conditional(), put.expectContinue(),
            put.payloadBytes()));
    assertTrue(put.isPut());
  }

  @Test
  void aKeptServerConnectionCarriesTheNextRequests() throws Exception {
    relay.reuseUpstream(true);
    HttpClient c = client();
    for (int i = 0; i < 3; i++) {
      HttpResponse<String> r = c.send(HttpRequest.newBuilder(relay.endpoint().resolve("/b/k" + i))
          .PUT(HttpRequest.BodyPublishers.ofString("v" + i)).build(),
          HttpResponse.BodyHandlers.ofString());
      assertEquals("echo:2", r.body());
    }
    assertEquals(List.of("v0", "v1", "v2"), bodies);
  }

  @Test
  void dropMetadataRemovesOnlyUserMetadataFromTheAnswer() throws Exception {
    relay.rule(r -> S3Relay.Fault.DROP_METADATA);
    HttpResponse<String> r = client().send(HttpRequest.newBuilder(
        relay.endpoint().resolve("/bucket/k")).GET().build(), HttpResponse.BodyHandlers.ofString());
    assertEquals("echo:0", r.body());
    assertTrue(r.headers().firstValue("x-amz-meta-kept").isEmpty(), r.headers().toString());
  }

  @Test
  void anAnswerThatEndsWithTheConnectionEndsTheClientsConnectionToo() throws Exception {
    try (ServerSocket raw = new ServerSocket(0, 5, InetAddress.getLoopbackAddress());
        S3Relay closing = new S3Relay(URI.create("http://127.0.0.1:" + raw.getLocalPort()),
            null)) {
      Thread server = new Thread(() -> {
        try (Socket s = raw.accept()) {
          InputStream in = s.getInputStream();
          ByteArrayOutputStream head = new ByteArrayOutputStream();
          while (!head.toString(StandardCharsets.ISO_8859_1).endsWith("\r\n\r\n")) {
            head.write(in.read());
          }
          s.getOutputStream().write(("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n"
              + "until the end").getBytes(StandardCharsets.ISO_8859_1));
        } catch (IOException e) {
          // the test fails on what the client reads
        }
      });
      server.start();
      try (Socket client = new Socket("127.0.0.1", closing.endpoint().getPort())) {
        client.setSoTimeout(10_000);
        OutputStream out = client.getOutputStream();
        out.write("GET /bucket/k HTTP/1.1\r\nHost: x\r\n\r\n".getBytes(StandardCharsets.ISO_8859_1));
        out.flush();
        String all = new String(client.getInputStream().readAllBytes(),
            StandardCharsets.ISO_8859_1);
        assertTrue(all.startsWith("HTTP/1.1 200 OK") && all.endsWith("until the end"), all);
      }
      server.join(10_000);
    }
  }
}
