// SPDX-License-Identifier: Apache-2.0
package io.strata.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import com.sun.net.httpserver.HttpServer;
import io.strata.testkit.ChildJvm;
import io.strata.testkit.S3Relay;
import io.strata.testkit.OnlyOnSparkLines;
import io.strata.testkit.S3ProxyServer;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import java.util.zip.ZipFile;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.security.alias.CredentialProvider;
import org.apache.hadoop.security.alias.CredentialProviderFactory;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.S3Object;

/**
 * The runtime jar as users run it (issue 41: the artifact, not the build's classes), each test a
 * child JVM on a user's class path with S3Proxy, one server for the class:
 *
 * <ul>
 *   <li>{@link #everyCredentialSourceAndNoneAtAllOnTheUsersClassPath} (every line): the line's
 *       Spark jars and the runtime jar only, Spark's and Hadoop's shipped defaults, a query under
 *       each credential source users rely on and with none at all;
 *   <li>{@link #sparkWithS3aAndTheRuntimeJarRunStatefulQueriesOnStrataExactly} (4.1 and 3.5):
 *       the runtime jar beside hadoop-aws and its unrelocated AWS SDK.
 * </ul>
 *
 * <p>With {@code RuntimeJarContentsIT} (what the jar holds, and the string constants its shading
 * rewrote), {@code PackagesResolveIT} (the jar resolved by its coordinates) and the standalone
 * cluster tests (the jar as the application jar on executors), these are the runtime jar's tests.
 */
class RuntimeJarIT {
  private static final String BUCKET = "strata-coexistence";
  private static final String CHECKPOINT = "ckpt/counts/";
  private static final String USER_BUCKET = "strata-user";
  private static final String S3A_ENDPOINT = "fs.s3a.endpoint=$ENDPOINT,"
      + "fs.s3a.endpoint.region=us-east-1,fs.s3a.path.style.access=true";
  private static final String FILE_MANAGER = "spark.sql.streaming.checkpointFileManagerClass="
      + "io.strata.checkpoint.StrataCheckpointFileManager";
  private static final String PROVIDERS = "fs.s3a.aws.credentials.provider=";
  /** key=count:sum after run 1 (two files) and run 2 (three). */
  static final String RUN1 = "a=2:4 b=2:6 c=1:5";
  static final String RUN2 = "a=3:14 b=2:6 c=1:5 d=1:20";

  /** Errors of a classpath clash; none may appear in the child's output. */
  static final List<String> CLASH_ERRORS = List.of("LinkageError", "NoSuchMethodError",
      "NoSuchFieldError", "NoClassDefFoundError", "ClassCastException",
      "IncompatibleClassChangeError", "AbstractMethodError", "ServiceConfigurationError");

  /** The input files: {@code key,n} rows; the stream reads one file per batch. */
  static final Map<String, String> INPUT = Map.of(
      "input/part-0.csv", "a,1\nb,2\na,3\n",
      "input/part-1.csv", "b,4\nc,5\n",
      "input/part-2.csv", "a,6\nc,7\nc,8\n");
  /** Appended to the input between the two runs. */
  static final Map<String, String> STAGING = Map.of("staging/part-3.csv", "a,10\nd,20\n");
  /** key=count:sum over the three input files. */
  static final String BEFORE = "a=3:10 b=2:6 c=3:20";
  /** key=count:sum over all four files. */
  static final String AFTER = "a=4:20 b=2:6 c=3:20 d=1:20";

  @TempDir Path work;
  @TempDir static Path serverDir;
  /**
   * The class's S3 server. Temporary credentials (web identity's) come with a session token,
   * whose header S3Proxy refuses (501) unless told to ignore headers it does not implement; it
   * still verifies the signature, which covers the token.
   */
  static S3ProxyServer s3;

  @BeforeAll
  static void startServer() throws Exception {
    s3 = S3ProxyServer.start(serverDir.resolve("s3"),
        Map.of("s3proxy.ignore-unknown-headers", "true"));
  }

  @AfterAll
  static void stopServer() {
    if (s3 != null) {
      s3.close();
    }
  }

