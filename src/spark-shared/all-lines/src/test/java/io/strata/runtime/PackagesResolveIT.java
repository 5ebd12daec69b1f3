// SPDX-License-Identifier: Apache-2.0
package io.strata.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.strata.testkit.ChildJvm;
import io.strata.testkit.OnlyOnSparkLines;
import io.strata.testkit.S3ProxyServer;
import java.io.File;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.jar.Manifest;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * The runtime jar as users get it: resolved by its coordinates alone from the repository {@code
 * mvn deploy} wrote, as {@code spark-submit --packages io.strata:strata-spark-runtime-4.1_2.13:V
 * --repositories file:...} does. A child JVM runs Spark's own {@code SparkSubmit} with those two
 * options on a classpath of Spark, hadoop-aws and its SDK bundle, and nothing of Strata; its
 * {@code user.home} is an empty directory and its Ivy directory new, so neither the local Maven
 * repository nor an Ivy cache can supply the jar. The application ({@link CoexistenceJob}, in a
 * jar of its own) runs a stateful streaming query with Strata's state store and checkpoint file
 * manager on S3Proxy, across a restart that restores the state from S3, and the test checks its
 * answers exactly.
 *
 * <p>Runs only when {@code strata.packages.repo} names the deployed repository ({@code .ci/run}
 * deploys and then runs this test); {@code mvn verify} alone has nothing deployed to resolve.
 */
@OnlyOnSparkLines(value = {"4.1"},
    reason = "the resolution is the same on each line; one line's runtime jar proves it")
class PackagesResolveIT {
  private static final String BUCKET = "strata-packages";

  @TempDir Path work;

  @Test
  void sparkSubmitResolvesTheRuntimeJarByCoordinatesAndRunsAStatefulQueryExactly()
      throws Exception {
    String repo = System.getProperty("strata.packages.repo", "");
    assumeTrue(!repo.isBlank(), "strata.packages.repo unset: nothing deployed to resolve from");
    String coordinates = "io.strata:strata-spark-runtime-4.1_2.13:"
        + System.getProperty("strata.version");
    Path deployed = Path.of(java.net.URI.create(repo))
        .resolve("io/strata/strata-spark-runtime-4.1_2.13");
    assertTrue(Files.isDirectory(deployed), "mvn deploy wrote the runtime jar to " + deployed);

    String dir = System.getProperty("strata.coexistence.dir");
    Path pieces = Path.of(dir);
    List<String> classpath = new ArrayList<>();
    classpath.addAll(RuntimeJarIT.entries(pieces.resolve("spark.classpath")));
    classpath.addAll(RuntimeJarIT.entries(pieces.resolve("hadoop-aws.classpath")));
    classpath.add(pieces.resolve("aws-sdk-bundle.jar").toString());
    for (String e : classpath) {
      assertTrue(!Path.of(e).getFileName().toString().startsWith("strata-"),
          "Strata on the child's classpath: " + e);
    }
    Path appJar = appJar();
    Path home = Files.createDirectories(work.resolve("empty-home"));
    Path ivy = work.resolve("ivy");

    Path log = Files.createDirectories(Path.of("target", "packages-it-logs")).resolve("child.log");
    try (S3ProxyServer s3 = S3ProxyServer.start(work.resolve("s3"), Map.of())) {
      s3.createBucket(BUCKET);
      try (S3Client client = s3.client()) {
        Map<String, String> files = new LinkedHashMap<>(RuntimeJarIT.INPUT);
        files.putAll(RuntimeJarIT.STAGING);
        files.forEach((key, body) -> client.putObject(b -> b.bucket(BUCKET).key(key),
            RequestBody.fromString(body, StandardCharsets.UTF_8)));
      }
      Path jobWork = Files.createDirectories(work.resolve("job"));
      int exit;
      try (ChildJvm child = ChildJvm.start(String.join(File.pathSeparator, classpath),
          List.of("-Duser.home=" + home), "org.apache.spark.deploy.SparkSubmit", log,
          "--master", "local[2]",
          "--packages", coordinates,
          "--repositories", repo,
          "--conf", "spark.jars.ivy=" + ivy,
          "--class", CoexistenceJob.class.getName(),
          appJar.toString(),
          s3.endpoint().toString(), S3ProxyServer.ACCESS_KEY, S3ProxyServer.SECRET_KEY, BUCKET,
          jobWork.toString())) {
        exit = child.await(900);
      }
      String out = Files.readString(log);
      assertEquals(0, exit, "child exit code; log " + log + ":\n"
          + RuntimeJarIT.tail(out));
      assertTrue(out.contains("\nDONE"), "the job ran to the end; log " + log);
      for (String e : RuntimeJarIT.CLASH_ERRORS) {
        assertTrue(!out.contains(e), e + " in the child's output; log " + log);
      }
      // Ivy fetched the runtime jar from the deployed repository into the new Ivy directory.
      try (Stream<Path> jars = Files.walk(ivy)) {
        List<String> fetched = jars.map(p -> p.getFileName().toString())
            .filter(n -> n.startsWith("io.strata_strata-spark-runtime-4.1_2.13")
                && n.endsWith(".jar"))
            .toList();
        assertEquals(1, fetched.size(), "the runtime jar in " + ivy + ": " + fetched);
      }
      assertEquals(RuntimeJarIT.BEFORE,
          RuntimeJarIT.line(out, "RESULT run1"), "streaming totals after run 1");
      assertEquals(RuntimeJarIT.AFTER,
          RuntimeJarIT.line(out, "RESULT run2"), "streaming totals after the restart");
      assertTrue(RuntimeJarIT.metric(out, "run1", "strataS3Puts") > 0,
          "Strata's PUTs in run 1");
      assertTrue(RuntimeJarIT.metric(out, "run2", "strataRestoreBytes") > 0,
          "run 2 restored state from S3 (local state was deleted)");
    }
  }

  /** The application jar: {@link CoexistenceJob}'s classes and nothing else. */
  private Path appJar() throws IOException {
    Path classes = RuntimeJarIT.jobClassesOnly(work);
    Path jar = work.resolve("app.jar");
    Manifest manifest = new Manifest();
    manifest.getMainAttributes().putValue("Manifest-Version", "1.0");
    try (OutputStream out = Files.newOutputStream(jar);
        JarOutputStream j = new JarOutputStream(out, manifest);
        Stream<Path> files = Files.walk(classes)) {
      for (Path f : files.filter(Files::isRegularFile).toList()) {
        j.putNextEntry(new JarEntry(classes.relativize(f).toString().replace('\\', '/')));
        j.write(Files.readAllBytes(f));
        j.closeEntry();
      }
    }
    return jar;
  }
}
