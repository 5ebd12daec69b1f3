// SPDX-License-Identifier: Apache-2.0
package io.strata.checkpoint;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.config.StrataConf;
import io.strata.objectstore.RequestListener;
import io.strata.testkit.S3ProxyServer;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Collectors;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileAlreadyExistsException;
import org.apache.hadoop.fs.FileStatus;
import org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The checkpoint file manager's contract against a real S3-compatible server (S3Proxy): what
 * Spark's checkpoint code relies on (atomic create-only writes, "already exists", reads, seeks,
 * listings, deletes) and what each call costs in requests.
 */
class StrataCheckpointFileManagerIT {
  private static final String BUCKET = "ckpt-files";
  private static Path work;
  private static S3ProxyServer server;

  private final List<RequestListener.Request> requests = new CopyOnWriteArrayList<>();
  private AutoCloseable listening;
  private String root;
  private StrataCheckpointFileManager fm;

  @BeforeAll
  static void start() throws IOException {
    work = Files.createTempDirectory("strata-ckpt-fm-it");
    server = S3ProxyServer.start(work.resolve("s3"), Map.of());
    server.createBucket(BUCKET);
  }

  @AfterAll
  static void stop() {
    if (server != null) {
      server.close();
    }
  }

  static Configuration conf(S3ProxyServer server) {
    Configuration c = new Configuration(false);
    c.set(StrataConf.PREFIX + "s3.endpoint", server.endpoint().toString());
    c.set(StrataConf.PREFIX + "s3.pathStyleAccess", "true");
    c.set(StrataConf.PREFIX + "s3.accessKeyId", S3ProxyServer.ACCESS_KEY);
    c.set(StrataConf.PREFIX + "s3.secretAccessKey", S3ProxyServer.SECRET_KEY);
    return c;
  }

  @BeforeEach
  void open() {
    root = "s3a://" + BUCKET + "/q-" + UUID.randomUUID();
    fm = new StrataCheckpointFileManager(new org.apache.hadoop.fs.Path(root), conf(server));
    listening = CheckpointRequests.listen(requests::add);
  }

  @AfterEach
  void close() throws Exception {
    listening.close();
    fm.close();
  }

  private org.apache.hadoop.fs.Path p(String rel) {
    return new org.apache.hadoop.fs.Path(root + "/" + rel);
  }

  private List<String> summary() {
    return requests.stream().map(r -> r.kind() + (r.conditional() ? "(if-none-match)" : "")
        + " " + r.statusCode()).collect(Collectors.toList());
  }

  private static void write(CheckpointFileManager fm, org.apache.hadoop.fs.Path path,
      String text, boolean overwrite) throws IOException {
    CheckpointFileManager.CancellableFSDataOutputStream out = fm.createAtomic(path, overwrite);
    out.write(text.getBytes(StandardCharsets.UTF_8));
    out.close();
  }

