// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import static org.apache.spark.sql.functions.count;
import static org.apache.spark.sql.functions.expr;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.strata.config.StrataConf;
import io.strata.engine.SharedMemory;
import io.strata.format.Manifest;
import io.strata.format.ManifestCodec;
import io.strata.format.StoreLayout;
import io.strata.format.VersionObjectCodec;
import io.strata.objectstore.ObjectStore;
import io.strata.objectstore.ObjectStores;
import io.strata.sync.GcSettings;
import io.strata.sync.StoreIdentity;
import io.strata.sync.StoreSettings;
import io.strata.sync.SyncedStore;
import io.strata.testkit.OnlyOnSparkLines;
import io.strata.testkit.RepoRoot;
import io.strata.testkit.S3ProxyServer;
import java.io.File;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.spark.api.java.function.MapFunction;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.streaming.TimeMode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.NoSuchKeyException;

/**
 * Issue 18: the {@code strata} tool ({@code java -jar strata-tools-<version>.jar}, in a child
 * JVM, as an operator runs it) on checkpoints written by real queries: an aggregation, a
 * stream-stream join (four stores per partition) and transformWithState (column families), each
 * first checked exact against Spark's HDFS-backed provider across a restart on wiped local
 * disks ({@link StreamingComparison}). Healthy checkpoints describe, list their history, verify
 * (exit 0) and collect; damaged ones (a flipped byte, a truncated object, a deleted object a
 * manifest names) fail verify (exit 1) naming each object; a lost race (checkpoint format 2) is
 * counted; another provider's checkpoint, a newer manifest format, a missing bucket and refused
 * credentials give exit 3 with a clear message; {@code gc --apply} refuses a live-looking query
 * (exit 4); and the same jar runs through Spark's {@code spark-submit --class}.
 */
@OnlyOnSparkLines(value = {"4.1"}, reason = "the tool is Spark-free (strata-core's format); one "
    + "line writes the checkpoints it reads")
class StrataToolIT {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String HDFS = "org.apache.spark.sql.execution.streaming.state."
      + "HDFSBackedStateStoreProvider";

  @RegisterExtension
  static final StreamingComparison cmp =
      new StreamingComparison(2, StreamingComparison::recurringKeys, 4, 2);

  /** What one run of the tool printed, and its exit code. */
  record Run(int code, String out, String err) {
    JsonNode json() throws Exception {
      return JSON.readTree(out);
    }

    @Override
    public String toString() {
      return "exit " + code + "\n--- stdout\n" + out + "\n--- stderr\n" + err;
    }
  }

  /** A count per key, under {@code name}. */
  private static StreamingComparison.QueryDef aggregation(String name) {
    return new StreamingComparison.QueryDef(name, OutputMode.Update(),
        (in, right) -> in.groupBy("key").agg(count("*").as("n")));
  }

  // ------------------------------------------------------------------------------ healthy

