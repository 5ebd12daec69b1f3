// SPDX-License-Identifier: Apache-2.0
package io.strata.testkit;

import java.io.ByteArrayInputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Enumeration;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Function;
import java.util.jar.JarFile;
import java.util.zip.ZipEntry;

/**
 * What a shaded jar's relocation did to string constants. The shade plugin rewrites every string
 * constant of a class that looks like a relocated name ({@code "software.amazon.awssdk.Foo"},
 * {@code "org/apache/hc/..."}), in Strata's classes and in the bundled libraries alike: right for
 * a class the code loads by name (it is in the jar under the new name), wrong for a name the
 * code compares with what users write or what another library reads (issue 41: S3A's provider
 * class names). This compares each class in the jar with the unshaded class it came from and
 * lists every string constant that changed in Strata's own classes, and in the bundled ones every
 * one that does not name a class, package or resource inside the jar. A build check fails on any
 * such rewrite that its reviewed list does not hold.
 */
public final class ShadedJarStrings {
  /** The package the jars relocate bundled libraries under, as a class-file name prefix. */
  public static final String SHADED = "io/strata/shaded/";

  private ShadedJarStrings() { }

  /**
   * A string constant the shading rewrote.
   *
   * @param className the class in the jar, as a class-file name ({@code a/b/C.class})
   * @param original the constant in the unshaded class
   * @param shaded what the jar's class holds in its place
   */
  public record Rewrite(String className, String original, String shaded) {
    /** One line for messages and the reviewed list: {@code class<TAB>shaded constant}. */
    public String line() {
      return className + "\t" + shaded;
    }
  }

  /**
   * Every string constant that the shading of {@code jar} rewrote: in Strata's own classes
   * every one; in the bundled libraries' classes (under {@link #SHADED}) those that name no
   * class, package or resource inside the jar.
   *
   * @param jar the shaded jar
   * @param originals the bytes of an unshaded class file by its name ({@code a/b/C.class}, or
   *     {@code META-INF/versions/N/a/b/C.class}), null when unknown; a class of the jar whose
   *     original is unknown is reported as a rewrite of its own (with a null original)
   * @return the rewrites, in the jar's order
   * @throws IOException if the jar or a class cannot be read
   */
  public static List<Rewrite> unexpectedRewrites(Path jar, Function<String, byte[]> originals)
      throws IOException {
    List<Rewrite> out = new ArrayList<>();
    try (JarFile j = new JarFile(jar.toFile())) {
      Set<String> entries = new HashSet<>();
      for (Enumeration<? extends ZipEntry> e = j.entries(); e.hasMoreElements(); ) {
        entries.add(e.nextElement().getName());
      }
      for (Enumeration<? extends ZipEntry> e = j.entries(); e.hasMoreElements(); ) {
        ZipEntry z = e.nextElement();
        String name = z.getName();
        if (!name.endsWith(".class") || name.endsWith("module-info.class")) {
          continue;
        }
        byte[] shadedBytes;
        try (InputStream in = j.getInputStream(z)) {
          shadedBytes = in.readAllBytes();
        }
        String originalName = name.replace(SHADED, "");
        byte[] originalBytes = originals.apply(originalName);
        if (originalBytes == null) {
          out.add(new Rewrite(name, null, "<no unshaded class " + originalName + ">"));
          continue;
        }
        Set<String> before = strings(originalBytes, originalName);
        // A bundled library may load its own classes by name (the relocated name is then right);
        // Strata's code refers to them as classes, so any string the shading changed in it is
        // a name compared with what users or other libraries write (issue 41's bug named a
        // class that is in the jar, relocated). In Strata's classes, annotation values (plain
        // UTF-8 constants, which the shading rewrites too) count as strings: a dotted relocated
        // name in any UTF-8 constant is one (class references use slashes).
        boolean bundled = name.startsWith(SHADED);
        Set<String> after = new LinkedHashSet<>(strings(shadedBytes, name));
        if (!bundled) {
          before.addAll(utf8(originalBytes, originalName));
          String dotted = SHADED.replace('/', '.');
          utf8(shadedBytes, name).stream().filter(u -> u.contains(dotted)).forEach(after::add);
        }
        for (String s : after) {
          if (before.contains(s) || bundled && insideJar(s, entries)) {
            continue;
          }
          String original = s.replace(SHADED, "").replace(SHADED.replace('/', '.'), "");
          out.add(new Rewrite(name, before.contains(original) ? original : null, s));
        }
      }
    }
    return out;
  }

  /**
   * The build check: what differs between the rewrites {@link #unexpectedRewrites} finds in
   * {@code jar} and the reviewed list in {@code reviewedList}, one message per difference (a
   * rewrite not listed, naming the class and the string, or a listed one no longer in the jar);
   * empty when they agree. Writes every rewrite found to {@code <reportDir>/<list name>.found},
   * in the list's format, for review.
   *
   * @param originals as for {@link #unexpectedRewrites}
   * @throws IOException if a jar, class or file cannot be read or written
   */
  public static List<String> unreviewed(Path jar, Path reviewedList,
      Function<String, byte[]> originals, Path reportDir) throws IOException {
    List<Rewrite> found = unexpectedRewrites(jar, originals);
    Set<String> reviewed = reviewed(reviewedList);
    Path foundFile = Files.createDirectories(reportDir)
        .resolve(reviewedList.getFileName() + ".found");
    Files.write(foundFile, found.stream().map(r -> r.line() + "  # was " + r.original())
        .distinct().toList());
    List<String> problems = new ArrayList<>();
    for (Rewrite r : found) {
      if (!reviewed.contains(r.line())) {
        String what = r.className().startsWith(SHADED)
            ? "a bundled library's string that names nothing in the jar"
            : "a string of Strata's own code (which names bundled classes as classes, never as "
                + "strings)";
        problems.add(jar.getFileName() + ": " + r.className() + " holds '" + r.shaded()
            + "' where the unshaded class has '" + r.original() + "': the shading rewrote "
            + what + ", so a name users write or another library reads no longer matches; fix "
            + "the code, or list it in " + reviewedList + " with the reason it is right (all "
            + "found: " + foundFile.toAbsolutePath() + ")");
      }
    }
    Set<String> stale = new TreeSet<>(reviewed);
    found.forEach(r -> stale.remove(r.line()));
    for (String line : stale) {
      problems.add(reviewedList + " lists '" + line + "', which " + jar.getFileName()
          + " no longer holds: remove the line");
    }
    return problems;
  }

