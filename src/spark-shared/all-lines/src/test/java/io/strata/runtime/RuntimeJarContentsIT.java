// SPDX-License-Identifier: Apache-2.0
package io.strata.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.testkit.RepoRoot;
import io.strata.testkit.ShadedJarStrings;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Enumeration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.jar.Attributes;
import java.util.jar.JarFile;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import java.util.zip.ZipEntry;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * What the runtime jar holds (the jar the build wrote in {@code package}, named by the system
 * property {@code strata.runtime.jar}): Strata's classes (strata-core's and this Spark line's; not
 * the flights demo, not the test kit), the AWS SDK,
 * Apache HttpClient 5 and Reactive Streams relocated under {@code io/strata/shaded/}, and nothing
 * a Spark installation provides. Reads the jar only; runs in a few seconds.
 */
class RuntimeJarContentsIT {
  /** Where the bundled dependencies live inside the jar. */
  static final String SHADED = "io/strata/shaded/";
  /** The packages relocated under {@link #SHADED}, as class-file name prefixes. */
  static final List<String> RELOCATED =
      List.of("software/amazon/awssdk/", "org/apache/hc/", "org/reactivestreams/");
  /** What Spark provides: never in the jar, neither at its own name nor relocated. */
  static final List<String> SPARK_PROVIDED = List.of("org/apache/spark/", "scala/",
      "org/apache/hadoop/", "org/rocksdb/", "net/jpountz/", "org/slf4j/", "com/fasterxml/",
      "io/netty/");
  static final String PROVIDER = "io/strata/spark/StrataStateStoreProvider.class";
  static final String CHECKPOINT_FILE_MANAGER =
      "io/strata/checkpoint/StrataCheckpointFileManager.class";
  /** Packages of the examples and the test kit: never in the runtime jar. */
  static final List<String> NOT_PRODUCT = List.of("io/strata/demo/", "io/strata/bench/",
      "io/strata/testkit/");

  static JarFile jar;
  /** Every file entry (no directories), multi-release prefixes kept. */
  static List<String> entries;

  @BeforeAll
  static void open() throws IOException {
    jar = new JarFile(runtimeJar().toFile());
    entries = new ArrayList<>();
    for (Enumeration<? extends ZipEntry> e = jar.entries(); e.hasMoreElements(); ) {
      ZipEntry z = e.nextElement();
      if (!z.isDirectory()) {
        entries.add(z.getName());
      }
    }
  }

  @AfterAll
  static void close() throws IOException {
    jar.close();
  }

  /** The runtime jar the build wrote; fails when the property or the file is missing. */
  static Path runtimeJar() {
    String p = System.getProperty("strata.runtime.jar");
    assertNotNull(p, "system property strata.runtime.jar (set by the failsafe configuration)");
    Path jarPath = Path.of(p);
    assertTrue(Files.isRegularFile(jarPath), "runtime jar missing (mvn package): " + jarPath);
    return jarPath;
  }

  /** The entry's name without a multi-release prefix ({@code META-INF/versions/N/}). */
  static String unversioned(String name) {
    if (name.startsWith("META-INF/versions/")) {
      int slash = name.indexOf('/', "META-INF/versions/".length());
      return slash < 0 ? name : name.substring(slash + 1);
    }
    return name;
  }

  static List<String> classes() {
    return entries.stream().filter(n -> n.endsWith(".class")).map(RuntimeJarContentsIT::unversioned)
        .filter(n -> !n.equals("module-info.class")).toList();
  }

  /** At most 20 names, for messages. */
  static List<String> some(List<String> names) {
    return names.subList(0, Math.min(20, names.size()));
  }