  /**
   * Strata's runtime jar next to Spark and Hadoop S3A in one JVM, as in a Spark installation with
   * hadoop-aws: a child JVM whose classpath is Spark and its dependencies (the build's compile
   * classpath, provided scope included, without what the runtime jar bundles), hadoop-aws with the
   * AWS SDK bundle it depends on (another SDK version than Strata's, unrelocated), the runtime jar,
   * and a directory holding only the job's class ({@link CoexistenceJob}); not Strata's classes or
   * test classes. The job reads its input through {@code s3a://} from S3Proxy and runs a stateful
   * streaming query with Strata's state store and checkpoint file manager on {@code s3://}, across a
   * restart that restores the state from S3. The test checks its answers exactly, the objects Strata
   * wrote, and that the child exits 0 without linkage errors. About a minute on 2 quiet cores.
   *
   * <p>On Spark 4.1: Spark's own Hadoop (3.4), hadoop-aws 3.4.2 and its SDK v2 bundle. On Spark 3.5,
   * as on an Amazon EMR 7 cluster: Hadoop 3.3.6 (EMR 7.0's Hadoop) in place of Spark's 3.3.4,
   * hadoop-aws 3.3.6 with the AWS SDK v1 bundle it depends on, and an unrelocated SDK v2 bundle
   * beside them (the build puts these in {@code strata.coexistence.dir/hadoop}; see the 3.5
   * module's pom).
   */
  @OnlyOnSparkLines(value = {"4.1", "3.5"},
      reason = "needs the 640 MB AWS SDK v2 bundle (and on 3.5 the 300 MB v1 bundle of EMR 7's "
          + "Hadoop); the shading it checks is the same on each line (RuntimeJarContentsIT runs on "
          + "every line)")
  @Test
  void sparkWithS3aAndTheRuntimeJarRunStatefulQueriesOnStrataExactly() throws Exception {
    assumeFalse(Boolean.getBoolean("strata.coexistence.skip"), "this module does not fetch "
        + "hadoop-aws and its SDK bundles (coexistence.skip in its pom): Spark 3.5 runs this test "
        + "in its Scala 2.12 module, whose jar differs from this one's only in Scala");
    Path jar = RuntimeJarContentsIT.runtimeJar();
    List<String> classpath = childClasspath(jar);
    assertOnlyCopies(classpath, jar);

    Path log = Files.createDirectories(Path.of("target", "coexistence-it-logs"))
        .resolve("child.log");
    {
      s3.createBucket(BUCKET);
      try (S3Client client = s3.client()) {
        Map<String, String> files = new LinkedHashMap<>(INPUT);
        files.putAll(STAGING);
        files.forEach((key, body) -> client.putObject(b -> b.bucket(BUCKET).key(key),
            RequestBody.fromString(body, StandardCharsets.UTF_8)));
      }
      Path jobWork = Files.createDirectories(work.resolve("job"));
      String out = ranToTheEnd(ChildJvm.start(String.join(File.pathSeparator, classpath),
          CoexistenceJob.class, log, s3.endpoint().toString(), S3ProxyServer.ACCESS_KEY,
          S3ProxyServer.SECRET_KEY, BUCKET, jobWork.toString()), 600);

      // The Hadoop and hadoop-aws the test put on the path are the ones the job ran on.
      String hadoop = hadoopVersion(classpath);
      assertEquals(hadoop, line(out, "HADOOP"), "Hadoop's version in the child");
      assertEquals("hadoop-aws-" + hadoop + ".jar", line(out, "S3A_JAR"), "where S3A came from");

      // Exact answers: the batch queries through S3A, the stream through Strata's state.
      assertEquals(BEFORE, line(out, "RESULT batch-before"), "batch count through s3a");
      assertEquals(BEFORE, line(out, "RESULT run1"), "streaming totals after run 1");
      assertEquals("3", line(out, "BATCHES run1"), "one batch per input file");
      assertEquals(AFTER, line(out, "RESULT run2"), "streaming totals after the restart");
      assertEquals("1", line(out, "BATCHES run2"), "the appended file");
      assertEquals(AFTER, line(out, "RESULT batch-after"), "batch count through s3a");
      boolean spark4 = !io.strata.testkit.SparkLineCondition.currentLine().map("3.5"::equals)
          .orElse(false);
      if (spark4) {
        // The repartition job from the runtime jar, then the staging file once more.
        assertEquals("Repartitioned the state of batch 3 from 2 to 3 partitions as batch 4",
            line(out, "REPARTITION"), "the runtime jar's repartition job");
        assertEquals("a=5:30 b=2:6 c=3:20 d=2:40", line(out, "RESULT run3"),
            "streaming totals after the repartition, exact");
        assertEquals("1", line(out, "BATCHES run3"), "the appended file");
      } else {
        assertEquals("none", line(out, "REPARTITION"), "no repartition job on Spark 3.5");
      }

      // Strata's provider did the work: its own metrics, PUTs in run 1, a restore from S3 in run 2.
      assertTrue(metric(out, "run1", "strataS3Puts") > 0, "Strata's PUTs in run 1");
      // The commits' version objects by part (issue 45), in the runtime jar's metrics.
      assertTrue(metric(out, "run1", "strataCommitSstDataBytes") > 0
          && metric(out, "run1", "strataCommitSstFilterBytes") > 0
          && metric(out, "run1", "strataCommitManifestBytes") > 0, "version objects by part");
      assertTrue(metric(out, "run2", "strataRestoreBytes") > 0,
          "run 2 restored state from S3 (local state was deleted)");

      // And the checkpoint on S3 is Strata's: its version objects, Spark's logs as plain objects.
      Set<String> keys = new TreeSet<>();
      try (S3Client client = s3.client()) {
        client.listObjectsV2Paginator(b -> b.bucket(BUCKET).prefix(CHECKPOINT)).contents()
            .stream().map(S3Object::key).forEach(keys::add);
      }
      for (int partition = 0; partition < 2; partition++) {
        // checkpoint format 1 under a query run: version 4 in generation 1 (the first run)
        String v4 = CHECKPOINT + "state/0/" + partition
            + "/v/00000000000000000004/g0000000001.svo";
        assertTrue(keys.contains(v4), v4 + " in " + keys);
      }
      if (spark4) {
        // Batch 4 (the repartition's) wrote version 5 into the new third partition, and the
        // batch after it version 6.
        for (String v : new String[] {"5", "6"}) {
          String prefix = CHECKPOINT + "state/0/2/v/" + "0".repeat(20 - v.length()) + v + "/";
          assertTrue(keys.stream().anyMatch(k -> k.startsWith(prefix)), prefix + " in " + keys);
        }
      }
      for (int batch = 0; batch < 4; batch++) {
        assertTrue(keys.contains(CHECKPOINT + "offsets/" + batch), "offsets/" + batch);
        assertTrue(keys.contains(CHECKPOINT + "commits/" + batch), "commits/" + batch);
      }
    }
  }

