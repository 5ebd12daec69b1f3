// SPDX-License-Identifier: Apache-2.0
package io.strata.demo;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Optional;
import java.util.zip.GZIPOutputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class FlightsDataTest {
  @TempDir Path tmp;

  @Test
  void extractsTheNamedEntryFromAGzippedTar() throws IOException {
    byte[] wanted = new byte[1500];
    Arrays.fill(wanted, (byte) 7);
    Path tgz =
        tgz(
            entry("package/README.md", "hello".getBytes(StandardCharsets.UTF_8), null),
            entry("package/data/flights-3m.parquet", wanted, null));

    Path out = tmp.resolve("out.parquet");
    FlightsData.extractEntry(tgz, FlightsData.TARBALL_ENTRY, out);

    assertArrayEquals(wanted, Files.readAllBytes(out));
  }

  @Test
  void honoursPaxPathRecords() throws IOException {
    byte[] wanted = "long name".getBytes(StandardCharsets.UTF_8);
    String longName = "package/" + "d".repeat(120) + "/x.bin";
    Path tgz = tgz(entry("PaxHeader/x", wanted, longName));

    Path out = tmp.resolve("x.bin");
    FlightsData.extractEntry(tgz, longName, out);

    assertArrayEquals(wanted, Files.readAllBytes(out));
  }

  @Test
  void aMissingEntryIsAnError() throws IOException {
    Path tgz = tgz(entry("package/other", new byte[3], null));

    IOException e =
        assertThrows(
            IOException.class,
            () -> FlightsData.extractEntry(tgz, FlightsData.TARBALL_ENTRY, tmp.resolve("o")));
    assertTrue(e.getMessage().contains("no such entry"), e.getMessage());
  }

  @Test
  void aCopyWithTheWrongHashIsRejected() throws IOException {
    Path cache = Files.createDirectories(tmp.resolve("cache"));
    Files.writeString(cache.resolve(FlightsData.FILE_NAME), "not the flights");
    String shared = System.clearProperty("strata.shared.dir");
    try {
      // Only when ../shared does not hold the real file does the cache get looked at.
      if (!Files.isRegularFile(Path.of("..", "shared", "data", FlightsData.FILE_NAME))) {
        IOException e =
            assertThrows(IOException.class, () -> FlightsData.locate(Optional.empty(), cache));
        assertTrue(e.getMessage().contains("sha256"), e.getMessage());
      }
    } finally {
      if (shared != null) {
        System.setProperty("strata.shared.dir", shared);
      }
    }
  }

  @Test
  void sha256OfAKnownString() throws IOException {
    Path f = Files.writeString(tmp.resolve("abc"), "abc");
    assertEquals(
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
        FlightsData.sha256(f));
  }

  /** One tar entry; with {@code paxPath}, preceded by a pax header that names it. */
  private static byte[] entry(String name, byte[] data, String paxPath) throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    if (paxPath != null) {
      String rec = " path=" + paxPath + "\n";
      int len = rec.length() + 3;
      rec = len + rec;
      writeEntry(out, "PaxHeader", 'x', rec.getBytes(StandardCharsets.UTF_8));
    }
    writeEntry(out, name, '0', data);
    return out.toByteArray();
  }

  private static void writeEntry(OutputStream out, String name, char type, byte[] data)
      throws IOException {
    byte[] h = new byte[512];
    byte[] n = name.getBytes(StandardCharsets.UTF_8);
    System.arraycopy(n, 0, h, 0, Math.min(100, n.length));
    byte[] size = String.format("%011o", data.length).getBytes(StandardCharsets.US_ASCII);
    System.arraycopy(size, 0, h, 124, size.length);
    h[156] = (byte) type;
    out.write(h);
    out.write(data);
    out.write(new byte[(512 - data.length % 512) % 512]);
  }

  private Path tgz(byte[]... entries) throws IOException {
    Path p = tmp.resolve("t.tgz");
    try (OutputStream out = new GZIPOutputStream(Files.newOutputStream(p))) {
      for (byte[] e : entries) {
        out.write(e);
      }
      out.write(new byte[1024]);
    }
    return p;
  }
}