  @Test
  void everyClassIsUnderIoStrataAndBundledOnesUnderIoStrataShaded() throws IOException {
    List<String> outside = classes().stream().filter(n -> !n.startsWith("io/strata/")).toList();
    assertEquals(List.of(), some(outside), "classes outside io/strata/");

    // Ours: the main source packages of strata-core and of the Spark-facing code.
    Set<String> ours = new TreeSet<>();
    for (Path main : List.of(RepoRoot.resolve("src", "core", "src", "main", "java"),
        RepoRoot.resolve("src", "spark-shared", "all-lines", "src", "main", "java"))) {
      try (Stream<Path> dirs = Files.list(main.resolve(Path.of("io", "strata")))) {
        dirs.filter(Files::isDirectory).map(d -> d.getFileName().toString()).forEach(ours::add);
      }
    }
    assertTrue(ours.contains("spark") && ours.contains("sync"), "Strata's packages: " + ours);
    List<String> neitherOursNorShaded = classes().stream()
        .filter(n -> !n.startsWith(SHADED))
        .filter(n -> !ours.contains(n.substring("io/strata/".length()).split("/")[0]))
        .toList();
    assertEquals(List.of(), some(neitherOursNorShaded),
        "classes neither in Strata's packages " + ours + " nor under " + SHADED);

    List<String> unexpectedShaded = classes().stream().filter(n -> n.startsWith(SHADED))
        .filter(n -> RELOCATED.stream().noneMatch(r -> n.startsWith(SHADED + r))).toList();
    assertEquals(List.of(), some(unexpectedShaded),
        "bundled classes other than the SDK, HttpClient 5 and Reactive Streams");
    for (String r : RELOCATED) {
      assertTrue(classes().stream().anyMatch(n -> n.startsWith(SHADED + r)),
          "no relocated classes of " + r);
    }
  }

  @Test
  void noSparkScalaHadoopRocksDbLz4Slf4jJacksonOrNetty() {
    Map<String, List<String>> found = new LinkedHashMap<>();
    for (String prefix : SPARK_PROVIDED) {
      List<String> hits = entries.stream().map(RuntimeJarContentsIT::unversioned)
          .filter(n -> n.startsWith(prefix) || n.startsWith(SHADED + prefix)).toList();
      if (!hits.isEmpty()) {
        found.put(prefix, some(hits));
      }
    }
    assertEquals(Map.of(), found, "entries of what Spark provides (or what Strata does not use)");
  }

  @Test
  void noUnrelocatedSdkHttpClientOrReactiveStreams() {
    List<String> hits = entries.stream().map(RuntimeJarContentsIT::unversioned)
        .filter(n -> n.startsWith("software/amazon/") || n.startsWith("org/apache/hc/")
            || n.startsWith("org/reactivestreams/") || n.startsWith("org/publicsuffix/"))
        .toList();
    assertEquals(List.of(), some(hits), "bundled entries at their original names");
  }

  @Test
  void onlyMetaInfAndIoStrataAtTheTop() {
    List<String> elsewhere = entries.stream()
        .filter(n -> !n.startsWith("io/strata/") && !n.startsWith("META-INF/")).toList();
    assertEquals(List.of(), elsewhere, "resources outside io/strata/ and META-INF/");
  }

  @Test
  void serviceFilesNameRelocatedClassesThatAreInTheJar() throws IOException {
    List<String> services = entries.stream().filter(n -> n.startsWith("META-INF/services/"))
        .toList();
    assertTrue(services.contains(
        "META-INF/services/io.strata.shaded.software.amazon.awssdk.http.SdkHttpService"),
        "the SDK's HTTP client SPI under its relocated name: " + services);
    List<String> bad = new ArrayList<>();
    for (String s : services) {
      String api = s.substring("META-INF/services/".length());
      if (!api.startsWith("io.strata.")) {
        bad.add(s + ": interface not relocated");
      }
      for (String line : read(s).split("\n")) {
        String impl = line.replaceAll("#.*", "").trim();
        if (impl.isEmpty()) {
          continue;
        }
        if (!impl.startsWith("io.strata.")) {
          bad.add(s + ": names " + impl);
        } else if (!entries.contains(impl.replace('.', '/') + ".class")) {
          bad.add(s + ": names " + impl + ", which is not in the jar");
        }
      }
    }
    assertEquals(List.of(), bad);
    assertTrue(read("META-INF/services/io.strata.shaded.software.amazon.awssdk.http.SdkHttpService")
        .contains("io.strata.shaded.software.amazon.awssdk.http.apache5.Apache5SdkHttpService"),
        "the Apache 5 client is the registered sync HTTP client");
  }