  @Test
  @Timeout(900)
  void healthyCheckpointsOfRealQueriesDescribeVerifyAndCollect() throws Exception {
    StreamingComparison.Result agg = cmp.check(aggregation("tool-agg"), HDFS);
    // An abandoned spill delta of version 2 (as a batch that spilled and then failed leaves
    // one): garbage once older than the grace period.
    String spill = keyOf(agg.checkpoint()) + "/state/0/0/"
        + StoreLayout.spill(2, "01a23d8504b1-0000000000000bad", 1);
    try (S3Client s3 = cmp.harness().s3.client()) {
      put(s3, spill, new byte[1234]);
    }
    StreamingComparison.Result join = cmp.check(new StreamingComparison.QueryDef("tool-join",
        OutputMode.Append(), (in, right) -> in.withWatermark("ts", "10 seconds")
            .join(right.withWatermark("rts", "10 seconds"),
                expr("key = rkey AND rts >= ts AND rts <= ts + interval 10 seconds"))), HDFS);
    StreamingComparison.Result tws = cmp.check(new StreamingComparison.QueryDef("tool-tws",
        OutputMode.Update(), (in, r, run) -> in.withWatermark("ts", "10 seconds")
            .groupByKey((MapFunction<Row, String>) row -> row.getString(1), Encoders.STRING())
            .transformWithState(new TransformWithStateIT.EventTimeProcessor(),
                TimeMode.EventTime(), OutputMode.Update(), Encoders.STRING())
            .toDF("out"), Map.of()), SparkS3Harness.ROCKSDB_PROVIDER);
    Path conf = confFile();

    for (var q : List.of(Map.entry(agg, 2), Map.entry(join, 8), Map.entry(tws, 2))) {
      String ckpt = q.getKey().checkpoint();
      Run d = tool("describe", ckpt, "--conf-file", conf.toString(), "--json");
      assertEquals(0, d.code(), d::toString);
      JsonNode j = d.json();
      assertEquals(q.getValue().intValue(), j.get("stores").size(), () -> "stores: " + d);
      long commit = j.get("spark").get("latestCommitBatch").asLong();
      assertEquals(3, commit, "4 batches committed: " + d);
      assertEquals("agree", j.get("spark").get("logs").asText(), d::toString);
      for (JsonNode s : j.get("stores")) {
        assertEquals(commit + 1, s.get("newestVersion").asLong(), () -> "store " + s);
        assertEquals(0, s.get("lostRaces").asInt(), () -> "store " + s);
        assertEquals(1, s.get("checkpointFormat").asInt());
        assertTrue(s.get("epoch").asLong() >= 2, () -> "two query runs: " + s);
        assertTrue(s.get("objects").asInt() >= 4, () -> "store " + s);
      }
      Run text = tool("describe", ckpt, "--conf-file", conf.toString());
      assertEquals(0, text.code(), text::toString);
      String name = q.getKey() == agg ? "agg" : q.getKey() == join ? "join" : "tws";
      keep(name + "-describe", text);
      assertTrue(text.out().contains("logs: agree") && text.out().contains("LOST RACES")
          && text.out().contains("Totals: 1 operator,"), text::toString);

      Run v = tool("verify", ckpt, "--conf-file", conf.toString());
      assertEquals(0, v.code(), v::toString);
      assertTrue(v.out().contains("OK: no problems."), v::toString);
      keep(name + "-verify", v);
      keep(name + "-history", tool("history", ckpt, "--conf-file", conf.toString(),
          "--partition", "0"));
      keep(name + "-gc-dry-run", tool("gc", ckpt, "--conf-file", conf.toString(), "--dry-run"));

      Run h = tool("history", ckpt, "--conf-file", conf.toString(), "--partition", "0",
          "--json");
      assertEquals(0, h.code(), h::toString);
      List<Long> versions = new ArrayList<>();
      for (JsonNode row : h.json().get("versions")) {
        if (row.get("store").asText().equals(j.get("stores").get(0).get("store").asText())) {
          versions.add(row.get("version").asLong());
          assertTrue(row.get("readByLoad").asBoolean(), () -> "one object per version: " + h);
          assertTrue(row.get("restore").get("objects").asInt() >= 1, h::toString);
          assertEquals(row.get("version").asLong() - 1, row.get("parentVersion").asLong());
        }
      }
      assertEquals(List.of(1L, 2L, 3L, 4L), versions, h::toString);

      Run dry = tool("gc", ckpt, "--conf-file", conf.toString(), "--dry-run", "--json");
      assertEquals(0, dry.code(), dry::toString);
      assertEquals(0, dry.json().get("garbageObjects").asInt(),
          () -> "nothing old enough (grace period 1 h): " + dry);
      Run apply = tool("gc", ckpt, "--conf-file", conf.toString(), "--apply");
      assertEquals(4, apply.code(), "the query wrote a minute ago: " + apply);
      assertTrue(apply.err().contains("looks alive"), apply::toString);
      keep(name + "-gc-apply-refused", apply);
    }

    // The shortest grace period (1 min), once the abandoned spill is older than that: a dry
    // run names it and why, and --apply --force deletes it and nothing a load needs (the
    // retained versions' manifests still name deltas of every older version, so no version
    // object goes), for the aggregation. A minute passing is, to the tool, every object of the
    // checkpoint a minute older: their last-modified times in S3Proxy's store are moved back
    // by 65 s rather than the test waiting for it.
    ageObjects(agg.checkpoint(), 65_000);
    String[] shortGrace = {"--conf-file", conf.toString(),
        "--conf", "spark.sql.streaming.stateStore.strata.gc.gracePeriod=1min"};
    Run dry = tool(concat(new String[] {"gc", agg.checkpoint(), "--dry-run"}, shortGrace));
    assertEquals(0, dry.code(), dry::toString);
    assertTrue(dry.out().contains("spill/00000000000000000002-01a23d8504b1-0000000000000bad-1.sst")
        && dry.out().contains("a spill delta of version 2")
        && dry.out().contains("Would delete 1 object (1.2 KiB)"), dry::toString);
    keep("agg-gc-dry-run-short-grace", dry);
    // One thread: the round's manifest reads must not wait for the thread the round holds.
    Run forced = tool(concat(new String[] {"gc", agg.checkpoint(), "--apply", "--force",
        "--json", "--threads", "1"}, shortGrace));
    assertEquals(0, forced.code(), forced::toString);
    assertEquals(1, forced.json().get("deletedObjects").asInt(), forced::toString);
    assertEquals(1234, forced.json().get("deletedBytes").asInt(), forced::toString);
    keep("agg-gc-apply-forced", forced);
    try (S3Client s3 = cmp.harness().s3.client()) {
      assertThrows(NoSuchKeyException.class,
          () -> s3.headObject(b -> b.bucket(SparkS3Harness.BUCKET).key(spill)));
    }
    Run after = tool("verify", agg.checkpoint(), "--conf-file", conf.toString(),
        "--conf", "spark.sql.streaming.minBatchesToRetain=1");
    assertEquals(0, after.code(), after::toString);

    // Another provider's checkpoint (Spark's HDFS-backed provider, on the local disk).
    Run foreign = tool("describe", join.baselineCheckpoint());
    assertEquals(3, foreign.code(), foreign::toString);
    assertTrue(foreign.err().contains("Not a Strata checkpoint")
        && foreign.err().contains("HDFSBackedStateStoreProvider"), foreign::toString);
    keep("foreign-describe", foreign);

    // transformWithState's stores have column families; describe counts their keys.
    Run twsDescribe = tool("describe", tws.checkpoint(), "--conf-file", conf.toString(),
        "--json");
    for (JsonNode s : twsDescribe.json().get("stores")) {
      assertTrue(s.get("keys").asLong() >= 0, twsDescribe::toString);
    }
  }

