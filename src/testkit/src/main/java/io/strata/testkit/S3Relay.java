// SPDX-License-Identifier: Apache-2.0
package io.strata.testkit;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpClientCodec;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpObject;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.ReferenceCountUtil;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.ToLongFunction;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The tests' one HTTP relay on loopback in front of a real S3-compatible server (S3Proxy): it
 * records every request ({@link #seen()}), may add latency before forwarding it ({@link
 * #latency(ToLongFunction)}, the benchmark's S3 latency profile), and forwards it unchanged
 * unless its {@linkplain #rule(Function) rule} picks a {@link Fault} for it. Path-style
 * addressing, HTTP/1.1 without pipelining (what the AWS SDK's Apache client and S3A send).
 *
 * <p>HTTP is Netty's codec ({@link HttpServerCodec} towards the client, {@link HttpClientCodec}
 * towards the server, each in an {@link EmbeddedChannel} fed from a blocking socket): it finds
 * where requests and answers end (Content-Length, chunked bodies, {@code Expect: 100-continue},
 * answers to HEAD), and the relay reads and changes only what a fault needs. Each connection has
 * its own thread; each request its own connection to the server (the server may close idle ones
 * while the client's connection to this relay stays pooled, and a body cannot be replayed).
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
public final class S3Relay implements AutoCloseable {
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
     * {@linkplain S3Relay#S3Relay(URI, BiConsumer) deleter}) before the client sees the answer:
     * the write is lost. Other methods are forwarded unchanged.
     */
    LOSE_WRITE,
    /** Forwarded after a delay of {@link #delayMillis} ms. */
    DELAY,
    /**
     * A server that ignores conditional writes: a PUT carrying {@code If-None-Match} succeeds
     * (200) and replaces any object at its key, as if the header were absent. Done by deleting
     * the object first (through the {@linkplain S3Relay#S3Relay(URI, BiConsumer) deleter}), then
     * forwarding the request unchanged: the header itself cannot be removed, since the client
     * signs it (SigV4) and the server would refuse the request. Other requests are forwarded
     * unchanged.
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
   * One request as the rule and the recorders see it.
   *
   * @param method HTTP method, upper case
   * @param bucket bucket (first path segment), "" for the service
   * @param key decoded object key (without the bucket), "" for bucket-level requests
   * @param query raw query string, "" if none
   * @param conditional true if it carries {@code If-None-Match}
   * @param expectContinue true if it carries {@code Expect: 100-continue} (its body then waits
   *     for the server's {@code 100 Continue})
   * @param securityToken its {@code x-amz-security-token} (the session token of temporary
   *     credentials), "" if none: tells which credentials source signed it
   * @param copy true if it carries {@code x-amz-copy-source} (CopyObject, UploadPartCopy)
   * @param payloadBytes the bytes it uploads: {@code x-amz-decoded-content-length} (the SDK's
   *     aws-chunked uploads), else {@code Content-Length}, else 0
   * @param nanos {@link System#nanoTime()} when its head arrived
   * @param epochMillis wall-clock time when its head arrived, ms since the epoch
   */
  public record Request(String method, String bucket, String key, String query,
      boolean conditional, boolean expectContinue, String securityToken, boolean copy,
      long payloadBytes, long nanos, long epochMillis) {
    /** True for a PUT of an object (not a part upload or a copy). */
    public boolean isPut() {
      return method.equals("PUT") && !key.isEmpty() && !query.contains("partNumber");
    }

    /** True for a GET of a bucket: a listing (ListObjects v1 or v2, ListMultipartUploads). */
    public boolean isList() {
      return method.equals("GET") && key.isEmpty() && !bucket.isEmpty();
    }

    /** True if the query has parameter {@code name}, with or without a value. */
    public boolean hasParam(String name) {
      for (String kv : query.split("&")) {
        if (kv.equals(name) || kv.startsWith(name + "=")) {
          return true;
        }
      }
      return false;
    }

    /** The decoded value of query parameter {@code name}, "" if absent. */
    public String param(String name) {
      for (String kv : query.split("&")) {
        if (kv.startsWith(name + "=")) {
          return decode(kv.substring(name.length() + 1));
        }
      }
      return "";
    }

    /**
     * The request a raw HTTP/1.1 request head ({@code "PUT /b/k HTTP/1.1\r\nHost: ...\r\n\r\n"})
     * would be recorded as, decoded by the same codec: for tests of classifiers.
     *
     * @param head the request line and headers, ending with an empty line
     * @return the request, with {@code nanos} and {@code epochMillis} 0
     * @throws IllegalArgumentException if the codec cannot decode it
     */
    public static Request parse(String head) {
      EmbeddedChannel codec = new EmbeddedChannel(new HttpServerCodec());
      try {
        codec.writeInbound(Unpooled.copiedBuffer(head, StandardCharsets.ISO_8859_1));
        Object o = codec.readInbound();
        if (!(o instanceof HttpRequest r) || r.decoderResult().isFailure()) {
          throw new IllegalArgumentException("not a request head: " + head);
        }
        ReferenceCountUtil.release(o);
        return of(r, 0, 0);
      } finally {
        codec.finishAndReleaseAll();
      }
    }

    private static Request of(HttpRequest r, long nanos, long epochMillis) {
      String target = r.uri();
      String path = target;
      String query = "";
      int q = target.indexOf('?');
      if (q >= 0) {
        path = target.substring(0, q);
        query = target.substring(q + 1);
      }
      String decoded = decode(path);
      String noSlash = decoded.startsWith("/") ? decoded.substring(1) : decoded;
      int slash = noSlash.indexOf('/');
      String bucket = slash < 0 ? noSlash : noSlash.substring(0, slash);
      String key = slash < 0 ? "" : noSlash.substring(slash + 1);
      HttpHeaders h = r.headers();
      String decodedLength = h.get("x-amz-decoded-content-length");
      long payload = decodedLength != null ? Long.parseLong(decodedLength.trim())
          : HttpUtil.getContentLength(r, 0L);
      return new Request(r.method().name(), bucket, key, query, h.contains("if-none-match"),
          HttpUtil.is100ContinueExpected(r), h.get("x-amz-security-token", ""),
          h.contains("x-amz-copy-source"), payload, nanos, epochMillis);
    }

    private static String decode(String s) {
      try {
        return URLDecoder.decode(s.replace("+", "%2B"), StandardCharsets.UTF_8);
      } catch (IllegalArgumentException e) {
        return s;
      }
    }
  }

  /** A request and the fault it got. */
  public record Seen(Request request, Fault fault) { }

  private final ServerSocket server;
  private final String upstreamHost;
  private final int upstreamPort;
  private final BiConsumer<String, String> deleter;
  private final List<Seen> seen = new ArrayList<>(); // guarded by itself
  private final Map<Fault, AtomicInteger> injected = new EnumMap<>(Fault.class);
  private final Map<Socket, Boolean> open = new ConcurrentHashMap<>();
  private volatile Function<Request, Fault> rule = r -> Fault.NONE;
  private volatile ToLongFunction<Request> latency = r -> 0L;
  private volatile Consumer<Request> listener = r -> { };
  private volatile boolean reuseUpstream;
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
   * @param upstream the server, {@code http://host:port}
   * @param deleter deletes (bucket, key) on the server; used by {@link Fault#LOSE_WRITE} and
   *     {@link Fault#IGNORE_CONDITIONAL}, may be null if those faults are never used
   * @throws IOException if no loopback port can be bound
   */
  public S3Relay(URI upstream, BiConsumer<String, String> deleter) throws IOException {
    if (!"http".equals(upstream.getScheme()) || upstream.getPort() < 0) {
      throw new IllegalArgumentException("upstream must be http://host:port, was " + upstream);
    }
    this.upstreamHost = upstream.getHost();
    this.upstreamPort = upstream.getPort();
    this.deleter = deleter;
    for (Fault f : Fault.values()) {
      injected.put(f, new AtomicInteger());
    }
    this.server = new ServerSocket(0, 200, InetAddress.getLoopbackAddress());
    Thread accept = new Thread(this::acceptLoop, "s3-relay-accept-" + server.getLocalPort());
    accept.setDaemon(true);
    accept.start();
  }

  /** The endpoint clients use instead of the server's, {@code http://127.0.0.1:<port>}. */
  public URI endpoint() {
    return URI.create("http://127.0.0.1:" + server.getLocalPort());
  }

  /** Sets the rule that picks each request's fault (thread-safe; applies to new requests). */
  public void rule(Function<Request, Fault> rule) {
    this.rule = rule;
  }

  /**
   * Sets the latency added before each request is forwarded, ms (thread-safe; applies to new
   * requests): the benchmark's model of S3's per-request latency. Not a fault: the request is
   * recorded with {@link Fault#NONE} or its rule's fault, which applies after the wait.
   *
   * @param millis the latency of a request, ms (0 for none)
   */
  public void latency(ToLongFunction<Request> millis) {
    this.latency = millis;
  }

  /**
   * Keeps one connection to the server per client connection while its answers are complete
   * and keep-alive and no fault touched it (thread-safe; applies to new connections), as a
   * recorder in front of a benchmark wants: no TCP connect per request. A kept connection idle
   * for more than 10 s is replaced by a new one: a server that closed it (S3Proxy's Jetty does
   * after 30 s) cannot be detected before a request's body is sent, and a body cannot be
   * replayed; then this relay would close the client's connection without an answer and the
   * client retry (in the benchmark, a client's connections unused since its start met that at
   * the first base snapshot's batch: a failed attempt and a second PUT in 5 of 8 stores). Off
   * by default, so fault tests count no such retries.
   *
   * @param reuse whether to keep the server connection
   */
  public void reuseUpstream(boolean reuse) {
    this.reuseUpstream = reuse;
  }

  /**
   * Sets what is told of each request as its head arrives, before its latency and fault, on the
   * connection's thread (thread-safe; applies to new requests): a recorder's live log.
   *
   * @param listener called once per request; must not block
   */
  public void listener(Consumer<Request> listener) {
    this.listener = listener;
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
    synchronized (seen) {
      return List.copyOf(seen);
    }
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
        Thread t = new Thread(() -> serve(client), "s3-relay-conn");
        t.setDaemon(true);
        t.start();
      } catch (IOException e) {
        if (!closed) {
          System.err.println("s3 relay: " + e);
        }
      }
    }
  }

  /**
   * Longest a kept server connection waits idle before it is replaced by a new one (10 s; well
   * under the idle timeout of S3Proxy's Jetty, 30 s).
   */
  private static final long KEPT_IDLE_NANOS = 10_000_000_000L;

  /**
   * One blocking side of a connection seen through Netty's codec: bytes read from the socket
   * are decoded into {@link HttpObject}s; objects written are encoded onto the socket.
   */
  private static final class Side implements AutoCloseable {
    private final Socket socket;
    private final InputStream in;
    private final OutputStream out;
    private final EmbeddedChannel codec;
    private final ArrayDeque<Object> decoded = new ArrayDeque<>();
    private static final int READ_BYTES = 64 * 1024;
    private boolean eof;
    /** When this side was last kept for reuse ({@link System#nanoTime()}). */
    private long keptAtNanos;

    Side(Socket socket, EmbeddedChannel codec) throws IOException {
      this.socket = socket;
      this.in = socket.getInputStream();
      this.out = new java.io.BufferedOutputStream(socket.getOutputStream(), 64 * 1024);
      this.codec = codec;
    }

    /** The next decoded object; null once the peer closed and nothing is left. */
    HttpObject next() throws IOException {
      while (decoded.isEmpty()) {
        if (eof) {
          return null;
        }
        ByteBuf chunk = Unpooled.buffer(READ_BYTES);
        int n = chunk.writeBytes(in, READ_BYTES);
        if (n < 0) {
          chunk.release();
          eof = true;
          codec.close(); // a body that ends with the connection ends here
        } else {
          codec.writeInbound(chunk);
        }
        Object o;
        while ((o = codec.readInbound()) != null) {
          decoded.add(o);
        }
      }
      HttpObject o = (HttpObject) decoded.poll();
      if (o.decoderResult().isFailure()) {
        ReferenceCountUtil.release(o);
        throw new IOException("undecodable HTTP", o.decoderResult().cause());
      }
      return o;
    }

    /** Encodes {@code o} (releasing it) and writes the bytes to the socket. */
    void write(HttpObject o) throws IOException {
      codec.writeOutbound(o);
      ByteBuf b;
      while ((b = codec.readOutbound()) != null) {
        try {
          b.readBytes(out, b.readableBytes());
        } finally {
          b.release();
        }
      }
    }

    void flush() throws IOException {
      out.flush();
    }

    @Override
    public void close() {
      codec.finishAndReleaseAll();
      decoded.forEach(ReferenceCountUtil::release);
      decoded.clear();
      closeQuietly(socket);
    }
  }

  private void serve(Socket socket) {
    open.put(socket, Boolean.TRUE);
    Side client = null;
    Side[] up = {null}; // the kept server connection, if any
    try {
      client = new Side(socket, new EmbeddedChannel(new HttpServerCodec(64 * 1024, 64 * 1024,
          64 * 1024)));
      while (!closed) {
        HttpObject first = client.next();
        while (first != null && !(first instanceof HttpRequest)) {
          ReferenceCountUtil.release(first); // the tail of a body no one read
          first = client.next();
        }
        if (first == null) {
          return;
        }
        HttpRequest head = (HttpRequest) first;
        Request req = Request.of(head, System.nanoTime(), System.currentTimeMillis());
        if (!exchange(client, socket, head, req, up)) {
          return;
        }
      }
    } catch (IOException e) {
      // connection closed by either side
    } finally {
      if (up[0] != null) {
        up[0].close();
      }
      if (client != null) {
        client.close();
      } else {
        closeQuietly(socket);
      }
      open.remove(socket);
    }
  }

  /**
   * Relays one request and its answer, or injects its fault.
   *
   * @param kept the server connection kept from the previous request ({@link
   *     #reuseUpstream}), or null; set to the one to keep, or null
   * @return true if the client's connection may carry another request
   */
  private boolean exchange(Side client, Socket socket, HttpRequest head, Request req,
      Side[] kept) throws IOException {
    Fault fault = req.key().isEmpty() && req.bucket().isEmpty() ? Fault.NONE : rule.apply(req);
    if ((fault == Fault.LOSE_WRITE && !req.isPut())
        || (fault == Fault.IGNORE_CONDITIONAL && !(req.isPut() && req.conditional()))) {
      fault = Fault.NONE;
    }
    synchronized (seen) {
      seen.add(new Seen(req, fault));
    }
    injected.get(fault).incrementAndGet();
    listener.accept(req);
    long wait = latency.applyAsLong(req);
    if (wait > 0) {
      sleep(wait);
    }
    boolean lagging = fault == Fault.NONE && (lagMillis > 0 || !hiddenUntil.isEmpty());
    if (lagging && (req.method().equals("GET") || req.method().equals("HEAD"))
        && !req.key().isEmpty() && hidden(req.bucket(), req.key())) {
      lagged.incrementAndGet();
      skipBody(client, head);
      client.write(error(404, "NoSuchKey", "The specified key does not exist."));
      client.flush();
      closeGently(socket);
      return false;
    }
    boolean filterListing = lagging && req.isList() && !req.hasParam("location")
        && !req.hasParam("uploads") && !req.hasParam("versioning");
    switch (fault) {
      case RESET -> {
        socket.setSoLinger(true, 0);
        return false;
      }
      case SLOW_DOWN, INTERNAL_ERROR, ACCESS_DENIED -> {
        if (!req.expectContinue()) {
          skipBody(client, head);
        }
        client.write(switch (fault) {
          case SLOW_DOWN -> error(503, "SlowDown", "Please reduce your request rate.");
          case INTERNAL_ERROR -> error(500, "InternalError", "We encountered an internal error.");
          default -> error(403, "AccessDenied", "Access Denied");
        });
        client.flush();
        closeGently(socket);
        return false;
      }
      case DELAY -> sleep(delayMillis);
      case IGNORE_CONDITIONAL -> deleter.accept(req.bucket(), req.key());
      default -> { }
    }
    Side up = kept[0];
    kept[0] = null;
    if (up != null && System.nanoTime() - up.keptAtNanos > KEPT_IDLE_NANOS) {
      // The server may have closed it meanwhile (S3Proxy's Jetty does after 30 s idle), which
      // shows only once a body was sent: the client would see a failed attempt and retry.
      up.close();
      up = null;
    }
    if (up == null || fault != Fault.NONE) {
      if (up != null) {
        up.close();
      }
      Socket s = new Socket();
      s.setTcpNoDelay(true);
      s.connect(new InetSocketAddress(upstreamHost, upstreamPort), 10_000);
      up = new Side(s, new EmbeddedChannel(new HttpClientCodec(64 * 1024, 64 * 1024,
          64 * 1024)));
    }
    boolean keep = false;
    List<HttpObject> held = new ArrayList<>();
    try {
      up.write(head);
      up.flush();
      boolean bodyDone = head instanceof LastHttpContent;
      if (req.expectContinue() && !bodyDone) {
        // The server's interim 100 Continue (passed on, so the client sends its body), or a
        // final answer without the body: then the body's fate on this connection is unclear.
        HttpResponse interim = nextResponse(up);
        if (interim.status().code() != 100) {
          // This connection closes below: say so, or the client pools it and its next request
          // meets a closed socket (a retried attempt a real server would not cause).
          HttpUtil.setKeepAlive(interim, false);
          client.write(interim);
          copyContent(up, client::write);
          client.flush();
          closeGently(socket);
          return false;
        }
        client.write(interim);
        copyContent(up, client::write);
        client.flush();
      }
      if (!bodyDone) {
        copyContent(client, up::write);
      }
      up.flush();
      boolean hold = fault == Fault.APPLY_THEN_DROP || fault == Fault.LOSE_WRITE || filterListing;
      HttpResponse answer = nextResponse(up);
      while (answer.status().code() / 100 == 1) { // other interim answers pass through
        client.write(answer);
        copyContent(up, client::write);
        answer = nextResponse(up);
      }
      if (fault == Fault.DROP_METADATA) {
        for (String n : new ArrayList<>(answer.headers().names())) {
          if (n.toLowerCase(Locale.ROOT).startsWith("x-amz-meta-")) {
            answer.headers().remove(n);
          }
        }
      }
      int status = answer.status().code();
      // Another request may follow only if this answer's end is framed (not by a close).
      boolean keepAlive = HttpUtil.isKeepAlive(answer) && (HttpUtil.isContentLengthSet(answer)
          || HttpUtil.isTransferEncodingChunked(answer) || req.method().equals("HEAD")
          || status == 204 || status == 304);
      // The lag mode hides a new object before the client can hear of it (so no request on
      // another connection sees it first); a DELETE ends the hiding.
      if (fault == Fault.NONE && status / 100 == 2) {
        if (req.isPut() && lagMillis > 0) {
          hiddenUntil.put(req.bucket() + "/" + req.key(),
              System.nanoTime() + lagMillis * 1_000_000L);
        } else if (req.method().equals("DELETE") && !req.key().isEmpty()) {
          hiddenUntil.remove(req.bucket() + "/" + req.key());
        }
      }
      if (!keepAlive) {
        HttpUtil.setKeepAlive(answer, false); // the relay closes it after this answer
      }
      if (hold) {
        held.add(answer);
        copyContent(up, held::add);
      } else {
        client.write(answer);
        copyContent(up, client::write);
        client.flush();
      }
      if (filterListing) {
        FullHttpResponse filtered = withoutHidden(req.bucket(), held);
        held.clear();
        client.write(filtered);
        client.flush();
      }
      if (fault == Fault.APPLY_THEN_DROP) {
        sleep(holdMillis);
        return false; // the server applied it; the client never hears
      }
      if (fault == Fault.LOSE_WRITE) {
        if (status / 100 == 2) {
          deleter.accept(req.bucket(), req.key());
        }
        if (!held.isEmpty() && held.get(0) instanceof HttpResponse r) {
          HttpUtil.setKeepAlive(r, false); // closed below
        }
        while (!held.isEmpty()) {
          client.write(held.remove(0));
        }
        client.flush();
        closeGently(socket);
        return false;
      }
      keep = keepAlive && reuseUpstream && fault == Fault.NONE && !filterListing;
      return keepAlive;
    } finally {
      held.forEach(ReferenceCountUtil::release);
      if (keep) {
        up.keptAtNanos = System.nanoTime();
        kept[0] = up;
      } else {
        up.close();
      }
    }
  }

  /** Where the objects of one message's body go. */
  private interface Sink {
    void accept(HttpObject o) throws IOException;
  }

  /** The next answer's head from the server. */
  private static HttpResponse nextResponse(Side up) throws IOException {
    HttpObject o = up.next();
    if (!(o instanceof HttpResponse r)) {
      ReferenceCountUtil.release(o);
      throw new IOException("server closed the connection or sent no answer");
    }
    return r;
  }

  /** Passes a message's body objects to {@code sink}, up to and including its last one. */
  private static void copyContent(Side from, Sink sink) throws IOException {
    HttpObject last = null;
    while (!(last instanceof LastHttpContent)) {
      last = from.next();
      if (last == null) {
        throw new IOException("connection closed inside a body");
      }
      sink.accept(last);
    }
  }

  /** Reads and drops a request's body (the client sends it whatever the answer). */
  private static void skipBody(Side client, HttpRequest head) throws IOException {
    if (head instanceof LastHttpContent) {
      return;
    }
    copyContent(client, ReferenceCountUtil::release);
  }

  /** An S3 error answer with {@code Connection: close}. */
  private static FullHttpResponse error(int status, String code, String message) {
    byte[] body = ("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>" + code
        + "</Code><Message>" + message + "</Message><RequestId>s3-relay</RequestId></Error>")
        .getBytes(StandardCharsets.UTF_8);
    FullHttpResponse r = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1,
        HttpResponseStatus.valueOf(status), Unpooled.wrappedBuffer(body));
    r.headers().set(HttpHeaderNames.CONTENT_TYPE, "application/xml")
        .set(HttpHeaderNames.CONTENT_LENGTH, body.length)
        .set("x-amz-request-id", "s3-relay")
        .set(HttpHeaderNames.CONNECTION, "close");
    return r;
  }

  private static final Pattern CONTENTS = Pattern.compile("<Contents>.*?</Contents>",
      Pattern.DOTALL);
  private static final Pattern KEY = Pattern.compile("<Key>(.*?)</Key>", Pattern.DOTALL);

  /**
   * One listing answer ({@code held}: its head and body objects, released here) with every
   * {@code <Contents>} entry the lag mode hides removed, as one message with a Content-Length.
   * Keys may be URL-encoded ({@code encoding-type=url}, as the AWS SDK asks).
   */
  private FullHttpResponse withoutHidden(String bucket, List<HttpObject> held) {
    HttpResponse head = (HttpResponse) held.get(0);
    ByteArrayOutputStream body = new ByteArrayOutputStream();
    for (HttpObject o : held.subList(1, held.size())) {
      ByteBuf c = ((HttpContent) o).content();
      body.writeBytes(ByteBufUtil.getBytes(c));
      ReferenceCountUtil.release(o);
    }
    byte[] bytes = body.toByteArray();
    if (head.status().code() == 200) {
      String xml = new String(bytes, StandardCharsets.UTF_8);
      StringBuilder out = new StringBuilder();
      Matcher m = CONTENTS.matcher(xml);
      int removed = 0;
      while (m.find()) {
        Matcher k = KEY.matcher(m.group());
        String key = k.find() ? unescape(k.group(1)) : "";
        boolean hide = hidden(bucket, key) || hidden(bucket, Request.decode(key));
        if (hide) {
          removed++;
        }
        m.appendReplacement(out, hide ? "" : Matcher.quoteReplacement(m.group()));
      }
      m.appendTail(out);
      if (removed > 0) {
        lagged.incrementAndGet();
      }
      bytes = out.toString().getBytes(StandardCharsets.UTF_8);
    }
    FullHttpResponse r = new DefaultFullHttpResponse(head.protocolVersion(), head.status(),
        Unpooled.wrappedBuffer(bytes));
    r.headers().set(head.headers()).remove(HttpHeaderNames.TRANSFER_ENCODING)
        .set(HttpHeaderNames.CONTENT_LENGTH, bytes.length);
    return r;
  }

  private static String unescape(String xml) {
    return xml.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"")
        .replace("&apos;", "'").replace("&amp;", "&");
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

  /**
   * Stops accepting and closes every open client connection (a request in flight ends without
   * an answer). Idempotent.
   */
  @Override
  public void close() throws IOException {
    closed = true;
    server.close();
    for (Socket s : open.keySet()) {
      closeQuietly(s);
    }
  }
}
