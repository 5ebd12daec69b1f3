// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.config.StrataConf;
import io.strata.engine.SharedMemory;
import io.strata.format.StoreLayout;
import io.strata.format.VersionObjectCodec;
import io.strata.objectstore.ObjectAlreadyExistsException;
import io.strata.objectstore.ObjectStore;
import io.strata.objectstore.ObjectStores;
import io.strata.objectstore.RequestListener;
import io.strata.objectstore.S3Settings;
import io.strata.testkit.S3ProxyServer;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Stream;
import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.core.LogEvent;
import org.apache.logging.log4j.core.LoggerContext;
import org.apache.logging.log4j.core.appender.AbstractAppender;
import org.apache.logging.log4j.core.config.Configurator;
import org.apache.logging.log4j.core.config.Property;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Hostile input against a real S3-compatible server (S3Proxy that checks SigV4 signatures with
 * recognisable credentials): a nonexistent bucket and wrong credentials fail the first commit
 * quickly with a message naming the bucket; a checkpoint written by another state store provider
 * or by a newer Strata format fails with a clear error and nothing in the bucket changes; and the
 * credentials never appear in a log line, an exception message or a metric.
 */
class HostileInputIT {
  static final String ACCESS_KEY = "AKIASTRATASECRETTEST";
  static final String SECRET_KEY = "strata-secret-do-not-log";
  private static final String BUCKET = "hostile";
  private static Path work;
  private static S3ProxyServer server;

  @BeforeAll
  static void start() throws Exception {
    work = Files.createTempDirectory("strata-hostile-it");
    server = S3ProxyServer.start(work.resolve("s3"), Map.of(
        "s3proxy.identity", ACCESS_KEY, "s3proxy.credential", SECRET_KEY));
    // S3Proxy's filesystem store: a bucket is a directory (its own client has other keys)
    Files.createDirectories(server.dataDir().resolve(BUCKET));
  }

  @AfterAll
  static void stop() {
    if (server != null) {
      server.close();
    }
  }

  /** Settings as StrataConf resolves them from Spark confs, with the given keys. */
  private static S3Settings s3(String accessKey, String secretKey) {
    String p = StrataConf.PREFIX;
    return StrataConf.from(Map.of(p + "s3.endpoint", server.endpoint().toString(),
        p + "s3.pathStyleAccess", "true", p + "s3.accessKeyId", accessKey,
        p + "s3.secretAccessKey", secretKey), Map.of()).s3();
  }

  private static SyncedStore open(String location, S3Settings s3, String local,
      List<RequestListener.Request> requests) {
    ObjectStore objects = ObjectStores.open(location, s3, requests::add);
    return new SyncedStore(new StoreIdentity(0, 0, "default", location), objects,
        work.resolve(local + "-" + System.nanoTime()), new StoreSettings(2, 2, 0, false, SharedMemory.Limits.DEFAULT, GcSettings.DEFAULT), "{}",
        "{}");
  }

  private static SyncedStore open(String location, String local) {
    return open(location, s3(ACCESS_KEY, SECRET_KEY), local, new ArrayList<>());
  }

  private static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static void commitVersions(String location, int n) throws IOException {
    try (SyncedStore s = open(location, "writer")) {
      s.load(0, Optional.empty());
      for (int v = 1; v <= n; v++) {
        for (int i = 0; i < 20; i++) {
          s.put(b("key-" + i), b("v" + v));
        }
        s.commit();
      }
    }
  }

  /** Every object file of the bucket and its bytes. */
  private static Map<String, byte[]> bucketFiles() throws IOException {
    Map<String, byte[]> files = new TreeMap<>();
    Path root = server.dataDir().resolve(BUCKET);
    try (Stream<Path> s = Files.walk(root)) {
      for (Path p : s.filter(Files::isRegularFile).toList()) {
        files.put(root.relativize(p).toString(), Files.readAllBytes(p));
      }
    }
    return files;
  }

  private static void assertUnchanged(Map<String, byte[]> before) throws IOException {
    Map<String, byte[]> after = bucketFiles();
    assertEquals(before.keySet(), after.keySet(), "no object added or removed");
    for (String k : before.keySet()) {
      assertArrayEquals(before.get(k), after.get(k), "object " + k + " unchanged");
    }
  }

