// SPDX-License-Identifier: Apache-2.0
package io.strata.format;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HexFormat;
import net.jpountz.xxhash.StreamingXXHash64;
import net.jpountz.xxhash.XXHashFactory;

/**
 * Whole-file checksums: XXHash64 with seed 0 from lz4-java (the library Spark already ships).
 * Chosen over S3's CRC so local files, ranges inside version objects and downloads are all
 * verified the same way, on any S3-compatible server.
 */
public final class Checksums {
  private static final XXHashFactory FACTORY = XXHashFactory.fastestInstance();
  private static final long SEED = 0L;
  private static final HexFormat HEX = HexFormat.of();
  /** Read buffer of the streaming hashes, bytes. */
  private static final int BUFFER_BYTES = 1 << 20;

  private Checksums() { }

  /** XXHash64 of {@code length} bytes of {@code bytes} starting at {@code offset}. */
  public static long xxhash64(byte[] bytes, int offset, int length) {
    return FACTORY.hash64().hash(bytes, offset, length, SEED);
  }

  /** XXHash64 of the whole array. */
  public static long xxhash64(byte[] bytes) {
    return xxhash64(bytes, 0, bytes.length);
  }

  /**
   * XXHash64 of a whole local file, read in 1 MiB chunks.
   *
   * @throws IOException if the file cannot be read
   */
  public static long xxhash64(Path file) throws IOException {
    try (InputStream in = Files.newInputStream(file);
        StreamingXXHash64 h = FACTORY.newStreamingHash64(SEED)) {
      // A commit hashes its delta of a few kilobytes: a buffer no larger than the file keeps a
      // 1 MiB array (a humongous allocation for G1) off the commit path.
      byte[] buf = new byte[(int) Math.max(1, Math.min(BUFFER_BYTES, Files.size(file)))];
      int n;
      while ((n = in.read(buf)) > 0) {
        h.update(buf, 0, n);
      }
      return h.getValue();
    }
  }

  /** XXHash64 of everything left in {@code in} (not closed). */
  public static long xxhash64(InputStream in) throws IOException {
    try (StreamingXXHash64 h = FACTORY.newStreamingHash64(SEED)) {
      byte[] buf = new byte[BUFFER_BYTES];
      int n;
      while ((n = in.read(buf)) > 0) {
        h.update(buf, 0, n);
      }
      return h.getValue();
    }
  }

  /** A new streaming hasher; the caller closes it. */
  public static StreamingXXHash64 newStreaming() {
    return FACTORY.newStreamingHash64(SEED);
  }

  /** The checksum as 16 lower-case hex digits (as written in manifests). */
  public static String hex(long checksum) {
    return HEX.toHexDigits(checksum);
  }

  /** Parses 16 hex digits written by {@link #hex}. */
  public static long parseHex(String hex) {
    if (hex.length() != 16) {
      throw new IllegalArgumentException("expected 16 hex digits, got '" + hex + "'");
    }
    return Long.parseUnsignedLong(hex, 16);
  }
}
