// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.regex.Pattern;

/**
 * A loopback HTTP relay in front of an S3-compatible server that records every request (method
 * and target) without changing a byte, so the requests of any S3 client (Strata's SDK client,
 * Hadoop S3A) can be counted the same way. Path-style addressing only. Parses just enough
 * HTTP/1.1 to find where each request ends (Content-Length or chunked bodies); responses are
 * copied as they come.
 */
final class CountingProxy implements AutoCloseable {
  /** One request: when its headers arrived, its method and its decoded object key or prefix. */
  record Request(long nanos, String method, String key, boolean list, boolean copy) {
    /** The S3 operation kind as Strata counts it (approximate for S3A's multipart calls). */
    String kind() {
      return switch (method) {
        case "PUT" -> copy ? "COPY" : "PUT";
        case "HEAD" -> "HEAD";
        case "DELETE" -> "DELETE";
        case "POST" -> key.isEmpty() ? "DELETE" : "POST"; // DeleteObjects is POST /bucket?delete
        default -> list ? "LIST" : "GET";
      };
    }
  }

  /** Keys of a state store's own objects: state/op/partition/..., except Spark's _metadata. */
  private static final Pattern STATE_STORE =
      Pattern.compile(".*(^|/)state/\\d+/\\d+(/(?!_metadata(/|$)).*|/?)$");

  private final ServerSocket server;
  private final String upstreamHost;
  private final int upstreamPort;
  private final List<Request> requests = new CopyOnWriteArrayList<>();
  private volatile boolean closed;

  CountingProxy(URI upstream) throws IOException {
    this.upstreamHost = upstream.getHost();
    this.upstreamPort = upstream.getPort();
    this.server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    Thread accept = new Thread(this::acceptLoop, "counting-proxy-accept");
    accept.setDaemon(true);
    accept.start();
  }

  URI endpoint() {
    return URI.create("http://127.0.0.1:" + server.getLocalPort());
  }

  List<Request> requests() {
    return requests;
  }

  /** True for objects a state store writes itself (not Spark's checkpoint files). */
  static boolean isStateStoreKey(String key) {
    return STATE_STORE.matcher(key).matches();
  }

  private void acceptLoop() {
    while (!closed) {
      try {
        Socket client = server.accept();
        Socket up = new Socket(upstreamHost, upstreamPort);
        client.setTcpNoDelay(true);
        up.setTcpNoDelay(true);
        start(() -> relayRequests(client, up), "counting-proxy-c2u");
        start(() -> copy(up, client), "counting-proxy-u2c");
      } catch (IOException e) {
        if (!closed) {
          System.err.println("counting proxy: " + e);
        }
      }
    }
  }

  private static void start(Runnable r, String name) {
    Thread t = new Thread(r, name);
    t.setDaemon(true);
    t.start();
  }

  private static void copy(Socket from, Socket to) {
    try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
      in.transferTo(out);
    } catch (IOException e) {
      // connection closed by either side
    } finally {
      closeQuietly(from);
      closeQuietly(to);
    }
  }

  private void relayRequests(Socket client, Socket up) {
    try (InputStream raw = client.getInputStream();
        OutputStream out = new BufferedOutputStream(up.getOutputStream(), 64 * 1024)) {
      BufferedInputStream in = new BufferedInputStream(raw, 64 * 1024);
      while (true) {
        String requestLine = line(in, out);
        if (requestLine == null) {
          return;
        }
        if (requestLine.isEmpty()) {
          continue;
        }
        long contentLength = 0;
        boolean chunked = false;
        boolean copy = false;
        String header;
        while ((header = line(in, out)) != null && !header.isEmpty()) {
          String h = header.toLowerCase(Locale.ROOT);
          if (h.startsWith("content-length:")) {
            contentLength = Long.parseLong(h.substring(15).trim());
          } else if (h.startsWith("transfer-encoding:") && h.contains("chunked")) {
            chunked = true;
          } else if (h.startsWith("x-amz-copy-source:")) {
            copy = true;
          }
        }
        record(requestLine, copy);
        out.flush();
        if (chunked) {
          while (true) {
            String size = line(in, out);
            long n = Long.parseLong(size.split(";")[0].trim(), 16);
            if (n == 0) {
              String trailer;
              while ((trailer = line(in, out)) != null && !trailer.isEmpty()) {
                // trailers pass through
              }
              break;
            }
            copyBytes(in, out, n);
            line(in, out); // CRLF after the chunk
          }
        } else {
          copyBytes(in, out, contentLength);
        }
        out.flush();
      }
    } catch (IOException e) {
      // connection closed by either side
    } finally {
      closeQuietly(client);
      closeQuietly(up);
    }
  }

  private void record(String requestLine, boolean copy) {
    String[] parts = requestLine.split(" ");
    String method = parts[0];
    String target = parts.length > 1 ? parts[1] : "/";
    String path = target;
    String query = "";
    int q = target.indexOf('?');
    if (q >= 0) {
      path = target.substring(0, q);
      query = target.substring(q + 1);
    }
    String decoded = URLDecoder.decode(path, StandardCharsets.UTF_8);
    String noBucket = decoded.replaceFirst("^/[^/]*/?", "");
    boolean list = false;
    if (method.equals("GET") && noBucket.isEmpty() && query.contains("list-type")) {
      list = true;
      for (String kv : query.split("&")) {
        if (kv.startsWith("prefix=")) {
          noBucket = URLDecoder.decode(kv.substring(7), StandardCharsets.UTF_8);
        }
      }
    }
    requests.add(new Request(System.nanoTime(), method, noBucket, list, copy));
  }

  /** Reads one CRLF-terminated line, forwarding its bytes; null at end of stream. */
  private static String line(InputStream in, OutputStream out) throws IOException {
    ByteArrayOutputStream buf = new ByteArrayOutputStream(128);
    int b;
    while ((b = in.read()) >= 0) {
      out.write(b);
      if (b == '\n') {
        byte[] bytes = buf.toByteArray();
        int len = bytes.length > 0 && bytes[bytes.length - 1] == '\r' ? bytes.length - 1
            : bytes.length;
        return new String(bytes, 0, len, StandardCharsets.ISO_8859_1);
      }
      buf.write(b);
    }
    return buf.size() == 0 ? null : buf.toString(StandardCharsets.ISO_8859_1);
  }

  private static void copyBytes(InputStream in, OutputStream out, long n) throws IOException {
    byte[] buf = new byte[64 * 1024];
    long left = n;
    while (left > 0) {
      int r = in.read(buf, 0, (int) Math.min(buf.length, left));
      if (r < 0) {
        throw new IOException("request body ended early");
      }
      out.write(buf, 0, r);
      left -= r;
    }
  }

  private static void closeQuietly(Socket s) {
    try {
      s.close();
    } catch (IOException e) {
      // nothing to do
    }
  }

  @Override
  public void close() throws IOException {
    closed = true;
    server.close();
  }
}