  /**
   * Unshaded class files from a class loader's path, for {@link #unexpectedRewrites}: the entry
   * of exactly that name (a multi-release jar's base entry for an unversioned name, not the one
   * the running JVM would pick), or null if no entry of the path has it.
   */
  public static Function<String, byte[]> fromClassPath(ClassLoader loader) {
    return name -> {
      java.net.URL url = loader.getResource(name);
      if (url == null) {
        return null;
      }
      try {
        if (url.getProtocol().equals("jar")) {
          String spec = url.getPath(); // file:/path/x.jar!/entry
          String file = spec.substring("file:".length(), spec.indexOf("!/"));
          try (java.util.zip.ZipFile zip = new java.util.zip.ZipFile(
              java.net.URLDecoder.decode(file, StandardCharsets.UTF_8))) {
            ZipEntry z = zip.getEntry(name);
            if (z == null) {
              return null;
            }
            try (InputStream in = zip.getInputStream(z)) {
              return in.readAllBytes();
            }
          }
        }
        try (InputStream in = url.openStream()) {
          return in.readAllBytes();
        }
      } catch (IOException e) {
        throw new java.io.UncheckedIOException("cannot read " + url, e);
      }
    };
  }

  /**
   * The reviewed list of rewrites a jar may have: the lines of {@code file} that are neither
   * blank nor comments ({@code #}), each {@link Rewrite#line()}, with any trailing comment
   * after two spaces and {@code #} removed.
   */
  public static Set<String> reviewed(Path file) throws IOException {
    Set<String> lines = new TreeSet<>();
    for (String l : Files.readAllLines(file, StandardCharsets.UTF_8)) {
      int comment = l.indexOf("  #");
      String line = (comment < 0 ? l : l.substring(0, comment)).strip();
      if (!line.isEmpty() && !line.startsWith("#")) {
        lines.add(line.replaceAll("\\s+", "\t"));
      }
    }
    return lines;
  }

  /** Whether a rewritten constant names a class, package or resource inside the jar. */
  static boolean insideJar(String s, Set<String> entries) {
    String path = s.startsWith("/") ? s.substring(1) : s;
    if (!path.startsWith(SHADED) && !path.startsWith(SHADED.replace('/', '.'))) {
      return false;
    }
    if (entries.contains(path)) {
      return true; // a resource, by its path
    }
    String slashed = path.replace('.', '/');
    if (entries.contains(slashed + ".class")) {
      return true; // a class, by its binary name
    }
    String dir = slashed.endsWith("/") ? slashed : slashed + "/";
    return entries.stream().anyMatch(n -> n.startsWith(dir)); // a package or directory
  }

  /**
   * The values of a class file's {@code CONSTANT_String} entries (its string literals, JVMS
   * 4.4.3).
   *
   * @throws IOException naming the class if it is not a class file
   */
  public static Set<String> strings(byte[] classFile, String name) throws IOException {
    return constants(classFile, name, true);
  }

  /**
   * Every {@code CONSTANT_Utf8} entry of a class file: names, descriptors, string literals and
   * annotation values.
   *
   * @throws IOException naming the class if it is not a class file
   */
  public static Set<String> utf8(byte[] classFile, String name) throws IOException {
    return constants(classFile, name, false);
  }

  /** A minimal constant-pool reader (JVMS 4.4). */
  private static Set<String> constants(byte[] classFile, String name, boolean onlyStrings)
      throws IOException {
    Set<String> out = new LinkedHashSet<>();
    try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(classFile))) {
      if (in.readInt() != 0xCAFEBABE) {
        throw new IOException("not a class file: " + name);
      }
      in.readUnsignedShort(); // minor
      in.readUnsignedShort(); // major
      int count = in.readUnsignedShort();
      String[] utf8 = new String[count];
      List<Integer> stringRefs = new ArrayList<>();
      for (int i = 1; i < count; i++) {
        int tag = in.readUnsignedByte();
        switch (tag) {
          case 1 -> utf8[i] = in.readUTF();
          case 8 -> stringRefs.add(in.readUnsignedShort());
          case 3, 4, 9, 10, 11, 12, 17, 18 -> in.skipBytes(4);
          case 5, 6 -> {
            in.skipBytes(8);
            i++; // takes two slots
          }
          case 7, 16, 19, 20 -> in.skipBytes(2);
          case 15 -> in.skipBytes(3);
          default -> throw new IOException("unknown constant tag " + tag + " in " + name);
        }
      }
      if (onlyStrings) {
        for (int ref : stringRefs) {
          out.add(utf8[ref]);
        }
      } else {
        for (String u : utf8) {
          if (u != null) {
            out.add(u);
          }
        }
      }
    }
    return out;
  }
}
