// SPDX-License-Identifier: Apache-2.0
package io.strata.bench;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A loopback HTTP/1.1 forwarder in front of the S3-compatible server that records every S3
 * request a client sends through it and adds a per-kind latency before forwarding it. It is the
 * one source of request counts for every provider in the end-to-end benchmark: Strata's AWS SDK
 * client and Spark's Hadoop S3A client both point their endpoint at {@link #endpoint()}.
 *
 * <p>Requests are forwarded byte for byte (the {@code Host} header included, so SigV4 signatures
 * stay valid); responses are piped back unparsed. Requests are parsed only as far as needed to
 * find their end ({@code Content-Length} or chunked transfer encoding) and their kind:
 *
 * <ul>
 *   <li>{@link S3Kind#PUT}: PutObject, UploadPart, CreateMultipartUpload and
 *       CompleteMultipartUpload (POST), CreateBucket;
 *   <li>{@link S3Kind#COPY}: a PUT with {@code x-amz-copy-source} (CopyObject, UploadPartCopy;
 *       an S3A rename is a COPY plus a DELETE);
 *   <li>{@link S3Kind#GET}: GET of an object (ranged or not);
 *   <li>{@link S3Kind#LIST}: GET of a bucket (ListObjects v1/v2, ListMultipartUploads);
 *   <li>{@link S3Kind#HEAD}: HeadObject, HeadBucket;
 *   <li>{@link S3Kind#DELETE}: DeleteObject, and DeleteObjects (a POST {@code ?delete}) as one.
 * </ul>
 *
 * <p>Each request is recorded with the wall-clock time its head arrived (ms since the epoch),
 * whether its key (for a listing: its {@code prefix}) lies under a checkpoint's {@code state/}
 * directory ({@link S3Request#state()}), and the payload bytes it uploads ({@code
 * x-amz-decoded-content-length} for the SDK's aws-chunked uploads, else {@code Content-Length}).
 * HTTP clients here do not pipeline, so requests on one connection are sequential.
 */
final class S3Gateway implements AutoCloseable {
  private static final int MAX_HEAD_BYTES = 64 * 1024;

  private final InetSocketAddress upstream;
  private final LatencyProfile latency;
  private final ServerSocket server;
  private final Thread acceptor;
  private final AtomicBoolean closed = new AtomicBoolean();
  private final Set<Socket> open = ConcurrentHashMap.newKeySet();
  private final Object lock = new Object();
  private final List<S3Request> requests = new ArrayList<>(); // guarded by lock

  /**
   * Starts forwarding from a free loopback port to {@code upstream}.
   *
   * @param upstream the S3-compatible server, {@code http://host:port}
   * @param latency latency added before each request is forwarded, by kind
   * @throws IOException if no loopback port can be bound
   */
  S3Gateway(URI upstream, LatencyProfile latency) throws IOException {
    if (!"http".equals(upstream.getScheme()) || upstream.getPort() < 0) {
      throw new IllegalArgumentException("upstream must be http://host:port, was " + upstream);
    }
    this.upstream = new InetSocketAddress(upstream.getHost(), upstream.getPort());
    this.latency = latency;
    this.server = new ServerSocket(0, 200, InetAddress.getLoopbackAddress());
    this.acceptor = new Thread(this::acceptLoop, "s3-gateway-accept-" + server.getLocalPort());
    acceptor.setDaemon(true);
    acceptor.start();
  }

  /** The endpoint clients use, {@code http://127.0.0.1:<port>}. */
  URI endpoint() {
    return URI.create("http://127.0.0.1:" + server.getLocalPort());
  }

  /** A copy of every request recorded so far, in arrival order. */
  List<S3Request> requests() {
    synchronized (lock) {
      return new ArrayList<>(requests);
    }
  }

  /** Stops accepting and closes every open connection. Idempotent. */
  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    try {
      server.close();
    } catch (IOException ignored) {
      // closing
    }
    for (Socket s : open) {
      closeQuietly(s);
    }
  }

  private void acceptLoop() {
    while (!closed.get()) {
      Socket client;
      try {
        client = server.accept();
      } catch (IOException e) {
        return; // closed
      }
      Thread t = new Thread(() -> serve(client), "s3-gateway-conn");
      t.setDaemon(true);
      t.start();
    }
  }

  /** One client connection: forward its requests one by one; a second thread pipes responses. */
  private void serve(Socket client) {
    open.add(client);
    Socket up = new Socket();
    open.add(up);
    try {
      client.setTcpNoDelay(true);
      up.setTcpNoDelay(true);
      up.connect(upstream, 10_000);
      InputStream upIn = up.getInputStream();
      OutputStream clientOut = client.getOutputStream();
      Thread pipe = new Thread(() -> pipe(upIn, clientOut, client, up), "s3-gateway-pipe");
      pipe.setDaemon(true);
      pipe.start();
      InputStream in = new BufferedInputStream(client.getInputStream(), 64 * 1024);
      OutputStream upOut = up.getOutputStream();
      while (true) {
        byte[] head = readHead(in);
        if (head == null) {
          break; // client closed the connection
        }
        RequestHead h = RequestHead.parse(head);
        S3Request r = h.classify(System.currentTimeMillis());
        synchronized (lock) {
          requests.add(r);
        }
        long delay = latency.millis(r.kind());
        if (delay > 0) {
          Thread.sleep(delay);
        }
        upOut.write(head);
        if (h.chunked) {
          copyChunked(in, upOut);
        } else if (h.contentLength > 0) {
          copyExactly(in, upOut, h.contentLength);
        }
        upOut.flush();
      }
    } catch (IOException | InterruptedException e) {
      // a peer went away or we are closing; the client sees a closed connection and retries
    } finally {
      closeQuietly(client);
      closeQuietly(up);
      open.remove(client);
      open.remove(up);
    }
  }

  private static void pipe(InputStream from, OutputStream to, Socket a, Socket b) {
    byte[] buf = new byte[64 * 1024];
    try {
      int n;
      while ((n = from.read(buf)) >= 0) {
        to.write(buf, 0, n);
        to.flush();
      }
    } catch (IOException e) {
      // connection closed
    } finally {
      closeQuietly(a);
      closeQuietly(b);
    }
  }

  /** Reads up to and including the blank line ending a request head; null at a clean EOF. */
  private static byte[] readHead(InputStream in) throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream(1024);
    int matched = 0; // progress through \r\n\r\n
    while (true) {
      int c = in.read();
      if (c < 0) {
        if (out.size() == 0) {
          return null;
        }
        throw new IOException("connection closed inside a request head");
      }
      out.write(c);
      if (out.size() > MAX_HEAD_BYTES) {
        throw new IOException("request head longer than " + MAX_HEAD_BYTES + " bytes");
      }
      if ((c == '\r' && (matched == 0 || matched == 2)) || (c == '\n' && (matched == 1
          || matched == 3))) {
        matched++;
        if (matched == 4) {
          return out.toByteArray();
        }
      } else {
        matched = c == '\r' ? 1 : 0;
      }
    }
  }

  private static void copyExactly(InputStream in, OutputStream out, long n) throws IOException {
    byte[] buf = new byte[64 * 1024];
    long left = n;
    while (left > 0) {
      int r = in.read(buf, 0, (int) Math.min(buf.length, left));
      if (r < 0) {
        throw new IOException("connection closed inside a request body");
      }
      out.write(buf, 0, r);
      left -= r;
    }
  }

  /** Forwards a chunked body: size lines, chunk data, the last chunk and its trailers. */
  private static void copyChunked(InputStream in, OutputStream out) throws IOException {
    while (true) {
      String sizeLine = readLine(in, out);
      int semi = sizeLine.indexOf(';');
      long size = Long.parseLong((semi >= 0 ? sizeLine.substring(0, semi) : sizeLine).trim(), 16);
      if (size == 0) {
        while (!readLine(in, out).isEmpty()) {
          // trailer fields
        }
        return;
      }
      copyExactly(in, out, size);
      readLine(in, out); // CRLF after the data
    }
  }

  /** Reads one CRLF-terminated line, forwarding its bytes; returns it without the CRLF. */
  private static String readLine(InputStream in, OutputStream out) throws IOException {
    StringBuilder sb = new StringBuilder();
    while (true) {
      int c = in.read();
      if (c < 0) {
        throw new IOException("connection closed inside a chunked body");
      }
      out.write(c);
      if (c == '\n') {
        int len = sb.length();
        return len > 0 && sb.charAt(len - 1) == '\r' ? sb.substring(0, len - 1) : sb.toString();
      }
      sb.append((char) c);
    }
  }

  private static void closeQuietly(Socket s) {
    try {
      s.close();
    } catch (IOException ignored) {
      // closing
    }
  }

  /** The parts of a request head the gateway needs. */
  private record RequestHead(String method, String path, String query, boolean copySource,
      long contentLength, long decodedLength, boolean chunked) {

    static RequestHead parse(byte[] head) throws IOException {
      String text = new String(head, StandardCharsets.ISO_8859_1);
      String[] lines = text.split("\r\n");
      String[] first = lines[0].split(" ");
      if (first.length < 3) {
        throw new IOException("not an HTTP request line: " + lines[0]);
      }
      String target = first[1];
      int q = target.indexOf('?');
      String path = q >= 0 ? target.substring(0, q) : target;
      String query = q >= 0 ? target.substring(q + 1) : "";
      boolean copy = false;
      boolean chunked = false;
      long length = 0;
      long decoded = -1;
      for (int i = 1; i < lines.length; i++) {
        int colon = lines[i].indexOf(':');
        if (colon <= 0) {
          continue;
        }
        String name = lines[i].substring(0, colon).trim().toLowerCase(Locale.ROOT);
        String value = lines[i].substring(colon + 1).trim();
        switch (name) {
          case "x-amz-copy-source" -> copy = true;
          case "content-length" -> length = Long.parseLong(value);
          case "x-amz-decoded-content-length" -> decoded = Long.parseLong(value);
          case "transfer-encoding" -> chunked = value.toLowerCase(Locale.ROOT).contains("chunked");
          default -> { }
        }
      }
      return new RequestHead(first[0].toUpperCase(Locale.ROOT), path, query, copy, length,
          decoded, chunked);
    }

    S3Request classify(long timeMs) {
      String p = decode(path.startsWith("/") ? path.substring(1) : path);
      int slash = p.indexOf('/');
      String key = slash >= 0 ? p.substring(slash + 1) : "";
      boolean hasKey = !key.isEmpty();
      S3Kind kind = switch (method) {
        case "HEAD" -> S3Kind.HEAD;
        case "GET" -> hasKey ? S3Kind.GET : S3Kind.LIST;
        case "PUT" -> copySource ? S3Kind.COPY : S3Kind.PUT;
        case "DELETE" -> S3Kind.DELETE;
        case "POST" -> hasParam("delete") ? S3Kind.DELETE : S3Kind.PUT;
        default -> S3Kind.GET;
      };
      String scopeKey = kind == S3Kind.LIST ? param("prefix") : key;
      long bytes = kind == S3Kind.PUT ? (decodedLength >= 0 ? decodedLength : contentLength) : 0;
      return new S3Request(timeMs, kind, isStateKey(scopeKey), bytes,
          scopeKey == null ? "" : scopeKey);
    }

    private boolean hasParam(String name) {
      for (String kv : query.split("&")) {
        if (kv.equals(name) || kv.startsWith(name + "=")) {
          return true;
        }
      }
      return false;
    }

    private String param(String name) {
      for (String kv : query.split("&")) {
        if (kv.startsWith(name + "=")) {
          return decode(kv.substring(name.length() + 1));
        }
      }
      return "";
    }

    private static String decode(String s) {
      try {
        return URLDecoder.decode(s.replace("+", "%2B"), StandardCharsets.UTF_8);
      } catch (IllegalArgumentException e) {
        return s;
      }
    }
  }

  /** Whether an object key (or listing prefix) is under a checkpoint's {@code state/} dir. */
  static boolean isStateKey(String key) {
    return key.startsWith("state/") || key.contains("/state/") || key.endsWith("/state");
  }

  /** For tests of the classifier: the request a raw head would be recorded as. */
  static S3Request classifyForTest(String head) throws IOException {
    return RequestHead.parse(head.getBytes(StandardCharsets.ISO_8859_1)).classify(0);
  }
}