  /**
   * The child's classpath: the job's class alone in a directory, Spark, hadoop-aws, the SDK
   * bundle, the runtime jar (the last three from the directory the build fills for this test).
   */
  private List<String> childClasspath(Path runtimeJar) throws IOException {
    String dir = System.getProperty("strata.coexistence.dir");
    assertNotNull(dir, "system property strata.coexistence.dir (set by the failsafe config)");
    Path pieces = Path.of(dir);
    Path bundle = pieces.resolve("aws-sdk-bundle.jar");
    assertTrue(Files.isRegularFile(bundle), "SDK bundle missing (mvn verify copies it): " + bundle);

    List<String> cp = new ArrayList<>();
    cp.add(jobClassesOnly(work).toString());
    Path hadoop = pieces.resolve("hadoop");
    if (Files.isDirectory(hadoop)) {
      // Another Hadoop than Spark's, with its hadoop-aws (Spark 3.5, as on EMR 7).
      for (String e : entries(pieces.resolve("spark.classpath"))) {
        if (!Path.of(e).getFileName().toString().startsWith("hadoop-client-")) {
          cp.add(e);
        }
      }
      try (Stream<Path> jars = Files.list(hadoop)) {
        jars.map(Path::toString).filter(n -> n.endsWith(".jar")).sorted().forEach(cp::add);
      }
      assertTrue(cp.stream().anyMatch(e -> e.contains("aws-java-sdk-bundle-")),
          "the SDK v1 bundle in " + hadoop);
    } else {
      cp.addAll(entries(pieces.resolve("spark.classpath")));
      cp.addAll(entries(pieces.resolve("hadoop-aws.classpath")));
    }
    cp.add(bundle.toString());
    cp.add(runtimeJar.toString());
    return cp;
  }

  /**
   * Waits for a child job and returns its output, after checking that it exited 0, printed
   * {@code DONE} and no class-path clash error.
   */
  static String ranToTheEnd(ChildJvm started, long seconds) throws Exception {
    int exit;
    try (ChildJvm child = started) {
      exit = child.await(seconds);
    }
    String out = Files.readString(started.log);
    assertEquals(0, exit, "child exit code; log " + started.log + ":\n" + tail(out));
    assertTrue(out.contains("\nDONE"), "the job ran to the end; log " + started.log);
    for (String e : CLASH_ERRORS) {
      assertTrue(!out.contains(e), e + " in the child's output; log " + started.log);
    }
    return out;
  }