  // ------------------------------------------------------------------------------ damaged

  @Test
  @Timeout(600)
  void damagedObjectsFailVerifyNamingEachObject() throws Exception {
    StreamingComparison.Result r = cmp.check(aggregation("tool-damaged"), HDFS);
    Path conf = confFile();
    String root = keyOf(r.checkpoint());
    List<String> keys;
    try (S3Client s3 = cmp.harness().s3.client()) {
      keys = s3.listObjectsV2Paginator(b -> b.bucket(SparkS3Harness.BUCKET).prefix(root
          + "/state/0/")).contents().stream().map(o -> o.key()).sorted().toList();
      // Partition 0: flip a byte inside the newest version object's delta.
      String flipped = newest(keys, "/state/0/0/v/");
      byte[] b = get(s3, flipped);
      b[8] ^= 0x40;
      put(s3, flipped, b);
      // Partition 1: truncate the newest version object (its footer is gone).
      String truncated = newest(keys, "/state/0/1/v/");
      byte[] t = get(s3, truncated);
      put(s3, truncated, Arrays.copyOf(t, t.length - 20));
      // Partition 0: delete version 2's object, whose delta version 3's manifest names.
      String deleted = keys.stream().filter(k -> k.contains("/state/0/0/v/00000000000000000002/"))
          .reduce((a, c) -> c).orElseThrow();
      s3.deleteObject(x -> x.bucket(SparkS3Harness.BUCKET).key(deleted));

      Run v = tool("verify", r.checkpoint(), "--conf-file", conf.toString(), "--json");
      assertEquals(1, v.code(), v::toString);
      String problems = v.json().get("problems").toString();
      for (String k : List.of(flipped, truncated, deleted)) {
        assertTrue(problems.contains(k.substring(root.length() + 1)), () -> k + " in " + v);
      }
      assertTrue(problems.contains("checksum mismatch"), v::toString);
      assertTrue(problems.contains("no version object of version 2"), v::toString);
      assertTrue(problems.contains("missing"), v::toString);
      assertFalse(v.json().get("ok").asBoolean());
      Run text = tool("verify", r.checkpoint(), "--conf-file", conf.toString());
      assertEquals(1, text.code(), text::toString);
      assertTrue(text.out().contains("4 problems:"), text::toString);
      keep("damaged-verify", text);

      // Spark's logs ahead of every store (a commit file of a later batch): gc collects none
      // of them, even forced with the smallest retention, and says why.
      put(s3, root + "/commits/30", get(s3, root + "/commits/3"));
      long before = objectCount(s3, root);
      Run ahead = tool("gc", r.checkpoint(), "--conf-file", conf.toString(), "--apply",
          "--force", "--conf", "spark.sql.streaming.minBatchesToRetain=1",
          "--conf", "spark.sql.streaming.stateStore.strata.gc.gracePeriod=1min");
      assertEquals(3, ahead.code(), ahead::toString);
      assertTrue(ahead.err().contains("Not collecting store 0/0/default"), ahead::toString);
      assertEquals(before, objectCount(s3, root), "nothing deleted: " + ahead);
      s3.deleteObject(x -> x.bucket(SparkS3Harness.BUCKET).key(root + "/commits/30"));
      // A store's directory is not a checkpoint: exit 3, saying so.
      Run level = tool("verify", r.checkpoint() + "/state/0/0", "--conf-file", conf.toString());
      assertEquals(3, level.code(), level::toString);
      assertTrue(level.err().contains("one store's directory"), level::toString);

      // A manifest of a newer format: describe says so, exit 3.
      String newer = newest(keys, "/state/0/1/v/");
      put(s3, newer, newerFormat(t));
      Run d = tool("describe", r.checkpoint(), "--conf-file", conf.toString());
      assertEquals(3, d.code(), d::toString);
      assertTrue(d.err().contains("written by a newer Strata"), d::toString);
      keep("newer-describe", d);
    }
  }