  @Test
  void nonexistentBucketFailsTheFirstCommitQuicklyNamingTheBucket() throws Exception {
    try (SyncedStore s = open("s3://no-such-bucket/ckpt/state/0/0", "nobucket")) {
      s.load(0, Optional.empty());
      s.put(b("k"), b("v"));
      long t0 = System.nanoTime();
      IOException e = assertThrows(IOException.class, s::commit);
      long ms = (System.nanoTime() - t0) / 1_000_000;
      assertTrue(ms < 30_000, "failed after " + ms + " ms, not retried for long");
      assertTrue(e.getMessage().contains("s3://no-such-bucket/ckpt/state/0/0/v/"), e.getMessage());
      assertTrue(e.getMessage().contains("the bucket does not exist"), e.getMessage());
    }
  }

  @Test
  void wrongCredentialsFailTheFirstCommitQuickly() throws Exception {
    for (S3Settings wrong : List.of(s3(ACCESS_KEY, SECRET_KEY + "-wrong"),
        s3("AKIAOTHERKEYFORTEST0", SECRET_KEY))) {
      try (SyncedStore s = open("s3://" + BUCKET + "/creds/state/0/0", wrong, "creds",
          new ArrayList<>())) {
        s.load(0, Optional.empty());
        s.put(b("k"), b("v"));
        long t0 = System.nanoTime();
        IOException e = assertThrows(IOException.class, s::commit);
        long ms = (System.nanoTime() - t0) / 1_000_000;
        assertTrue(ms < 30_000, "failed after " + ms + " ms, not retried for long");
        assertTrue(e.getMessage().contains("s3://" + BUCKET + "/creds/state/0/0/v/"),
            e.getMessage());
        assertTrue(e.getMessage().contains("access denied; check the credentials"),
            e.getMessage());
      }
    }
  }

  @Test
  void checkpointOfSparksHdfsProviderIsRefusedAndLeftAlone() throws Exception {
    String loc = "s3://" + BUCKET + "/hdfs/state/0/0";
    try (ObjectStore o = ObjectStores.open(loc, s3(ACCESS_KEY, SECRET_KEY), null)) {
      o.putIfAbsent("1.delta", io.strata.objectstore.ObjectBody.of(new byte[] {1, 2}));
      o.putIfAbsent("2.delta", io.strata.objectstore.ObjectBody.of(new byte[] {3, 4}));
      o.putIfAbsent("2.snapshot", io.strata.objectstore.ObjectBody.of(new byte[] {5}));
    }
    Map<String, byte[]> before = bucketFiles();
    try (SyncedStore s = open(loc, "hdfs")) {
      StateLoadException e = assertThrows(StateLoadException.class,
          () -> s.load(2, Optional.empty()));
      assertTrue(e.getMessage().contains("0/0/default") && e.getMessage().contains("version 2"),
          e.getMessage());
      assertTrue(e.getMessage().contains("written by another state store provider"),
          e.getMessage());
      assertTrue(e.getMessage().contains("HDFSBackedStateStoreProvider"), e.getMessage());
      assertTrue(e.getMessage().contains(loc + "/2."), e.getMessage());
    }
    assertUnchanged(before);
  }

  @Test
  void checkpointOfSparksRocksDbProviderIsRefusedAndLeftAlone() throws Exception {
    String loc = "s3://" + BUCKET + "/rocksdb/state/0/0";
    try (ObjectStore o = ObjectStores.open(loc, s3(ACCESS_KEY, SECRET_KEY), null)) {
      o.putIfAbsent("1.changelog", io.strata.objectstore.ObjectBody.of(new byte[] {1}));
      o.putIfAbsent("2.changelog", io.strata.objectstore.ObjectBody.of(new byte[] {2}));
      o.putIfAbsent("2.zip", io.strata.objectstore.ObjectBody.of(new byte[] {3}));
    }
    Map<String, byte[]> before = bucketFiles();
    try (SyncedStore s = open(loc, "rocksdb")) {
      StateLoadException e = assertThrows(StateLoadException.class,
          () -> s.load(2, Optional.empty()));
      assertTrue(e.getMessage().contains("RocksDBStateStoreProvider"), e.getMessage());
      assertTrue(e.getMessage().contains("written by another state store provider"),
          e.getMessage());
    }
    assertUnchanged(before);
  }