  /** The version in the name of the child's {@code hadoop-client-api} jar. */
  private static String hadoopVersion(List<String> classpath) {
    List<String> names = classpath.stream().map(e -> Path.of(e).getFileName().toString())
        .filter(n -> n.startsWith("hadoop-client-api-") && n.endsWith(".jar")).toList();
    assertEquals(1, names.size(), "one hadoop-client-api jar on the child's path: " + names);
    String n = names.get(0);
    return n.substring("hadoop-client-api-".length(), n.length() - ".jar".length());
  }

  /** A directory with {@link CoexistenceJob}'s class files and nothing else. */
  static Path jobClassesOnly(Path work) throws IOException {
    return jobClassesOnly(work, CoexistenceJob.class);
  }

  /**
   * A directory with {@code job}'s class files (nested ones too) and {@link ChildJobs}'s, and
   * nothing else.
   */
  static Path jobClassesOnly(Path work, Class<?> job) throws IOException {
    Path from = Path.of(job.getProtectionDomain().getCodeSource().getLocation().getPath());
    String pkg = job.getPackageName().replace('.', '/');
    Path root = work.resolve("job-classes-" + job.getSimpleName());
    Path to = Files.createDirectories(root.resolve(pkg));
    try (Stream<Path> files = Files.list(from.resolve(pkg))) {
      for (Path f : files.toList()) {
        String n = f.getFileName().toString();
        for (String simple : List.of(job.getSimpleName(), ChildJobs.class.getSimpleName())) {
          if (n.equals(simple + ".class") || n.startsWith(simple + "$")) {
            Files.copy(f, to.resolve(n));
          }
        }
      }
    }
    return root;
  }

  static List<String> entries(Path classpathFile) throws IOException {
    assertTrue(Files.isRegularFile(classpathFile),
        "missing (mvn verify writes it): " + classpathFile);
    String cp = Files.readString(classpathFile).trim();
    assertTrue(!cp.isEmpty(), "empty: " + classpathFile);
    return Arrays.asList(cp.split(File.pathSeparator));
  }

  /**
   * The classpath has Strata's provider only in the runtime jar, an unrelocated S3 client only
   * in the SDK bundle, no unrelocated Apache HttpClient 5, and neither of the build's class
   * directories.
   */
  private static void assertOnlyCopies(List<String> classpath, Path runtimeJar)
      throws IOException {
    String provider = "io/strata/spark/StrataStateStoreProvider.class";
    String s3Client = "software/amazon/awssdk/services/s3/S3Client.class";
    String httpClient5 = "org/apache/hc/client5/http/impl/classic/CloseableHttpClient.class";
    Map<String, List<String>> where = new LinkedHashMap<>();
    for (String name : List.of(provider, s3Client, httpClient5)) {
      where.put(name, new ArrayList<>());
    }
    for (String entry : classpath) {
      Path p = Path.of(entry);
      assertTrue(!p.endsWith(Path.of("target", "classes"))
          && !p.endsWith(Path.of("target", "test-classes")), "build output on the path: " + p);
      for (String name : where.keySet()) {
        if (contains(p, name)) {
          where.get(name).add(p.getFileName().toString());
        }
      }
    }
    assertEquals(List.of(runtimeJar.getFileName().toString()), where.get(provider),
        "where the child finds Strata's provider");
    assertEquals(List.of("aws-sdk-bundle.jar"), where.get(s3Client),
        "where the child finds an unrelocated S3 client");
    assertEquals(List.of(), where.get(httpClient5), "unrelocated Apache HttpClient 5");
  }

  private static boolean contains(Path entry, String name) throws IOException {
    if (Files.isDirectory(entry)) {
      return Files.exists(entry.resolve(name));
    }
    if (!Files.isRegularFile(entry)) {
      return false;
    }
    try (ZipFile z = new ZipFile(entry.toFile())) {
      return z.getEntry(name) != null;
    }
  }

  /** The rest of the child's output line starting with {@code prefix + " "}. */
  static String line(String out, String prefix) {
    Matcher m = Pattern.compile("(?m)^" + Pattern.quote(prefix) + " (.*)$").matcher(out);
    assertTrue(m.find(), "no line '" + prefix + "' in the child's output:\n" + tail(out));
    return m.group(1).trim();
  }