  // ------------------------------------------------------------------- races and settings

  @Test
  @Timeout(600)
  void aLostRaceInCheckpointFormat2IsCounted() throws Exception {
    StreamingComparison.Result r = cmp.check(new StreamingComparison.QueryDef("tool-format2",
        OutputMode.Update(), (in, right) -> in.groupBy("key").agg(count("*").as("n")),
        Map.of("spark.sql.streaming.stateStore.checkpointFormatVersion", "2")),
        SparkS3Harness.ROCKSDB_PROVIDER);
    Path conf = confFile();
    Run before = tool("describe", r.checkpoint(), "--conf-file", conf.toString(), "--json");
    assertEquals(0, before.code(), before::toString);
    JsonNode store = before.json().get("stores").get(0);
    assertEquals(2, store.get("checkpointFormat").asInt(), before::toString);
    long newest = store.get("newestVersion").asLong();

    // A second attempt of the newest version commits after the one the driver used (a zombie
    // task): it wins no race Spark sees, but its object stays, as in a real lost race.
    String location = r.checkpoint() + "/state/0/" + store.get("partition").asInt();
    StrataConf sc = StrataConf.from(strataConf(), Map.of());
    Manifest winner;
    try (ObjectStore objects = ObjectStores.open(location, sc.s3(), null);
        SyncedStore zombie = new SyncedStore(new StoreIdentity(0, store.get("partition").asInt(),
            "default", location), objects, cmp.harness().work.resolve("zombie"),
            new StoreSettings(1000, 2, 0, true, SharedMemory.Limits.DEFAULT, GcSettings.DEFAULT),
            "{}", "{}")) {
      winner = zombie.readManifest(newest, Optional.of(store.get("attempt").asText()));
      zombie.load(newest - 1, winner.parentAttempt());
      zombie.put(new byte[] {0, 0, 1}, new byte[] {2});
      zombie.commit();
    }
    Run after = tool("describe", r.checkpoint(), "--conf-file", conf.toString(), "--json");
    assertEquals(0, after.code(), after::toString);
    assertEquals(1, after.json().get("totals").get("lostRaces").asInt(), after::toString);
    // The zombie's attempt is the newest object, but Spark's commit log names the driver's,
    // which is what a load reads (Spark passes it as the checkpoint id).
    JsonNode again = after.json().get("stores").get(0);
    assertEquals(winner.attempt(), again.get("attempt").asText(), after::toString);
    Run h = tool("history", r.checkpoint(), "--conf-file", conf.toString(), "--partition",
        store.get("partition").asText(), "--last", "1");
    assertEquals(0, h.code(), h::toString);
    assertTrue(h.out().contains(winner.attempt()) && h.out().contains("other attempt"),
        h::toString);
    Run hj = tool("history", r.checkpoint(), "--conf-file", conf.toString(), "--partition",
        store.get("partition").asText(), "--last", "1", "--json");
    int read = 0;
    for (JsonNode row : hj.json().get("versions")) {
      assertEquals(row.get("attempt").asText().equals(winner.attempt()),
          row.get("readByLoad").asBoolean(), hj::toString);
      read += row.get("readByLoad").asBoolean() ? 1 : 0;
    }
    assertEquals(1, read, hj::toString);
    keep("format2-history", h);
    Run v = tool("verify", r.checkpoint(), "--conf-file", conf.toString());
    assertEquals(0, v.code(), "both attempts are loadable: " + v);
  }