  /**
   * Every class refers to the bundled libraries by their relocated names only: no constant-pool
   * class name, descriptor or class-name literal names {@code software/amazon/awssdk}, {@code
   * org/apache/hc} or {@code org/reactivestreams} (a leftover would bind to the job's or Hadoop's
   * copy of the library, if there is one, or fail). Messages that mention such names are fine.
   */
  @Test
  void classesReferToBundledLibrariesByRelocatedNamesOnly() throws IOException {
    // A class-name literal as Class.forName takes it, e.g. "org.apache.hc.core5.Foo".
    Pattern dottedName = Pattern.compile("(" + String.join("|", RELOCATED.stream()
        .map(r -> Pattern.quote(r.replace('/', '.'))).toList()) + ")[\\w.$]*");
    List<String> bad = new ArrayList<>();
    for (String name : entries) {
      if (!name.endsWith(".class")) {
        continue;
      }
      for (String u : constantPoolNames(name)) {
        // Blank out the relocated names, then look for the original ones.
        String rest = u.replace(SHADED, "#/").replace(SHADED.replace('/', '.'), "#.");
        boolean refers = dottedName.matcher(rest).matches();
        for (String r : RELOCATED) {
          refers |= rest.startsWith(r) || rest.contains("L" + r);
        }
        if (refers) {
          bad.add(name + " -> " + u);
        }
      }
    }
    assertEquals(List.of(), some(bad));
  }

  /**
   * The SDK's global interceptor file is read at its relocated path, so interceptor files a job
   * ships for its own (unrelocated) SDK never reach Strata's S3 client.
   */
  @Test
  void theBundledSdkReadsOnlyItsRelocatedGlobalInterceptorFile() throws IOException {
    List<String> names = constantPoolNames(
        SHADED + "software/amazon/awssdk/core/interceptor/ClasspathInterceptorChainFactory.class");
    assertTrue(names.contains(SHADED + "software/amazon/awssdk/global/handlers/"
        + "execution.interceptors"), "relocated global interceptor path");
    assertTrue(names.stream().noneMatch(n -> n.startsWith("software/amazon/awssdk/global")),
        "no unrelocated global interceptor path");
  }

  /**
   * Web identity credentials (EKS IAM roles for service accounts): the bundled SDK loads STS's
   * provider factory by class name, which must be the relocated name of a class in the jar.
   */
  @Test
  void webIdentityCredentialsFindTheBundledSts() throws IOException {
    String factory = "software.amazon.awssdk.services.sts.internal."
        + "StsWebIdentityCredentialsProviderFactory";
    List<String> names = constantPoolNames(SHADED
        + "software/amazon/awssdk/auth/credentials/internal/WebIdentityCredentialsUtils.class");
    String relocated = SHADED.replace('/', '.') + factory;
    assertTrue(names.contains(relocated), "the SDK loads " + relocated + ": " + names);
    assertTrue(names.stream().noneMatch(n -> n.equals(factory)), "no unrelocated " + factory);
    assertTrue(entries.contains(relocated.replace('.', '/') + ".class"), relocated + " in the jar");
  }

  /**
   * Issue 41: the shading rewrites string constants that look like relocated names, in Strata's
   * classes and the bundled ones. Every class is compared with the unshaded class it came from
   * (on this test's class path: the line's classes, strata-core's jar, the SDK's jars): a constant
   * rewritten to something other than a class, package or resource inside the jar fails, naming
   * the class and the string, unless {@code src/spark-shared/runtime-jar/rewritten-strings.txt}
   * lists it with the reason it is right; a listed one that no longer occurs fails too.
   */
  @Test
  void noStringConstantIsRewrittenBeyondTheJarsOwnNamesUnlessReviewed() throws IOException {
    checkRewrites(runtimeJar(),
        RepoRoot.resolve("src", "spark-shared", "runtime-jar", "rewritten-strings.txt"));
  }

  /** The class names S3A users write, and Hadoop's defaults, reach the jar as written. */
  @Test
  void theCredentialProviderNamesAreTheUnshadedResources() throws IOException {
    for (String name : List.of("credential-provider-classes.txt",
        "hadoop-default-providers.txt")) {
      String inJar = read("io/strata/config/" + name);
      String source = Files.readString(RepoRoot.resolve("src", "core", "src", "main", "resources",
          "io", "strata", "config", name));
      assertEquals(source, inJar, name);
      assertTrue(inJar.contains(
          "software.amazon.awssdk.auth.credentials.EnvironmentVariableCredentialsProvider"), name);
    }
  }

