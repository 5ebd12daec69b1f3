// SPDX-License-Identifier: Apache-2.0
package io.strata.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.testkit.ChildJvm;
import io.strata.testkit.OnlyOnSparkLines;
import io.strata.testkit.S3ProxyServer;
import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import java.util.zip.ZipFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.S3Object;

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
class RuntimeJarCoexistenceIT {
  private static final String BUCKET = "strata-coexistence";
  private static final String CHECKPOINT = "ckpt/counts/";
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

  @Test
  void sparkWithS3aAndTheRuntimeJarRunStatefulQueriesOnStrataExactly() throws Exception {
    Path jar = RuntimeJarContentsIT.runtimeJar();
    List<String> classpath = childClasspath(jar);
    assertOnlyCopies(classpath, jar);

    Path log = Files.createDirectories(Path.of("target", "coexistence-it-logs"))
        .resolve("child.log");
    try (S3ProxyServer s3 = S3ProxyServer.start(work.resolve("s3"), Map.of())) {
      s3.createBucket(BUCKET);
      try (S3Client client = s3.client()) {
        Map<String, String> files = new LinkedHashMap<>(INPUT);
        files.putAll(STAGING);
        files.forEach((key, body) -> client.putObject(b -> b.bucket(BUCKET).key(key),
            RequestBody.fromString(body, StandardCharsets.UTF_8)));
      }
      Path jobWork = Files.createDirectories(work.resolve("job"));
      int exit;
      try (ChildJvm child = ChildJvm.start(String.join(File.pathSeparator, classpath),
          CoexistenceJob.class, log, s3.endpoint().toString(), S3ProxyServer.ACCESS_KEY,
          S3ProxyServer.SECRET_KEY, BUCKET, jobWork.toString())) {
        exit = child.await(600);
      }
      String out = Files.readString(log);
      assertEquals(0, exit, "child exit code; log " + log + ":\n" + tail(out));
      assertTrue(out.contains("\nDONE"), "the job ran to the end; log " + log);
      for (String e : CLASH_ERRORS) {
        assertTrue(!out.contains(e), e + " in the child's output; log " + log);
      }

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

      // Strata's provider did the work: its own metrics, PUTs in run 1, a restore from S3 in run 2.
      assertTrue(metric(out, "run1", "strataS3Puts") > 0, "Strata's PUTs in run 1");
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
    Path from = Path.of(CoexistenceJob.class.getProtectionDomain().getCodeSource().getLocation()
        .getPath());
    String pkg = CoexistenceJob.class.getPackageName().replace('.', '/');
    Path to = Files.createDirectories(work.resolve("job-classes").resolve(pkg));
    String simple = CoexistenceJob.class.getSimpleName();
    try (Stream<Path> files = Files.list(from.resolve(pkg))) {
      for (Path f : files.toList()) {
        String n = f.getFileName().toString();
        if (n.equals(simple + ".class") || n.startsWith(simple + "$")) {
          Files.copy(f, to.resolve(n));
        }
      }
    }
    return work.resolve("job-classes");
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
}