  /** Rewrites version {@code v}'s object with its manifest's formatVersion set to 99. */
  private static void newerManifest(String name, long v) throws IOException {
    Path f = server.dataDir().resolve(BUCKET).resolve(name + "/state/0/0/"
        + StoreLayout.versionObject(v));
    byte[] all = Files.readAllBytes(f);
    ByteBuffer footer = ByteBuffer.wrap(all, all.length - VersionObjectCodec.FOOTER_BYTES,
        VersionObjectCodec.FOOTER_BYTES);
    footer.position(footer.position() + 12);
    long off = footer.getLong();
    int len = footer.getInt();
    String json = new String(all, (int) off, len, StandardCharsets.UTF_8);
    assertTrue(json.contains("\"formatVersion\":1"), json);
    byte[] manifest = json.replace("\"formatVersion\":1", "\"formatVersion\":99")
        .getBytes(StandardCharsets.UTF_8);
    byte[] tail = VersionObjectCodec.manifestAndFooter(manifest, off);
    byte[] out = Arrays.copyOf(all, (int) off + tail.length);
    System.arraycopy(tail, 0, out, (int) off, tail.length);
    Files.write(f, out);
  }

  @Test
  void newerManifestFormatIsRefusedAndNothingIsOverwritten() throws Exception {
    String loc = "s3://" + BUCKET + "/newer/state/0/0";
    commitVersions(loc, 2);
    newerManifest("newer", 2);
    Map<String, byte[]> before = bucketFiles();
    try (SyncedStore s = open(loc, "newer")) {
      StateLoadException e = assertThrows(StateLoadException.class,
          () -> s.load(2, Optional.empty()));
      assertEquals(StateLoadException.Reason.CORRUPT, e.reason());
      assertTrue(e.getMessage().contains("0/0/default") && e.getMessage().contains("version 2"),
          e.getMessage());
      assertTrue(e.getMessage().contains(loc + "/" + StoreLayout.versionObject(2)),
          e.getMessage());
      assertTrue(e.getMessage().contains("written by a newer Strata (manifest format version 99)"),
          e.getMessage());
      // an older writer that rebuilds version 2 cannot replace the newer one: create-only
      s.load(1, Optional.empty());
      s.put(b("key-0"), b("older"));
      assertThrows(IOException.class, s::commit);
    }
    assertUnchanged(before);
  }

  @Test
  void newerVersionObjectFooterIsRefusedAndNothingIsOverwritten() throws Exception {
    String loc = "s3://" + BUCKET + "/newer-footer/state/0/0";
    commitVersions(loc, 2);
    Path f = server.dataDir().resolve(BUCKET).resolve("newer-footer/state/0/0/"
        + StoreLayout.versionObject(2));
    byte[] all = Files.readAllBytes(f);
    ByteBuffer.wrap(all).putInt(all.length - VersionObjectCodec.FOOTER_BYTES + 8, 7);
    Files.write(f, all);
    Map<String, byte[]> before = bucketFiles();
    try (SyncedStore s = open(loc, "newer-footer")) {
      StateLoadException e = assertThrows(StateLoadException.class,
          () -> s.load(2, Optional.empty()));
      assertTrue(e.getMessage().contains("written by a newer Strata (version object footer "
          + "version 7"), e.getMessage());
      assertTrue(e.getMessage().contains(loc + "/" + StoreLayout.versionObject(2)),
          e.getMessage());
    }
    assertUnchanged(before);
  }

  /** Collects every log event (message and stack trace) while open. */
  private static final class Capture extends AbstractAppender implements AutoCloseable {
    final List<String> lines = new CopyOnWriteArrayList<>();
    private final Level strataLevel = LogManager.getLogger("io.strata").getLevel();
    private final Level sdkLevel = LogManager.getLogger("software.amazon.awssdk").getLevel();
    private final Level httpLevel = LogManager.getLogger("org.apache.hc").getLevel();

    Capture() {
      super("strata-capture-" + System.nanoTime(), null, null, true, Property.EMPTY_ARRAY);
      start();
      LoggerContext ctx = (LoggerContext) LogManager.getContext(false);
      ctx.getConfiguration().getRootLogger().addAppender(this, Level.ALL, null);
      Configurator.setLevel("io.strata", Level.DEBUG);
      Configurator.setLevel("software.amazon.awssdk", Level.DEBUG);
      Configurator.setLevel("org.apache.hc", Level.INFO);
      ctx.updateLoggers();
    }