  private String read(org.apache.hadoop.fs.Path path) throws IOException {
    try (FSDataInputStream in = fm.open(path)) {
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
  }

  @Test
  void aCreateOnlyWriteIsOneConditionalPutAndNeverOverwrites() throws Exception {
    write(fm, p("offsets/0"), "v1", false);
    assertEquals(List.of("PUT(if-none-match) 200"), summary());

    // A second writer (another manager, as another query instance would have).
    StrataCheckpointFileManager other =
        new StrataCheckpointFileManager(new org.apache.hadoop.fs.Path(root), conf(server));
    try {
      CheckpointFileManager.CancellableFSDataOutputStream out =
          other.createAtomic(p("offsets/0"), false);
      out.write("v2".getBytes(StandardCharsets.UTF_8));
      FileAlreadyExistsException e = assertThrows(FileAlreadyExistsException.class, out::close);
      assertTrue(e.getMessage().contains("offsets/0"), e.getMessage());
      out.cancel(); // as Spark's HDFSMetadataLog does after a failed close: a no-op
    } finally {
      other.close();
    }
    assertEquals("v1", read(p("offsets/0")), "the first write stands");

    requests.clear();
    write(fm, p("offsets/0"), "v3", true);
    assertEquals(List.of("PUT 200"), summary(), "overwriteIfPossible is a plain PUT");
    assertEquals("v3", read(p("offsets/0")));
  }

  @Test
  void cancelLeavesNothingBehindAndSendsNothing() throws Exception {
    CheckpointFileManager.CancellableFSDataOutputStream out =
        fm.createAtomic(p("commits/7"), false);
    out.write(new byte[1000]);
    out.cancel();
    out.close(); // after cancel: nothing
    assertEquals(List.of(), summary());
    assertFalse(fm.exists(p("commits/7")));
    assertEquals(0, fm.list(p("commits")).length);
  }

  @Test
  void aLargeFileIsBufferedOnDiskAndStillOnePut() throws Exception {
    byte[] big = new byte[AtomicPutOutputStream.MEMORY_LIMIT + 12345];
    new java.util.Random(7).nextBytes(big);
    CheckpointFileManager.CancellableFSDataOutputStream out =
        fm.createAtomic(p("sources/0/9.compact"), false);
    out.write(big);
    out.close();
    assertEquals(List.of("PUT(if-none-match) 200"), summary());
    try (FSDataInputStream in = fm.open(p("sources/0/9.compact"))) {
      assertArrayEquals(big, in.readAllBytes());
    }
  }

  @Test
  void openIsOneGetAndSeeksAndPositionedReadsWork() throws Exception {
    byte[] data = new byte[300_000];
    for (int i = 0; i < data.length; i++) {
      data[i] = (byte) (i * 31);
    }
    // written by another manager: this one has not seen the bytes
    StrataCheckpointFileManager writer =
        new StrataCheckpointFileManager(new org.apache.hadoop.fs.Path(root), conf(server));
    CheckpointFileManager.CancellableFSDataOutputStream out =
        writer.createAtomic(p("metadata"), false);
    out.write(data);
    out.close();
    writer.close();
    requests.clear();
    try (FSDataInputStream in = fm.open(p("metadata"))) {
      assertEquals(data[0], (byte) in.read());
      in.seek(100); // short forward seek: read and dropped, no request
      assertEquals(data[100], (byte) in.read());
      assertEquals(List.of("GET 200"), summary());
      in.seek(10); // backward: length (HEAD once), then a ranged GET on the next read
      byte[] buf = new byte[20];
      in.readFully(buf);
      assertArrayEquals(Arrays.copyOfRange(data, 10, 30), buf);
      byte[] at = new byte[5];
      in.readFully(299_990, at); // positioned read leaves the position alone
      assertArrayEquals(Arrays.copyOfRange(data, 299_990, 299_995), at);
      assertEquals(30, in.getPos());
      in.seek(data.length);
      assertEquals(-1, in.read());
      assertThrows(java.io.EOFException.class, () -> in.seek(data.length + 1));
    }
    assertThrows(FileNotFoundException.class, () -> fm.open(p("no-such-file")));
  }

  @Test
  void afterAListingExistsCostsNothingAndWritesAreOnePutEach() throws Exception {
    fm.mkdirs(p("offsets"));
    assertTrue(fm.exists(p("offsets")), "a directory this manager made exists for it");
    assertEquals(List.of(), summary(), "mkdirs sends nothing");
    assertEquals(0, fm.list(p("offsets")).length);
    requests.clear();
    for (int batch = 0; batch < 5; batch++) {
      // Spark's HDFSMetadataLog: exists(batch) then a create-only write
      assertFalse(fm.exists(p("offsets/" + batch)));
      write(fm, p("offsets/" + batch), "batch " + batch, false);
      assertTrue(fm.exists(p("offsets/" + batch)));
    }
    assertEquals(5, requests.size(), "one PUT per batch, no probe: " + summary());
    assertTrue(requests.stream().allMatch(r -> r.kind().equals("PUT") && r.conditional()));
    // Spark's file source reads each log entry back right after writing it: no request
    requests.clear();
    assertEquals("batch 4", read(p("offsets/4")));
    assertEquals(List.of(), summary(), "a create-only file this manager wrote is read from memory");

    // purge: a known object is one DeleteObjects
    requests.clear();
    fm.delete(p("offsets/0"));
    assertEquals(List.of("DELETE 200"), summary());
    assertFalse(fm.exists(p("offsets/0")));
    FileStatus[] left = fm.list(p("offsets"));
    assertEquals(List.of("1", "2", "3", "4"), Arrays.stream(left)
        .map(s -> s.getPath().getName()).sorted().toList());
    assertTrue(Arrays.stream(left).allMatch(FileStatus::isFile));
    assertEquals(root + "/offsets/1", left[0].getPath().toString(),
        "paths keep the caller's scheme");
  }

  @Test
  void withoutAListingExistsIsOneListAndSeesFilesAndDirectories() throws Exception {
    write(fm, p("state/0/_metadata/metadata"), "m", false);
    write(fm, p("metadata"), "id", false);
    StrataCheckpointFileManager fresh =
        new StrataCheckpointFileManager(new org.apache.hadoop.fs.Path(root), conf(server));
    try {
      requests.clear();
      // Written by this JVM, and no listing of its directory since: no request (issue 43: a
      // store whose listings lag behind its writes would answer a LIST "no").
      assertTrue(fresh.exists(p("metadata")), "an object this JVM wrote");
      assertEquals(List.of(), summary());
      assertTrue(fresh.exists(p("state")), "a directory (keys under it)");
      assertTrue(fresh.exists(p("state/0/_metadata")));
      assertFalse(fresh.exists(p("state/1")));
      assertFalse(fresh.exists(p("meta")), "a prefix of a key is not a path");
      assertEquals(4, requests.size(), summary().toString());
      assertTrue(requests.stream().allMatch(r -> r.kind().equals("LIST")), summary().toString());
      FileStatus[] top = fresh.list(new org.apache.hadoop.fs.Path(root));
      assertEquals(Map.of("metadata", false, "state", true), Arrays.stream(top)
          .collect(Collectors.toMap(s -> s.getPath().getName(), FileStatus::isDirectory)));
      // another manager's (stale) knowledge is not used: this one has not listed offsets/
      assertFalse(fresh.exists(p("offsets/0")));
    } finally {
      fresh.close();
    }
  }

  /**
   * Review of issue 43 (i43-adv2): a file this JVM wrote that another process deleted since (a
   * checkpoint removed by hand, or by a tool, before the query starts again in the same driver
   * JVM) does not exist for a new manager once the store's lag has passed, as with Spark's own
   * manager: Spark's {@code StreamMetadata.read} asks {@code exists(metadata)} and then reads it;
   * before, the answer stayed "yes" for ever and the start failed with FileNotFoundException
   * after 4.5 s of GETs. (The trust window, 10 s, is shortened to 200 ms here.)
   */
  @Test
  void aFileThisJvmWroteThatAnotherProcessDeletedIsGoneOnceTheLagHasPassed() throws Exception {
    write(fm, p("metadata"), "id", false);
    String key = root.substring(("s3a://" + BUCKET + "/").length()) + "/metadata";
    server.client().deleteObject(b -> b.bucket(BUCKET).key(key)); // another process
    long before = KnownKeys.JVM.ownWriteTrustMillis(200);
    StrataCheckpointFileManager fresh =
        new StrataCheckpointFileManager(new org.apache.hadoop.fs.Path(root), conf(server));
    try {
      Thread.sleep(300);
      assertFalse(fresh.exists(p("metadata")), "deleted by another process");
      write(fresh, p("metadata"), "id2", false); // Spark starts afresh
      try (FSDataInputStream in = fresh.open(p("metadata"))) {
        assertEquals("id2", new String(in.readAllBytes(), StandardCharsets.UTF_8));
      }
    } finally {
      KnownKeys.JVM.ownWriteTrustMillis(before);
      fresh.close();
    }
  }

  @Test
  void deleteIsRecursive() throws Exception {
    write(fm, p("state/0/_metadata/metadata"), "m", false);
    write(fm, p("state/0/_stateSchema/default/schema"), "s", false);
    write(fm, p("state/1/x"), "x", false);
    fm.delete(p("state/0"));
    assertFalse(fm.exists(p("state/0")));
    assertTrue(fm.exists(p("state/1/x")));
    fm.delete(p("does/not/exist")); // not an error
    assertThrows(IllegalArgumentException.class,
        () -> fm.delete(new org.apache.hadoop.fs.Path("s3a://" + BUCKET + "/")));
  }

  @Test
  void otherSchemesGoToSparksDefaultManager() throws Exception {
    Path dir = Files.createDirectories(work.resolve("local-ckpt"));
    StrataCheckpointFileManager local = new StrataCheckpointFileManager(
        new org.apache.hadoop.fs.Path(dir.toUri()), new Configuration());
    org.apache.hadoop.fs.Path f = new org.apache.hadoop.fs.Path(dir.toUri().toString() + "/f");
    write(local, f, "local", false);
    assertTrue(local.exists(f));
    assertTrue(local.isLocal());
    assertThrows(FileAlreadyExistsException.class, () -> write(local, f, "again", false));
    assertEquals(List.of(), summary(), "no S3 request for a file: checkpoint");
    assertEquals("local", Files.readString(dir.resolve("f")));
  }

  @Test
  void badSettingsNameTheKeyAndNeverTheSecret() {
    Configuration c = conf(server);
    c.set(StrataConf.PREFIX + "s3.pathStyleAccess", "maybe");
    // Not from the constructor, which Spark would report as a class that failed to load
    // (CANNOT_LOAD_CHECKPOINT_FILE_MANAGER.ERROR_LOADING_CLASS), but from its first call, as
    // Spark's condition for a bad setting value (issue 46).
    StrataCheckpointFileManager m =
        new StrataCheckpointFileManager(new org.apache.hadoop.fs.Path(root), c);
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> m.exists(new org.apache.hadoop.fs.Path(root)));
    assertTrue(e.getMessage().contains(StrataConf.PREFIX + "s3.pathStyleAccess"), e.getMessage());
    org.apache.spark.SparkThrowable t = (org.apache.spark.SparkThrowable) e;
    assertEquals("INVALID_CONF_VALUE.REQUIREMENT", t.getCondition());
    assertEquals("22022", t.getSqlState());
    assertEquals(StrataConf.PREFIX + "s3.pathStyleAccess",
        t.getMessageParameters().get("confName"));
    assertEquals("maybe", t.getMessageParameters().get("confValue"));
    IllegalArgumentException creds = assertThrows(IllegalArgumentException.class,
        () -> new StrataCheckpointFileManager(
            new org.apache.hadoop.fs.Path("s3a://AKID:SECRETVALUE@" + BUCKET + "/x"),
            conf(server)));
    assertFalse(creds.getMessage().contains("SECRETVALUE"), creds.getMessage());
  }