  static long metric(String out, String step, String name) {
    Matcher m = Pattern.compile("(?m)^METRIC " + step + " " + name + "=(\\d+)$").matcher(out);
    assertTrue(m.find(), "no metric " + name + " for " + step + ":\n" + tail(out));
    return Long.parseLong(m.group(1));
  }

  static String tail(String out) {
    return out.length() <= 6000 ? out : out.substring(out.length() - 6000);
  }

  /**
   * On every Spark line: one child JVM ({@link UserJob}) whose class path is exactly the line's
   * Spark jars and the runtime jar (none of the build's classes, no hadoop-aws), with the
   * configuration defaults that line's Spark and Hadoop ship, runs a streaming aggregation with
   * Strata's provider under each set-up below, across a restart on wiped local state, and every
   * answer is checked exactly.
   *
   * <ul>
   *   <li>a {@code file:} checkpoint with nothing set but the provider class (issue 41's failing
   *       query), and one with S3A's provider list naming static keys that are not set (settings a
   *       cluster holds for other jobs);
   *   <li>an {@code s3://} checkpoint (Strata's checkpoint file manager too) on S3Proxy, whose
   *       credentials come from one source each, with only S3A's endpoint, region and path style
   *       set besides: Hadoop's default provider list (the environment variables, through the
   *       SDK's default chain), the SDK 2.x and 1.x environment provider class names, a profile
   *       file, a container-credentials endpoint served on loopback (S3A's IAM instance provider),
   *       web identity (a token file and a loopback STS answering AssumeRoleWithWebIdentity), and
   *       temporary keys kept in a JCEKS credential store ({@code
   *       hadoop.security.credential.provider.path}). With Hadoop's default list (read as unset),
   *       the keys Spark copies from the environment into {@code fs.s3a.access.key} and {@code
   *       fs.s3a.secret.key} answer, as they would for S3A.
   * </ul>
   *
   * <p>The child's environment holds the environment keys, the profile file, the container
   * endpoint and the web identity settings at once (as an EKS or ECS pod may). Every source hands
   * out S3Proxy's keys with a session token of its own, and a relay in front of S3Proxy records
   * the token of each request: every request of a scenario must carry its source's token. About
   * 30 seconds.
   */
  @Test
  void everyCredentialSourceAndNoneAtAllOnTheUsersClassPath() throws Exception {
    Path jar = RuntimeJarContentsIT.runtimeJar();
    List<String> classpath = new ArrayList<>();
    classpath.add(jobClassesOnly(work, UserJob.class).toString());
    classpath.addAll(entries(sparkClasspath()));
    classpath.add(jar.toString());
    assertUsersClassPath(classpath, jar);

    Path log = Files.createDirectories(Path.of("target", "runtime-jar-it-logs"))
        .resolve("user-job.log");
    // Every source hands out S3Proxy's keys (it knows one identity) with a session token of its
    // own, which S3Proxy ignores and the relay records: the token on a scenario's requests tells
    // which source signed them.
    try (Credentials creds = new Credentials(s3.accessKey(), s3.secretKey());
        S3Relay relay = new S3Relay(s3.endpoint(), null)) {
      s3.createBucket(USER_BUCKET);
      Path profile = work.resolve("aws-credentials");
      Files.writeString(profile, "[default]\naws_access_key_id = " + s3.accessKey()
          + "\naws_secret_access_key = " + s3.secretKey()
          + "\naws_session_token = token-profile\n");
      Path token = work.resolve("web-identity-token");
      Files.writeString(token, "eyJ.test.token");
      Path jceks = work.resolve("s3.jceks");
      writeJceks(jceks, s3.accessKey(), s3.secretKey(), "token-jceks");

      Map<String, String> env = new LinkedHashMap<>();
      env.put("AWS_ACCESS_KEY_ID", s3.accessKey());
      env.put("AWS_SECRET_ACCESS_KEY", s3.secretKey());
      env.put("AWS_SESSION_TOKEN", "token-environment");
      env.put("AWS_SHARED_CREDENTIALS_FILE", profile.toString());
      env.put("AWS_CONFIG_FILE", work.resolve("no-aws-config").toString());
      env.put("AWS_CONTAINER_CREDENTIALS_FULL_URI", creds.url() + "/container");
      env.put("AWS_WEB_IDENTITY_TOKEN_FILE", token.toString());
      env.put("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/strata-test");
      env.put("AWS_ROLE_SESSION_NAME", "strata-test");
      env.put("AWS_ENDPOINT_URL_STS", creds.url());
      env.put("AWS_REGION", "us-east-1");
      // Never the EC2 instance metadata service from a test machine.
      env.put("AWS_EC2_METADATA_DISABLED", "true");

      Map<String, String> scenarios = new LinkedHashMap<>();
      scenarios.put("file-nothing-set", "file:");
      scenarios.put("file-s3a-static-without-keys", "file:" + FILE_MANAGER + "," + PROVIDERS
          + "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider");
      scenarios.put("s3-hadoop-default", "s3:" + FILE_MANAGER + "," + S3A_ENDPOINT);
      scenarios.put("s3-env-v2", "s3:" + FILE_MANAGER + "," + S3A_ENDPOINT + "," + PROVIDERS
          + "software.amazon.awssdk.auth.credentials.EnvironmentVariableCredentialsProvider");
      scenarios.put("s3-env-v1", "s3:" + FILE_MANAGER + "," + S3A_ENDPOINT + "," + PROVIDERS
          + "com.amazonaws.auth.EnvironmentVariableCredentialsProvider");
      scenarios.put("s3-profile", "s3:" + FILE_MANAGER + "," + S3A_ENDPOINT + "," + PROVIDERS
          + "software.amazon.awssdk.auth.credentials.ProfileCredentialsProvider");
      scenarios.put("s3-container", "s3:" + FILE_MANAGER + "," + S3A_ENDPOINT + "," + PROVIDERS
          + "org.apache.hadoop.fs.s3a.auth.IAMInstanceCredentialsProvider");
      scenarios.put("s3-web-identity", "s3:" + FILE_MANAGER + "," + S3A_ENDPOINT + "," + PROVIDERS
          + "software.amazon.awssdk.auth.credentials.WebIdentityTokenFileCredentialsProvider");
      scenarios.put("s3-jceks", "s3:" + FILE_MANAGER + "," + S3A_ENDPOINT + "," + PROVIDERS
          + "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider,"
          + "hadoop.security.credential.provider.path=jceks://file" + jceks);
      // Two that must fail at the query's start, fast, with Spark-shaped messages (issue 46): a
      // bad setting value, and an endpoint that refuses connections.
      int closedPort;
      try (java.net.ServerSocket closed = new java.net.ServerSocket(0)) {
        closedPort = closed.getLocalPort();
      }
      scenarios.put("fail-bad-setting", "s3:" + FILE_MANAGER + "," + S3A_ENDPOINT
          + ",spark.sql.streaming.stateStore.strata.s3.maxAttempts=zero");
      scenarios.put("fail-refused-endpoint", "s3:" + FILE_MANAGER + "," + S3A_ENDPOINT
          + ",spark.sql.streaming.stateStore.strata.s3.endpoint=http://127.0.0.1:" + closedPort);
      List<String> args = new ArrayList<>(List.of(relay.endpoint().toString(), USER_BUCKET,
          Files.createDirectories(work.resolve("job")).toString()));
      scenarios.forEach((name, spec) -> args.add(name + ":" + spec));

      String out = ranToTheEnd(ChildJvm.start(String.join(File.pathSeparator, classpath),
          List.of(), env, UserJob.class.getName(), log, args.toArray(String[]::new)), 900);
      assertTrue(!out.contains(s3.secretKey()), "a secret in the child's output; log " + log);

      List<String> failed = new ArrayList<>();
      Matcher m = Pattern.compile("(?m)^FAILED (.*)$").matcher(out);
      while (m.find()) {
        if (!m.group(1).startsWith("fail-")) {
          failed.add(m.group(1));
        }
      }
      assertEquals(List.of(), failed, "scenarios that failed; log " + log);
      String bad = line(out, "FAILED fail-bad-setting");
      assertTrue(bad.contains("[INVALID_CONF_VALUE.REQUIREMENT] The value 'zero' in the config "
          + "\"spark.sql.streaming.stateStore.strata.s3.maxAttempts\" is invalid."), bad);
      assertTrue(!bad.contains("ERROR_LOADING_CLASS"), "not a class that failed to load: " + bad);
      String refused = line(out, "FAILED fail-refused-endpoint");
      // Spark's condition for a file it cannot read, raised from the query's start, where
      // nothing of Spark's wraps the error.
      assertTrue(refused.contains("[FAILED_READ_FILE.NO_HINT] Encountered error while reading "
          + "file s3://") && refused.endsWith("SQLSTATE: KD001"), refused);
      assertTrue(refused.contains("the endpoint cannot be reached")
          && refused.contains("http://127.0.0.1:" + closedPort)
          && refused.contains("spark.sql.streaming.stateStore.strata.s3.endpoint"), refused);
      long refusedMs = Long.parseLong(line(out, "ELAPSED fail-refused-endpoint"));
      assertTrue(refusedMs < 15_000, "a refused endpoint fails the query's start in seconds, "
          + "not after the SDK's back-off: " + refusedMs + " ms");
      Set<String> keys = new TreeSet<>();
      try (S3Client client = s3.client()) {
        client.listObjectsV2Paginator(b -> b.bucket(USER_BUCKET)).contents().stream()
            .map(S3Object::key).forEach(keys::add);
      }
      for (String name : scenarios.keySet()) {
        if (name.startsWith("fail-")) {
          continue;
        }
        assertEquals(RUN1, line(out, "RESULT " + name + "-run1"), name + ": run 1");
        assertEquals("2", line(out, "BATCHES " + name + "-run1"), name + ": batches of run 1");
        assertEquals(RUN2, line(out, "RESULT " + name + "-run2"), name + ": after the restart");
        assertEquals("1", line(out, "BATCHES " + name + "-run2"), name + ": batches of run 2");
        assertTrue(metric(out, name + "-run2", "strataRestoreBytes") > 0,
            name + ": run 2 restored its state from the checkpoint (local state was wiped)");
        boolean onS3 = name.startsWith("s3-");
        assertEquals(onS3, keys.contains(name + "/commits/2"), name + ": Spark's commit log on S3");
        assertEquals(onS3, keys.stream().anyMatch(k -> k.startsWith(name + "/state/0/")
            && k.endsWith(".svo")), name + ": Strata's version objects on S3");
      }
      assertTrue(creds.hits("/container") > 0, "the container endpoint was asked");
      assertTrue(creds.hits("sts") > 0, "STS was asked (web identity)");
      Map<String, Set<String>> tokens = new TreeMap<>();
      for (S3Relay.Seen seen : relay.seen()) {
        S3Relay.Request r = seen.request();
        int slash = r.key().indexOf('/');
        if (r.bucket().equals(USER_BUCKET) && slash > 0) {
          tokens.computeIfAbsent(r.key().substring(0, slash), k -> new TreeSet<>())
              .add(r.securityToken());
        }
      }
      Map<String, Set<String>> expected = new TreeMap<>();
      // Hadoop's default list read as unset; Spark copies AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY
      // and AWS_SESSION_TOKEN into fs.s3a.access.key, secret.key and session.token (as S3A
      // then reads them), so the static keys answer, with the environment's token.
      expected.put("s3-hadoop-default", Set.of("token-environment"));
      expected.put("s3-env-v2", Set.of("token-environment"));
      expected.put("s3-env-v1", Set.of("token-environment"));
      expected.put("s3-profile", Set.of("token-profile"));
      expected.put("s3-container", Set.of("token-container"));
      expected.put("s3-web-identity", Set.of("token-web-identity"));
      expected.put("s3-jceks", Set.of("token-jceks"));
      assertEquals(expected, tokens, "the credentials source of each scenario's requests");
    }
  }