    @Override
    public void append(LogEvent event) {
      StringBuilder sb = new StringBuilder(event.getLoggerName()).append(": ")
          .append(event.getMessage().getFormattedMessage());
      if (event.getThrown() != null) {
        sb.append('\n').append(stackTrace(event.getThrown()));
      }
      lines.add(sb.toString());
    }

    @Override
    public void close() {
      LoggerContext ctx = (LoggerContext) LogManager.getContext(false);
      ctx.getConfiguration().getRootLogger().removeAppender(getName());
      Configurator.setLevel("io.strata", strataLevel);
      Configurator.setLevel("software.amazon.awssdk", sdkLevel);
      Configurator.setLevel("org.apache.hc", httpLevel);
      ctx.updateLoggers();
      stop();
    }
  }

  private static String stackTrace(Throwable t) {
    StringWriter w = new StringWriter();
    t.printStackTrace(new PrintWriter(w));
    return w.toString();
  }

  private static void assertNoSecret(String what, String text) {
    assertFalse(text.contains(SECRET_KEY), what + " contains the secret key: " + text);
    assertFalse(text.contains(ACCESS_KEY), what + " contains the access key id: " + text);
  }

  @Test
  void credentialsNeverAppearInLogsMessagesOrMetrics() throws Exception {
    List<String> texts = new ArrayList<>();
    List<RequestListener.Request> requests = new CopyOnWriteArrayList<>();
    String loc = "s3://" + BUCKET + "/secrets/state/0/0";
    try (Capture capture = new Capture()) {
      S3Settings good = s3(ACCESS_KEY, SECRET_KEY);
      texts.add(good.toString());
      StrataConf conf = StrataConf.from(Map.of(StrataConf.PREFIX + "s3.accessKeyId", ACCESS_KEY,
          StrataConf.PREFIX + "s3.secretAccessKey", SECRET_KEY), Map.of());
      texts.add(conf.toString());
      texts.add(conf.s3().toString());
      try (SyncedStore s = open(loc, good, "secrets", requests)) {
        s.load(0, Optional.empty());
        for (int v = 1; v <= 4; v++) {
          s.put(b("key-" + v), b("v" + v));
          CommitResult c = s.commit();
          texts.add(c.stats().toString());
          s.maintenance();
        }
        texts.add(s.collectGarbage().toString());
      }
      try (SyncedStore r = open(loc, good, "secrets-restore", requests)) {
        r.load(4, Optional.empty());
        texts.add(r.lastRestore().toString());
        assertArrayEquals(b("v4"), r.get(b("key-4")));
      }
      // wrong secret, wrong key id: failed requests, their logs and messages
      for (S3Settings wrong : List.of(s3(ACCESS_KEY, SECRET_KEY + "-wrong"),
          s3("AKIAOTHERKEYFORTEST0", SECRET_KEY))) {
        try (SyncedStore s = open(loc, wrong, "secrets-wrong", requests)) {
          IOException e = assertThrows(IOException.class, () -> s.load(4, Optional.empty()));
          texts.add(stackTrace(e));
          s.load(0, Optional.empty());
          s.put(b("k"), b("v"));
          texts.add(stackTrace(assertThrows(IOException.class, s::commit)));
        }
      }
      // a bad value for the secret settings is never echoed
      texts.add(assertThrows(IllegalArgumentException.class, () -> StrataConf.from(Map.of(
          StrataConf.PREFIX + "s3.secretAccessKey", SECRET_KEY), Map.of()).s3()).getMessage());
      texts.add(assertThrows(IllegalArgumentException.class, () -> StrataConf.from(Map.of(),
          Map.of("fs.s3a.endpoint", "http://" + ACCESS_KEY + ":" + SECRET_KEY + "@host:9000"))
          .s3()).getMessage());
      assertTrue(capture.lines.stream().anyMatch(l -> l.startsWith("io.strata")),
          "Strata's own log lines were captured: " + capture.lines.size());
      assertTrue(capture.lines.stream().anyMatch(l -> l.startsWith("software.amazon")),
          "the SDK's debug lines were captured");
      for (String line : capture.lines) {
        assertNoSecret("log line", line);
      }
    }
    for (String t : texts) {
      assertNoSecret("message or metric", t);
    }
    assertTrue(requests.size() > 10, "requests were recorded: " + requests.size());
    for (RequestListener.Request r : requests) {
      assertNoSecret("request metric", r.toString());
    }
  }
}