  @Test
  @Timeout(600)
  void missingBucketAndRefusedCredentialsExit3WithoutTheSecret() throws Exception {
    Path conf = confFile();
    Run bucket = tool("describe", "s3a://no-such-bucket-" + System.nanoTime() + "/q",
        "--conf-file", conf.toString());
    assertEquals(3, bucket.code(), bucket::toString);
    assertTrue(bucket.err().contains("NoSuchBucket") || bucket.err().contains("404"),
        bucket::toString);
    String secret = "wrong-secret-" + System.nanoTime();
    Run creds = tool("describe", "s3a://" + SparkS3Harness.BUCKET + "/q", "--conf-file",
        conf.toString(), "--conf", StrataConf.S3_SECRET_KEY.fullKey() + "=" + secret);
    assertEquals(3, creds.code(), creds::toString);
    assertTrue(creds.err().contains("403"), creds::toString);
    assertFalse(creds.out().contains(secret) || creds.err().contains(secret), creds::toString);
    Run bad = tool("describe", "s3a://" + SparkS3Harness.BUCKET + "/q", "--conf-file",
        conf.toString(), "--conf", StrataConf.S3_MAX_ATTEMPTS.fullKey() + "=zero");
    assertEquals(2, bad.code(), bad::toString);
    assertTrue(bad.err().contains(StrataConf.S3_MAX_ATTEMPTS.fullKey()), bad::toString);
  }

  @Test
  @Timeout(600)
  void theSameJarRunsThroughSparkSubmit() throws Exception {
    StreamingComparison.Result r = cmp.check(aggregation("tool-submit"), HDFS);
    List<String> cp = new ArrayList<>();
    for (String e : System.getProperty("java.class.path").split(File.pathSeparator)) {
      // Spark and its dependencies, not Strata (the tool jar brings its own).
      if (!e.contains("io/strata") && !e.contains(File.separator + "target" + File.separator)) {
        cp.add(e);
      }
    }
    List<String> cmd = new ArrayList<>(List.of(java(), "-Xmx1g"));
    // The JVM flags Spark needs on Java 17, as this JVM has them.
    for (String a : ManagementFactory.getRuntimeMXBean().getInputArguments()) {
      if (a.startsWith("--add-opens") || a.startsWith("-XX:+IgnoreUnrecognizedVMOptions")
          || a.startsWith("-Djdk.reflect") || a.startsWith("-Dio.netty")) {
        cmd.add(a);
      }
    }
    cmd.addAll(List.of("-cp", String.join(File.pathSeparator, cp),
        "org.apache.spark.deploy.SparkSubmit", "--master", "local[1]",
        "--class", "io.strata.tools.StrataTool"));
    strataConf().forEach((k, v) -> cmd.addAll(List.of("--conf", k + "=" + v)));
    cmd.addAll(List.of(jar().toString(), "describe", r.checkpoint(), "--json"));
    Run d = exec(cmd);
    assertEquals(0, d.code(), d::toString);
    assertEquals(2, d.json().get("stores").size(), d::toString);
  }