  /** The line's Spark jars and their dependencies (written by the build; see the pom). */
  static Path sparkClasspath() {
    String dir = System.getProperty("strata.coexistence.dir");
    assertTrue(dir != null, "system property strata.coexistence.dir (set by the failsafe config)");
    return Path.of(dir, "spark.classpath");
  }

  /**
   * The class path is a user's: Strata only in the runtime jar, no hadoop-aws, no AWS SDK or
   * HttpClient 5 outside it, none of the build's class directories.
   */
  static void assertUsersClassPath(List<String> classpath, Path runtimeJar) throws IOException {
    List<String> bad = new ArrayList<>();
    for (String entry : classpath.subList(1, classpath.size())) {
      Path p = Path.of(entry);
      String n = p.getFileName().toString();
      if (Files.isDirectory(p) || n.startsWith("hadoop-aws") || n.startsWith("strata-")
          && !p.equals(runtimeJar)) {
        bad.add(entry);
      } else if (!p.equals(runtimeJar) && Files.isRegularFile(p)) {
        try (ZipFile z = new ZipFile(p.toFile())) {
          for (String cls : List.of("io/strata/spark/StrataStateStoreProvider.class",
              "software/amazon/awssdk/core/SdkClient.class",
              "org/apache/hc/client5/http/impl/classic/CloseableHttpClient.class")) {
            if (z.getEntry(cls) != null) {
              bad.add(entry + " holds " + cls);
            }
          }
        }
      }
    }
    assertEquals(List.of(), bad, "not on a user's class path");
  }