  @Test
  void aReadThatS3RefusesIsSparksFailedReadFileNamingTheObjectEndpointAndCredentials()
      throws Exception {
    // A bucket that does not exist, and a wrong secret: what a user meets at a query's start
    // (StreamMetadata.read), where nothing of Spark's wraps the error (issue 46).
    Configuration wrongSecret = conf(server);
    wrongSecret.set(StrataConf.PREFIX + "s3.secretAccessKey", "WRONG-SECRET-VALUE");
    String noBucket = "s3a://no-such-bucket-" + UUID.randomUUID().toString().substring(0, 8);
    Map<String, StrataCheckpointFileManager> cases = new java.util.LinkedHashMap<>();
    cases.put("no-such-bucket", new StrataCheckpointFileManager(
        new org.apache.hadoop.fs.Path(noBucket + "/q"), conf(server)));
    cases.put("wrong-secret",
        new StrataCheckpointFileManager(new org.apache.hadoop.fs.Path(root), wrongSecret));
    for (Map.Entry<String, StrataCheckpointFileManager> c : cases.entrySet()) {
      try (AutoCloseable closing = c.getValue()::close) {
        String base = c.getKey().equals("no-such-bucket") ? noBucket + "/q" : root;
        org.apache.hadoop.fs.Path metadata = new org.apache.hadoop.fs.Path(base + "/metadata");
        List<org.junit.jupiter.api.function.Executable> reads = List.of(
            () -> c.getValue().exists(metadata),
            () -> c.getValue().list(new org.apache.hadoop.fs.Path(base + "/offsets")),
            () -> c.getValue().open(metadata));
        for (org.junit.jupiter.api.function.Executable read : reads) {
          long t0 = System.nanoTime();
          CheckpointReadException e = assertThrows(CheckpointReadException.class, read);
          String m = e.getMessage();
          assertEquals("FAILED_READ_FILE.NO_HINT", e.getCondition(), c.getKey());
          assertEquals("KD001", e.getSqlState(), c.getKey());
          assertTrue(e.getMessageParameters().get("path").startsWith(base), m);
          assertTrue(m.startsWith("[FAILED_READ_FILE.NO_HINT] Encountered error while reading "
              + "file " + base) && m.endsWith(" SQLSTATE: KD001"), m);
          assertTrue(m.contains(server.endpoint().toString()), "the endpoint: " + m);
          assertTrue(c.getKey().equals("no-such-bucket") ? m.contains("no-such-bucket")
              : m.contains("access denied") && m.contains("static keys"), m);
          assertFalse(m.contains("WRONG-SECRET-VALUE"), m);
          assertTrue(System.nanoTime() - t0 < 10_000_000_000L, "not retried for long: " + m);
        }
      }
    }
  }
}