  @Test
  void theJarIsSelfContainedRelocatedAndCarriesItsLicenses() throws Exception {
    List<String> unrelocated = new ArrayList<>();
    try (java.util.zip.ZipFile z = new java.util.zip.ZipFile(jar().toFile())) {
      z.stream().map(java.util.zip.ZipEntry::getName).filter(n -> n.endsWith(".class"))
          .filter(n -> !n.startsWith("io/strata/") && !n.startsWith("org/rocksdb/")
              && !n.startsWith("META-INF/versions/"))
          .limit(20).forEach(unrelocated::add);
      assertEquals(List.of(), unrelocated, "every bundled class is under io.strata.shaded "
          + "(RocksDB's JNI classes excepted)");
      assertTrue(z.getEntry("io/strata/tools/StrataTool.class") != null);
      assertTrue(z.getEntry("io/strata/shaded/picocli/CommandLine.class") != null);
      assertTrue(z.getEntry("librocksdbjni-linux64.so") != null, "RocksDB's native library");
      String license = new String(z.getInputStream(z.getEntry("META-INF/LICENSE"))
          .readAllBytes(), StandardCharsets.UTF_8);
      assertEquals(Files.readString(RepoRoot.resolve("src/tools/tools-jar/LICENSE")), license);
      assertTrue(new String(z.getInputStream(z.getEntry("META-INF/NOTICE")).readAllBytes(),
          StandardCharsets.UTF_8).contains("Strata"));
      String manifest = new String(z.getInputStream(z.getEntry("META-INF/MANIFEST.MF"))
          .readAllBytes(), StandardCharsets.UTF_8);
      assertTrue(manifest.contains("Main-Class: io.strata.tools.StrataTool"), manifest);
    }
    Run version = tool("--version");
    assertEquals(0, version.code(), version::toString);
    assertTrue(version.out().startsWith("strata-tools "), version::toString);
    // verify's own --version N leaves -h/--help working.
    Run help = tool("verify", "--help");
    assertEquals(0, help.code(), help::toString);
    assertTrue(help.out().contains("--version=N"), help::toString);
    Run usage = tool("describe");
    assertEquals(2, usage.code(), usage::toString);
    assertTrue(usage.err().contains("CHECKPOINT"), usage::toString);
  }

  // ------------------------------------------------------------------------------ helpers

  private static Map<String, String> strataConf() {
    String p = StrataConf.PREFIX;
    return Map.of(p + "s3.endpoint", cmp.harness().s3.endpoint().toString(),
        p + "s3.region", "us-east-1", p + "s3.pathStyleAccess", "true",
        p + "s3.accessKeyId", S3ProxyServer.ACCESS_KEY,
        p + "s3.secretAccessKey", S3ProxyServer.SECRET_KEY);
  }

  /** The S3 settings as a job's spark-defaults.conf has them. */
  private static Path confFile() throws Exception {
    Path f = cmp.harness().work.resolve("strata-tool.conf");
    StringBuilder sb = new StringBuilder();
    strataConf().forEach((k, v) -> sb.append(k).append(' ').append(v).append('\n'));
    Files.writeString(f, sb, StandardCharsets.UTF_8);
    return f;
  }

  private static Path jar() {
    Path jar = Paths.get(System.getProperty("strata.tools.jar"));
    assertTrue(Files.isRegularFile(jar), "the tools jar was built first: " + jar);
    return jar;
  }

  private static String java() {
    return Paths.get(System.getProperty("java.home"), "bin", "java").toString();
  }

  /** {@code java -jar strata-tools-<version>.jar args...}. */
  static Run tool(String... args) throws Exception {
    List<String> cmd = new ArrayList<>(List.of(java(), "-Xmx512m", "-XX:TieredStopAtLevel=1",
        "-jar", jar().toString()));
    cmd.addAll(Arrays.asList(args));
    return exec(cmd);
  }