  /** A JCEKS store with S3A's access and secret key, as {@code hadoop credential create} makes. */
  private static void writeJceks(Path file, String accessKey, String secretKey,
      String sessionToken) throws IOException {
    Configuration conf = new Configuration(false);
    conf.set(CredentialProviderFactory.CREDENTIAL_PROVIDER_PATH, "jceks://file" + file);
    CredentialProvider provider = CredentialProviderFactory.getProviders(conf).get(0);
    provider.createCredentialEntry("fs.s3a.access.key", accessKey.toCharArray());
    provider.createCredentialEntry("fs.s3a.secret.key", secretKey.toCharArray());
    provider.createCredentialEntry("fs.s3a.session.token", sessionToken.toCharArray());
    provider.flush();
  }

  /**
   * The credential sources that are servers, on loopback: the container credentials endpoint
   * ({@code GET /container}, the JSON ECS and EKS Pod Identity serve) and STS ({@code POST /}
   * with {@code Action=AssumeRoleWithWebIdentity}), both handing out S3Proxy's keys. Counts
   * requests by kind.
   */
  static final class Credentials implements AutoCloseable {
    private final HttpServer server;
    private final Map<String, AtomicInteger> hits = new ConcurrentHashMap<>();

    Credentials(String accessKey, String secretKey) throws IOException {
      server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
      server.createContext("/", exchange -> {
        String body;
        String type;
        try (InputStream in = exchange.getRequestBody()) {
          String request = new String(in.readAllBytes(), StandardCharsets.UTF_8);
          if (exchange.getRequestURI().getPath().equals("/container")) {
            hits.computeIfAbsent("/container", k -> new AtomicInteger()).incrementAndGet();
            type = "application/json";
            body = "{\"AccessKeyId\":\"" + accessKey + "\",\"SecretAccessKey\":\"" + secretKey
                + "\",\"Token\":\"token-container\",\"Expiration\":\"2099-01-01T00:00:00Z\"}";
          } else if (request.contains("Action=AssumeRoleWithWebIdentity")) {
            hits.computeIfAbsent("sts", k -> new AtomicInteger()).incrementAndGet();
            type = "text/xml";
            body = "<AssumeRoleWithWebIdentityResponse "
                + "xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\">"
                + "<AssumeRoleWithWebIdentityResult><Credentials>"
                + "<AccessKeyId>" + accessKey + "</AccessKeyId>"
                + "<SecretAccessKey>" + secretKey + "</SecretAccessKey>"
                + "<SessionToken>token-web-identity</SessionToken>"
                + "<Expiration>2099-01-01T00:00:00Z</Expiration></Credentials>"
                + "<AssumedRoleUser><Arn>arn:aws:sts::123456789012:assumed-role/strata-test/s"
                + "</Arn><AssumedRoleId>AROATEST:s</AssumedRoleId></AssumedRoleUser>"
                + "</AssumeRoleWithWebIdentityResult>"
                + "<ResponseMetadata><RequestId>1</RequestId></ResponseMetadata>"
                + "</AssumeRoleWithWebIdentityResponse>";
          } else {
            hits.computeIfAbsent("other", k -> new AtomicInteger()).incrementAndGet();
            exchange.sendResponseHeaders(404, -1);
            exchange.close();
            return;
          }
        }
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        exchange.getResponseHeaders().set("Content-Type", type);
        exchange.sendResponseHeaders(200, bytes.length);
        exchange.getResponseBody().write(bytes);
        exchange.close();
      });
      server.start();
    }

    String url() {
      return "http://127.0.0.1:" + server.getAddress().getPort();
    }

    int hits(String kind) {
      AtomicInteger n = hits.get(kind);
      return n == null ? 0 : n.get();
    }

    @Override
    public void close() {
      server.stop(0);
    }
  }
}
