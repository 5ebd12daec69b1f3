// SPDX-License-Identifier: Apache-2.0
package io.strata.testkit;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiConsumer;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A fault-injecting HTTP relay on loopback in front of a real S3-compatible server (S3Proxy): it
 * forwards each request to the server unchanged unless its {@linkplain #rule(Function) rule}
 * picks a {@link Fault} for it. Path-style addressing, HTTP/1.1 without pipelining (what the AWS
 * SDK's Apache client and S3A send); parses just enough of each request and response to find
 * where they end (Content-Length, chunked bodies, {@code Expect: 100-continue}).
 *
 * <p>Faults never replace the server: an error or a reset is answered before the request
 * reaches it (the server never sees it); an ambiguous failure and a lost write let the server
 * apply the request first. Every connection that saw a fault is closed ({@code Connection:
 * close}), so the client opens a new one for its retry.
 *
 * <p>Besides per-request faults it has a {@linkplain #lag(long) lag mode}: a store whose reads
 * and listings lag behind its writes (a new object is hidden from GET, HEAD and LIST for a while
 * after its PUT), as some S3-compatible stores are.
 */
public final class FaultProxy implements AutoCloseable {
  /** What happens to one request. */
  public enum Fault {
    /** Forwarded unchanged. */
    NONE,
    /** Answered 503 SlowDown (S3's throttling answer) without reaching the server. */
    SLOW_DOWN,
    /** Answered 500 InternalError without reaching the server. */
    INTERNAL_ERROR,
    /** The connection is reset (TCP RST) as soon as the request's headers arrive. */
    RESET,
    /**
     * Forwarded and applied by the server, then the answer is dropped: the connection stays
     * silent for {@link #holdMillis} ms and is then closed (a client timeout shorter than that
     * sees a timeout, a longer one a closed connection). The ambiguous case of a write.
     */
    APPLY_THEN_DROP,
    /**
     * A PUT is forwarded, the server's 200 is passed on, but the object is deleted (through the
     * {@linkplain FaultProxy#FaultProxy(URI, BiConsumer) deleter}) before the client sees the
     * answer: the write is lost. Other methods are forwarded unchanged.
     */
    LOSE_WRITE,
    /** Forwarded after a delay of {@link #delayMillis} ms. */
    DELAY,
    /**
     * A server that ignores conditional writes: a PUT carrying {@code If-None-Match} succeeds
     * (200) and replaces any object at its key, as if the header were absent. Done by deleting
     * the object first (through the {@linkplain FaultProxy#FaultProxy(URI, BiConsumer)
     * deleter}), then forwarding the request unchanged: the header itself cannot be removed,
     * since the client signs it (SigV4) and the server would refuse the request. Other requests
     * are forwarded unchanged.
     */
    IGNORE_CONDITIONAL,
    /** Answered 403 AccessDenied without reaching the server (a missing IAM permission). */
    ACCESS_DENIED,
    /**
     * A server that does not keep user metadata: forwarded unchanged, but every {@code
     * x-amz-meta-*} header is removed from the answer (as if the server had dropped them on the
     * PUT; request headers cannot be removed, the client signs them).
     */
    DROP_METADATA
  }

  /**
   * One request as the rule sees it.
   *
   * @param method HTTP method
   * @param bucket bucket (first path segment), "" for the service
   * @param key decoded object key (without the bucket), "" for bucket-level requests
   * @param query raw query string, "" if none
   * @param conditional true if it carries {@code If-None-Match}
   * @param expectContinue true if it carries {@code Expect: 100-continue} (its body then waits
   *     for the server's {@code 100 Continue})
   * @param securityToken its {@code x-amz-security-token} (the session token of temporary
   *     credentials), "" if none: tells which credentials source signed it
   */
  public record Request(String method, String bucket, String key, String query,
      boolean conditional, boolean expectContinue, String securityToken) {
    /** True for a PUT of an object (not a part upload or a copy). */
    public boolean isPut() {
      return method.equals("PUT") && !key.isEmpty() && !query.contains("partNumber");
    }
  }

  /** A request and the fault it got. */
  public record Seen(Request request, Fault fault) { }

  private final ServerSocket server;
  private final String upstreamHost;
  private final int upstreamPort;
  private final BiConsumer<String, String> deleter;
  private final List<Seen> seen = new CopyOnWriteArrayList<>();
  private final Map<Fault, AtomicInteger> injected = new EnumMap<>(Fault.class);
  private volatile Function<Request, Fault> rule = r -> Fault.NONE;
  /** See {@link Fault#APPLY_THEN_DROP}, ms. */
  public volatile long holdMillis = 0;
  /** See {@link Fault#DELAY}, ms. */
  public volatile long delayMillis = 2_000;
  /** See {@link #lag(long)}, ms; 0 for none. */
  private volatile long lagMillis = 0;
  /** Objects hidden by the lag mode: "bucket/key" to the {@code System.nanoTime()} it shows. */
  private final Map<String, Long> hiddenUntil = new ConcurrentHashMap<>();
  private final AtomicInteger lagged = new AtomicInteger();
  private volatile boolean closed;

  /**
   * A relay to {@code upstream} on a free loopback port.
   *
   * @param deleter deletes (bucket, key) on the server; used by {@link Fault#LOSE_WRITE}, may be
   *     null if that fault is never used
   */
  public FaultProxy(URI upstream, BiConsumer<String, String> deleter) throws IOException {
    this.upstreamHost = upstream.getHost();
    this.upstreamPort = upstream.getPort();
    this.deleter = deleter;
    for (Fault f : Fault.values()) {
      injected.put(f, new AtomicInteger());
    }
    this.server = new ServerSocket(0, 100, InetAddress.getLoopbackAddress());
    Thread accept = new Thread(this::acceptLoop, "fault-proxy-accept");
    accept.setDaemon(true);
    accept.start();
  }

  /** The endpoint clients use instead of the server's. */
  public URI endpoint() {
    return URI.create("http://127.0.0.1:" + server.getLocalPort());
  }

  /** Sets the rule that picks each request's fault (thread-safe; applies to new requests). */
  public void rule(Function<Request, Fault> rule) {
    this.rule = rule;
  }

  /**
   * Lag mode: for {@code millis} ms after a successful PUT of an object through this relay, a GET
   * or HEAD of it is answered 404 NoSuchKey (without reaching the server) and listings ({@code
   * GET /bucket?...}) leave it out of their {@code <Contents>}; the server has it all along, so a
   * create-only PUT of it meets it (412). A DELETE through the relay ends the hiding of its key.
   * Common prefixes of a delimited listing are left as the server lists them. Applies to requests
   * whose rule gives {@link Fault#NONE}; {@code 0} turns it off (objects already hidden stay
   * hidden until their time is up). Thread-safe.
   *
   * @param millis how long a new object stays hidden, ms
   */
  public void lag(long millis) {
    this.lagMillis = millis;
  }

  /** How many answers the lag mode changed: GETs and HEADs answered 404, listings filtered. */
  public int lagged() {
    return lagged.get();
  }

  /** True if the lag mode hides (bucket, key) now. */
  private boolean hidden(String bucket, String key) {
    Long until = hiddenUntil.get(bucket + "/" + key);
    if (until == null) {
      return false;
    }
    if (System.nanoTime() - until >= 0) {
      hiddenUntil.remove(bucket + "/" + key, until);
      return false;
    }
    return true;
  }

  /** Forward everything again. */
  public void heal() {
    rule(r -> Fault.NONE);
  }

  /**
   * A rule giving {@code share} (0..1) of the requests one of {@code faults}, chosen at random
   * with a fixed seed; the rest pass.
   */
  public static Function<Request, Fault> randomShare(double share, long seed, Fault... faults) {
    Random random = new Random(seed);
    return r -> {
      synchronized (random) {
        return random.nextDouble() < share ? faults[random.nextInt(faults.length)] : Fault.NONE;
      }
    };
  }

  /**
   * Every request this relay saw so far, in arrival order, with its fault: an immutable copy
   * taken now, so a caller may take a {@code subList} of it while background uploads go on
   * through the relay.
   */
  public List<Seen> seen() {
    return List.copyOf(seen);
  }

  /** How many requests got {@code fault}. */
  public int injected(Fault fault) {
    return injected.get(fault).get();
  }

  private void acceptLoop() {
    while (!closed) {
      try {
        Socket client = server.accept();
        client.setTcpNoDelay(true);
        Thread t = new Thread(() -> serve(client), "fault-proxy-conn");
        t.setDaemon(true);
        t.start();
      } catch (IOException e) {
        if (!closed) {
          System.err.println("fault proxy: " + e);
        }
      }
    }
  }

  private void serve(Socket client) {
    Socket up = null;
    try {
      InputStream cin = new BufferedInputStream(client.getInputStream(), 64 * 1024);
      OutputStream cout = client.getOutputStream();
      while (true) {
        List<String> head = new ArrayList<>();
        String line = line(cin);
        while (line != null && line.isEmpty()) {
          line = line(cin);
        }
        if (line == null) {
          return;
        }
        head.add(line);
        while ((line = line(cin)) != null && !line.isEmpty()) {
          head.add(line);
        }
        if (line == null) {
          return;
        }
        Request req = parse(head);
        Fault fault = req.key().isEmpty() && req.bucket().isEmpty() ? Fault.NONE
            : rule.apply(req);
        if ((fault == Fault.LOSE_WRITE && !req.isPut())
            || (fault == Fault.IGNORE_CONDITIONAL && !(req.isPut() && req.conditional()))) {
          fault = Fault.NONE;
        }
        seen.add(new Seen(req, fault));
        injected.get(fault).incrementAndGet();
        boolean expectContinue = header(head, "expect").equalsIgnoreCase("100-continue");
        boolean lagging = fault == Fault.NONE && (lagMillis > 0 || !hiddenUntil.isEmpty());
        if (lagging && (req.method().equals("GET") || req.method().equals("HEAD"))
            && !req.key().isEmpty() && hidden(req.bucket(), req.key())) {
          lagged.incrementAndGet();
          notFound(cout, req.method().equals("HEAD"));
          closeGently(client);
          return;
        }
        boolean filterListing = lagging && req.method().equals("GET") && req.key().isEmpty()
            && !req.bucket().isEmpty() && !req.query().contains("location")
            && !req.query().contains("uploads") && !req.query().contains("versioning");
        switch (fault) {
          case RESET -> {
            client.setSoLinger(true, 0);
            return;
          }
          case SLOW_DOWN, INTERNAL_ERROR -> {
            if (!expectContinue) {
              copyBody(head, cin, OutputStream.nullOutputStream());
            }
            boolean slow = fault == Fault.SLOW_DOWN;
            errorResponse(cout, slow ? 503 : 500, slow ? "Slow Down" : "Internal Server Error",
                slow ? "SlowDown" : "InternalError",
                slow ? "Please reduce your request rate." : "We encountered an internal error.");
            closeGently(client);
            return;
          }
          case ACCESS_DENIED -> {
            if (!expectContinue) {
              copyBody(head, cin, OutputStream.nullOutputStream());
            }
            errorResponse(cout, 403, "Forbidden", "AccessDenied", "Access Denied");
            closeGently(client);
            return;
          }
          case DELAY -> sleep(delayMillis);
          case IGNORE_CONDITIONAL -> deleter.accept(req.bucket(), req.key());
          default -> { }
        }
        // A fresh server connection per request: the server may close idle ones while the
        // client's connection to this relay stays pooled, and a body cannot be replayed.
        if (up != null) {
          closeQuietly(up);
        }
        up = new Socket(upstreamHost, upstreamPort);
        up.setTcpNoDelay(true);
        InputStream uin = new BufferedInputStream(up.getInputStream(), 64 * 1024);
        OutputStream uout = up.getOutputStream();
        uout.write(joinHead(head));
        uout.flush();
        boolean isHead = req.method().equals("HEAD");
        ByteArrayOutputStream held = new ByteArrayOutputStream();
        OutputStream toClient = fault == Fault.APPLY_THEN_DROP || fault == Fault.LOSE_WRITE
            || filterListing ? held : cout;
        if (expectContinue) {
          // Interim 100 Continue (always passed on, so the client sends its body) or a final answer.
          Response interim = response(uin, cout, isHead, true, false);
          if (interim.status() != 100) {
            return; // answered without the body; the body's fate on this connection is unclear
          }
        }
        copyBody(head, cin, uout);
        uout.flush();
        Response r = response(uin, toClient, isHead, false, fault == Fault.DROP_METADATA);
        if (filterListing) {
          cout.write(withoutHidden(req.bucket(), held.toByteArray()));
        }
        if (fault == Fault.NONE && r.status() / 100 == 2) {
          if (req.isPut() && lagMillis > 0) {
            hiddenUntil.put(req.bucket() + "/" + req.key(),
                System.nanoTime() + lagMillis * 1_000_000L);
          } else if (req.method().equals("DELETE") && !req.key().isEmpty()) {
            hiddenUntil.remove(req.bucket() + "/" + req.key());
          }
        }
        if (fault == Fault.APPLY_THEN_DROP) {
          sleep(holdMillis);
          return; // the server applied it; the client never hears
        }
        if (fault == Fault.LOSE_WRITE) {
          if (r.status() / 100 == 2) {
            deleter.accept(req.bucket(), req.key());
          }
          cout.write(held.toByteArray());
          cout.flush();
          closeGently(client);
          return;
        }
        cout.flush();
        if (r.close()) {
          return;
        }
      }
    } catch (IOException e) {
      // connection closed by either side
    } finally {
      closeQuietly(client);
      if (up != null) {
        closeQuietly(up);
      }
    }
  }

  private record Response(int status, boolean close) { }

  /** Copies one response (status line, headers, body) from {@code in} to {@code out}. */
  private static Response response(InputStream in, OutputStream out, boolean isHead,
      boolean interimAllowed, boolean dropMetadata) throws IOException {
    while (true) {
      List<String> head = new ArrayList<>();
      String line = line(in);
      if (line == null) {
        throw new IOException("server closed the connection");
      }
      head.add(line);
      while ((line = line(in)) != null && !line.isEmpty()) {
        if (!(dropMetadata && line.toLowerCase(Locale.ROOT).startsWith("x-amz-meta-"))) {
          head.add(line);
        }
      }
      out.write(joinHead(head));
      int status = Integer.parseInt(head.get(0).split(" ")[1]);
      if (status / 100 == 1) {
        out.flush();
        if (interimAllowed) {
          return new Response(status, false);
        }
        continue;
      }
      boolean close = header(head, "connection").equalsIgnoreCase("close");
      if (!isHead && status != 204 && status != 304) {
        if (header(head, "transfer-encoding").toLowerCase(Locale.ROOT).contains("chunked")) {
          copyChunked(in, out);
        } else if (!header(head, "content-length").isEmpty()) {
          copyBytes(in, out, Long.parseLong(header(head, "content-length")));
        } else {
          in.transferTo(out);
          close = true;
        }
      }
      out.flush();
      return new Response(status, close);
    }
  }

  /** A 404 NoSuchKey answer (headers only for a HEAD), with {@code Connection: close}. */
  private static void notFound(OutputStream out, boolean head) throws IOException {
    if (!head) {
      errorResponse(out, 404, "Not Found", "NoSuchKey", "The specified key does not exist.");
      return;
    }
    out.write(("HTTP/1.1 404 Not Found\r\nContent-Type: application/xml\r\n"
        + "x-amz-request-id: fault-proxy\r\nConnection: close\r\n\r\n")
        .getBytes(StandardCharsets.ISO_8859_1));
    out.flush();
  }

  private static final Pattern CONTENTS = Pattern.compile("<Contents>.*?</Contents>",
      Pattern.DOTALL);
  private static final Pattern KEY = Pattern.compile("<Key>(.*?)</Key>", Pattern.DOTALL);

  /**
   * One listing answer (status line, headers, body as the server sent it, Content-Length or
   * chunked) with every {@code <Contents>} entry the lag mode hides removed, re-framed with a
   * Content-Length. Keys may be URL-encoded ({@code encoding-type=url}, as the AWS SDK asks).
   */
  private byte[] withoutHidden(String bucket, byte[] answer) throws IOException {
    String all = new String(answer, StandardCharsets.ISO_8859_1);
    int end = all.indexOf("\r\n\r\n");
    if (end < 0) {
      return answer;
    }
    List<String> head = new ArrayList<>(List.of(all.substring(0, end).split("\r\n")));
    InputStream rest = new java.io.ByteArrayInputStream(answer, end + 4, answer.length - end - 4);
    ByteArrayOutputStream body = new ByteArrayOutputStream();
    if (header(head, "transfer-encoding").toLowerCase(Locale.ROOT).contains("chunked")) {
      while (true) {
        String size = line(rest);
        long n = size == null ? 0 : Long.parseLong(size.split(";")[0].trim(), 16);
        if (n == 0) {
          break;
        }
        copyBytes(rest, body, n);
        line(rest);
      }
    } else {
      rest.transferTo(body);
    }
    if (!head.get(0).contains(" 200 ")) {
      return answer;
    }
    String xml = body.toString(StandardCharsets.UTF_8);
    StringBuilder out = new StringBuilder();
    Matcher m = CONTENTS.matcher(xml);
    int removed = 0;
    while (m.find()) {
      Matcher k = KEY.matcher(m.group());
      String key = k.find() ? unescape(k.group(1)) : "";
      boolean hide = hidden(bucket, key)
          || hidden(bucket, URLDecoder.decode(key.replace("+", "%2B"), StandardCharsets.UTF_8));
      if (hide) {
        removed++;
      }
      m.appendReplacement(out, hide ? "" : Matcher.quoteReplacement(m.group()));
    }
    m.appendTail(out);
    if (removed > 0) {
      lagged.incrementAndGet();
    }
    byte[] newBody = out.toString().getBytes(StandardCharsets.UTF_8);
    StringBuilder h = new StringBuilder(head.get(0)).append("\r\n");
    for (int i = 1; i < head.size(); i++) {
      String name = head.get(i).split(":", 2)[0].trim();
      if (!name.equalsIgnoreCase("transfer-encoding") && !name.equalsIgnoreCase("content-length")) {
        h.append(head.get(i)).append("\r\n");
      }
    }
    h.append("Content-Length: ").append(newBody.length).append("\r\n\r\n");
    ByteArrayOutputStream framed = new ByteArrayOutputStream();
    framed.write(h.toString().getBytes(StandardCharsets.ISO_8859_1));
    framed.write(newBody);
    return framed.toByteArray();
  }

  private static String unescape(String xml) {
    return xml.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"")
        .replace("&apos;", "'").replace("&amp;", "&");
  }

  private static void errorResponse(OutputStream out, int status, String reason, String code,
      String message) throws IOException {
    byte[] body = ("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>" + code
        + "</Code><Message>" + message + "</Message><RequestId>fault-proxy</RequestId></Error>")
        .getBytes(StandardCharsets.UTF_8);
    String head = "HTTP/1.1 " + status + " " + reason + "\r\nContent-Type: application/xml\r\n"
        + "Content-Length: " + body.length + "\r\nx-amz-request-id: fault-proxy\r\n"
        + "Connection: close\r\n\r\n";
    out.write(head.getBytes(StandardCharsets.ISO_8859_1));
    out.write(body);
    out.flush();
  }

  private static Request parse(List<String> head) {
    String[] parts = head.get(0).split(" ");
    String method = parts[0];
    String target = parts.length > 1 ? parts[1] : "/";
    String path = target;
    String query = "";
    int q = target.indexOf('?');
    if (q >= 0) {
      path = target.substring(0, q);
      query = target.substring(q + 1);
    }
    String decoded = URLDecoder.decode(path.replace("+", "%2B"), StandardCharsets.UTF_8);
    String noSlash = decoded.startsWith("/") ? decoded.substring(1) : decoded;
    int slash = noSlash.indexOf('/');
    String bucket = slash < 0 ? noSlash : noSlash.substring(0, slash);
    String key = slash < 0 ? "" : noSlash.substring(slash + 1);
    return new Request(method, bucket, key, query, !header(head, "if-none-match").isEmpty(),
        header(head, "expect").equalsIgnoreCase("100-continue"),
        header(head, "x-amz-security-token"));
  }

  private static String header(List<String> head, String name) {
    for (int i = 1; i < head.size(); i++) {
      String h = head.get(i);
      int colon = h.indexOf(':');
      if (colon > 0 && h.substring(0, colon).trim().equalsIgnoreCase(name)) {
        return h.substring(colon + 1).trim();
      }
    }
    return "";
  }

  private static byte[] joinHead(List<String> head) {
    StringBuilder sb = new StringBuilder();
    for (String h : head) {
      sb.append(h).append("\r\n");
    }
    sb.append("\r\n");
    return sb.toString().getBytes(StandardCharsets.ISO_8859_1);
  }

  /** Copies a request body (Content-Length or chunked) from the client. */
  private static void copyBody(List<String> head, InputStream in, OutputStream out)
      throws IOException {
    if (header(head, "transfer-encoding").toLowerCase(Locale.ROOT).contains("chunked")) {
      copyChunked(in, out);
    } else if (!header(head, "content-length").isEmpty()) {
      copyBytes(in, out, Long.parseLong(header(head, "content-length")));
    }
  }

  private static void copyChunked(InputStream in, OutputStream out) throws IOException {
    while (true) {
      String size = line(in);
      if (size == null) {
        throw new IOException("chunked body ended early");
      }
      out.write((size + "\r\n").getBytes(StandardCharsets.ISO_8859_1));
      long n = Long.parseLong(size.split(";")[0].trim(), 16);
      if (n == 0) {
        String trailer;
        while ((trailer = line(in)) != null && !trailer.isEmpty()) {
          out.write((trailer + "\r\n").getBytes(StandardCharsets.ISO_8859_1));
        }
        out.write("\r\n".getBytes(StandardCharsets.ISO_8859_1));
        return;
      }
      copyBytes(in, out, n);
      line(in);
      out.write("\r\n".getBytes(StandardCharsets.ISO_8859_1));
    }
  }

  /** Reads one CRLF-terminated line (without it); null at end of stream. */
  private static String line(InputStream in) throws IOException {
    ByteArrayOutputStream buf = new ByteArrayOutputStream(128);
    int b;
    while ((b = in.read()) >= 0) {
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
        throw new IOException("body ended early");
      }
      out.write(buf, 0, r);
      left -= r;
    }
  }

  /** Half-closes, reads what the client still sends (briefly), then closes: no RST. */
  private static void closeGently(Socket s) {
    try {
      s.shutdownOutput();
      s.setSoTimeout(2_000);
      InputStream in = s.getInputStream();
      byte[] buf = new byte[8192];
      while (in.read(buf) >= 0) {
        // drain
      }
    } catch (SocketTimeoutException e) {
      // the client keeps it open; close anyway
    } catch (IOException e) {
      // already gone
    } finally {
      closeQuietly(s);
    }
  }

  private static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
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