  private static Run exec(List<String> cmd) throws Exception {
    Path dir = cmp.harness().work;
    Path out = Files.createTempFile(dir, "tool-out", ".txt");
    Path err = Files.createTempFile(dir, "tool-err", ".txt");
    Process p = new ProcessBuilder(cmd).redirectOutput(out.toFile()).redirectError(err.toFile())
        .start();
    if (!p.waitFor(180, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      throw new AssertionError("the tool did not finish in 180 s: " + cmd);
    }
    return new Run(p.exitValue(), Files.readString(out), Files.readString(err));
  }

  /**
   * Keeps what a run printed in {@code target/strata-tool-output/<name>.txt} (the README and
   * docs/operations.md show these).
   */
  /**
   * Makes every object of {@code checkpoint} {@code millis} older: their last-modified times in
   * the S3 server's file store (S3Proxy reports a file's modification time as the object's).
   */
  private static void ageObjects(String checkpoint, long millis) throws IOException {
    String prefix = checkpoint.substring(("s3a://" + SparkS3Harness.BUCKET + "/").length());
    Path dir = cmp.harness().s3.dataDir().resolve(SparkS3Harness.BUCKET).resolve(prefix);
    try (Stream<Path> files = Files.walk(dir)) {
      for (Path f : files.filter(Files::isRegularFile).toList()) {
        Files.setLastModifiedTime(f, FileTime.fromMillis(
            Files.getLastModifiedTime(f).toMillis() - millis));
      }
    }
  }

  private static void keep(String name, Run r) throws Exception {
    Path dir = Files.createDirectories(Paths.get("target", "strata-tool-output"));
    Files.writeString(dir.resolve(name + ".txt"), "$ strata ... (exit " + r.code() + ")\n"
        + r.out() + (r.err().isBlank() ? "" : "--- stderr\n" + r.err()));
  }

  private static String[] concat(String[] a, String[] b) {
    String[] out = Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, out, a.length, b.length);
    return out;
  }

  private static String keyOf(String checkpoint) {
    return checkpoint.substring(("s3a://" + SparkS3Harness.BUCKET + "/").length());
  }

  private static String newest(List<String> keys, String infix) {
    return keys.stream().filter(k -> k.contains(infix) && k.endsWith(".svo"))
        .reduce((a, c) -> c).orElseThrow(() -> new AssertionError("no " + infix + " in "
            + keys.stream().collect(Collectors.joining("\n"))));
  }

  private static long objectCount(S3Client s3, String root) {
    return s3.listObjectsV2Paginator(l -> l.bucket(SparkS3Harness.BUCKET).prefix(root + "/"))
        .contents().stream().count();
  }

  private static byte[] get(S3Client s3, String key) {
    return s3.getObjectAsBytes(b -> b.bucket(SparkS3Harness.BUCKET).key(key)).asByteArray();
  }

  private static void put(S3Client s3, String key, byte[] bytes) {
    s3.putObject(b -> b.bucket(SparkS3Harness.BUCKET).key(key), RequestBody.fromBytes(bytes));
  }

  /** {@code object} with its manifest's format version raised to 99 (footer recomputed). */
  private static byte[] newerFormat(byte[] object) throws Exception {
    VersionObjectCodec.Footer f = VersionObjectCodec.footer(object, object.length);
    String json = new String(VersionObjectCodec.manifestFromTail(object, f),
        StandardCharsets.UTF_8);
    ManifestCodec.decode(json.getBytes(StandardCharsets.UTF_8)); // a real manifest
    byte[] manifest = json.replaceFirst("\"formatVersion\"\\s*:\\s*\\d+", "\"formatVersion\":99")
        .getBytes(StandardCharsets.UTF_8);
    byte[] tail = VersionObjectCodec.manifestAndFooter(manifest, f.manifestOffset());
    byte[] out = Arrays.copyOf(object, (int) f.manifestOffset() + tail.length);
    System.arraycopy(tail, 0, out, (int) f.manifestOffset(), tail.length);
    return out;
  }
}
