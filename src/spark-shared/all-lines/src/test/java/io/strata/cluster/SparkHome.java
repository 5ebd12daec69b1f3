// SPDX-License-Identifier: Apache-2.0
package io.strata.cluster;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;
import java.util.zip.ZipFile;

/**
 * A Spark installation directory ({@code SPARK_HOME}) assembled from the jars on this test JVM's
 * class path, so a standalone master, workers and executors run from Maven artifacts alone (no
 * Spark distribution download).
 *
 * <p>Layout: {@code jars/} holds a symbolic link to every jar of the test class path except those
 * that contain Strata's own classes ({@code io/strata/}) and those of the libraries the runtime
 * jar bundles relocated (the AWS SDK, HttpClient 5, Reactive Streams); directories on the class
 * path (such as {@code target/classes}) are skipped too. Our code therefore reaches executors
 * only through the application jar ({@code spark.jars}), the runtime jar, which must bring its
 * own S3 client. {@code conf/} holds {@code log4j2.properties} (INFO to
 * standard error, from {@code io/strata/cluster/log4j2.properties}).
 *
 * <p>Why this is enough for the Worker to launch executors: Spark's launcher ({@code
 * WorkerCommandBuilder} → {@code AbstractCommandBuilder.buildClassPath}, checked in the 4.1.3
 * sources) puts {@code $SPARK_CONF_DIR} (default {@code $SPARK_HOME/conf}) and then {@code
 * $SPARK_HOME/jars/*} on the executor's class path; {@code CommandBuilderUtils.findJarsDir} takes
 * {@code $SPARK_HOME/jars} whenever that directory exists and only otherwise falls back to {@code
 * assembly/target/scala-2.13/jars}. A {@code RELEASE} file plays no part there (only {@code
 * SparkSubmitCommandBuilder} reads it, to find the examples jars), so none is written. The
 * launcher does need the Scala version, from {@code SPARK_SCALA_VERSION} or else a {@code
 * launcher/target/scala-2.13} build directory; {@link StandaloneCluster} sets the variable, as
 * Spark's {@code bin/load-spark-env.sh} does for a distribution.
 */
final class SparkHome {
  /** The Scala binary version of the Spark artifacts on the class path (2.12 or 2.13). */
  static final String SCALA_VERSION =
      scala.util.Properties$.MODULE$.versionNumberString().replaceAll("^(\\d+\\.\\d+).*", "$1");

  private final Path dir;
  private final List<Path> skipped;

  private SparkHome(Path dir, List<Path> skipped) {
    this.dir = dir;
    this.skipped = skipped;
  }

  /**
   * Deletes {@code dir} if it exists and assembles a fresh installation there.
   *
   * @param dir the directory to become {@code SPARK_HOME}, such as {@code
   *     target/cluster-it/spark-home}
   * @return the assembled installation
   * @throws IOException if the directory cannot be written or a class path jar cannot be read
   */
  static SparkHome assemble(Path dir) throws IOException {
    deleteRecursively(dir);
    Path jars = Files.createDirectories(dir.resolve("jars"));
    Path conf = Files.createDirectories(dir.resolve("conf"));
    try (InputStream log4j = SparkHome.class.getResourceAsStream("log4j2.properties")) {
      if (log4j == null) {
        throw new IOException("Cannot assemble SPARK_HOME: resource io/strata/cluster/"
            + "log4j2.properties is missing from the test class path");
      }
      Files.copy(log4j, conf.resolve("log4j2.properties"), StandardCopyOption.REPLACE_EXISTING);
    }
    List<Path> skipped = new ArrayList<>();
    String cp = System.getProperty("surefire.test.class.path",
        System.getProperty("java.class.path"));
    for (String entry : cp.split(File.pathSeparator)) {
      if (entry.isEmpty()) {
        continue;
      }
      Path p = Path.of(entry).toAbsolutePath();
      if (!Files.isRegularFile(p) || !p.getFileName().toString().endsWith(".jar")
          || containsStrataClasses(p) || bundledByRuntimeJar(p)) {
        skipped.add(p);
        continue;
      }
      Path link = jars.resolve(p.getFileName().toString());
      if (!Files.exists(link, LinkOption.NOFOLLOW_LINKS)) {
        Files.createSymbolicLink(link, p);
      }
    }
    return new SparkHome(dir.toAbsolutePath(), List.copyOf(skipped));
  }

  /** The installation directory (absolute), the value of {@code SPARK_HOME}. */
  Path dir() {
    return dir;
  }

  /** {@code $SPARK_HOME/conf}, the value of {@code SPARK_CONF_DIR}. */
  Path conf() {
    return dir.resolve("conf");
  }

  /**
   * Class path entries left out of {@code jars/}: directories, jars with Strata's classes and
   * jars the runtime jar bundles.
   */
  List<Path> skipped() {
    return skipped;
  }

  /** How many jars {@code jars/} holds. */
  long jarCount() throws IOException {
    try (Stream<Path> s = Files.list(dir.resolve("jars"))) {
      return s.count();
    }
  }

  /**
   * The class path of the master and worker JVMs, as Spark's {@code spark-class} builds it:
   * {@code conf/} first, then {@code jars/*} (the JVM expands the wildcard).
   */
  String daemonClassPath() {
    return conf() + File.pathSeparator + dir.resolve("jars") + File.separator + "*";
  }

  /**
   * True for a jar of a library the runtime jar bundles relocated (the AWS SDK, HttpClient 5,
   * Reactive Streams; by its local repository path): left out, so the executors can only run
   * if the runtime jar is self-contained, as on a Spark installation without the SDK.
   */
  private static boolean bundledByRuntimeJar(Path jar) {
    String path = jar.toString().replace(File.separatorChar, '/');
    return path.contains("/software/amazon/awssdk/")
        || path.contains("/org/apache/httpcomponents/client5/")
        || path.contains("/org/apache/httpcomponents/core5/")
        || path.contains("/org/reactivestreams/");
  }

  private static boolean containsStrataClasses(Path jar) {
    try (ZipFile z = new ZipFile(jar.toFile())) {
      return z.stream().anyMatch(e -> e.getName().startsWith("io/strata/"));
    } catch (IOException e) {
      throw new UncheckedIOException("Cannot read class path jar " + jar, e);
    }
  }

  /** Deletes {@code p} and everything under it; symbolic links are deleted, not followed. */
  static void deleteRecursively(Path p) throws IOException {
    if (!Files.exists(p, LinkOption.NOFOLLOW_LINKS)) {
      return;
    }
    try (Stream<Path> s = Files.walk(p)) {
      for (Path x : s.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(x);
      }
    }
  }
}