  /**
   * Fails unless the rewrites {@link ShadedJarStrings} finds in {@code jar} are exactly the
   * lines of {@code reviewedList}.
   */
  static void checkRewrites(Path jar, Path reviewedList) throws IOException {
    assertEquals(List.of(), ShadedJarStrings.unreviewed(jar, reviewedList,
        ShadedJarStrings.fromClassPath(RuntimeJarContentsIT.class.getClassLoader()),
        jar.getParent()));
  }

  @Test
  void theProviderAndTheCheckpointFileManagerArePresentTheDemoAndTestKitAreNot() {
    assertTrue(entries.contains(PROVIDER), PROVIDER);
    assertTrue(entries.contains(CHECKPOINT_FILE_MANAGER), CHECKPOINT_FILE_MANAGER);
    // The flights demo (strata-examples) and the test kit stay off production classpaths.
    List<String> notProduct = entries.stream()
        .filter(n -> NOT_PRODUCT.stream().anyMatch(n::startsWith)).toList();
    assertEquals(List.of(), some(notProduct), "examples or test kit in the runtime jar");
  }

  @Test
  void noModuleInfoNoSignaturesOneLicenseOneNotice() throws IOException {
    List<String> bad = entries.stream()
        .filter(n -> n.endsWith("module-info.class")
            || n.matches("META-INF/[^/]+\\.(SF|DSA|RSA|EC)")
            || n.startsWith("META-INF/maven/") || n.startsWith("META-INF/native-image/")
            || n.matches("(?i)META-INF/(LICENSE|NOTICE)\\.(txt|md)"))
        .toList();
    assertEquals(List.of(), bad, "module-info, signature files, foreign poms, extra legal files");
    String license = read("META-INF/LICENSE");
    assertTrue(license.contains("Apache License") && license.contains("Version 2.0, January 2004"),
        "META-INF/LICENSE has the Apache License 2.0 text");
    assertTrue(license.contains("Reactive Streams"), "META-INF/LICENSE lists what else applies");
    assertTrue(license.contains("Strata itself: Apache License 2.0"),
        "META-INF/LICENSE states Strata's own license");
    String notice = read("META-INF/NOTICE");
    assertTrue(notice.contains("Copyright 2026 The Strata Authors"),
        "META-INF/NOTICE begins with Strata's own notice");
    for (String part : List.of("AWS SDK for Java", "Apache HttpClient",
        "Apache HttpComponents Core", "Jackson")) {
      assertTrue(notice.contains(part), "META-INF/NOTICE includes the notice of " + part);
    }
  }

  @Test
  void manifestNamesTheArtifactTheFileIsNamedFor() throws IOException {
    Attributes main = jar.getManifest().getMainAttributes();
    String title = main.getValue("Implementation-Title");
    String version = main.getValue("Implementation-Version");
    assertNotNull(title, "Implementation-Title");
    assertNotNull(version, "Implementation-Version");
    assertTrue(title.matches("strata-spark-runtime-\\d+\\.\\d+_\\d+\\.\\d+"),
        "strata-spark-runtime-<spark minor>_<scala binary>: " + title);
    assertEquals(title + "-" + version + ".jar", runtimeJar().getFileName().toString());
    assertEquals(null, main.getValue("Main-Class"), "a library, no Main-Class");
  }

  private static String read(String entry) throws IOException {
    ZipEntry z = jar.getEntry(entry);
    assertNotNull(z, entry);
    try (InputStream in = jar.getInputStream(z)) {
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
  }

  /**
   * The UTF-8 constants of a class file: class names, descriptors, signatures and string
   * literals (a minimal constant-pool reader, JVMS 4.4).
   */
  static List<String> constantPoolNames(String entry) throws IOException {
    ZipEntry z = jar.getEntry(entry);
    assertNotNull(z, entry);
    try (InputStream raw = jar.getInputStream(z)) {
      return new ArrayList<>(ShadedJarStrings.utf8(raw.readAllBytes(), entry));
    }
  }

}
