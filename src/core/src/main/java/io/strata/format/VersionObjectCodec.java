// SPDX-License-Identifier: Apache-2.0
package io.strata.format;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;

/**
 * Layout of a version object: the version's SST delta (possibly empty), then its manifest, then
 * a fixed 32-byte footer. One object, written with one create-only PUT.
 *
 * <pre>
 * offset 0                      SST delta bytes (deltaLength, may be 0)
 * offset deltaLength            manifest JSON (manifestLength bytes)
 * offset size - 32              footer, big-endian:
 *                                 magic "STRATAVO" (8 bytes)
 *                                 footer version (int32, = 1)
 *                                 manifest offset (int64)
 *                                 manifest length (int32)
 *                                 XXHash64 of the manifest bytes (int64)
 * </pre>
 *
 * A reader fetches the tail (one suffix-range GET of {@link #TAIL_READ_BYTES}), which holds the
 * footer and, for all but huge manifests, the whole manifest.
 *
 * <p>A published snapshot of format 2 ({@link PublishedSnapshotCodec}) has the same layout with
 * the magic {@code "STRATABS"}: its inline files, then its JSON, then the footer (the methods
 * taking a {@link Magic}).
 */
public final class VersionObjectCodec {
  /** Size of the footer in bytes. */
  public static final int FOOTER_BYTES = 32;
  /** How many bytes a reader asks for from the end of the object first. */
  public static final int TAIL_READ_BYTES = 64 * 1024;
  private static final int FOOTER_VERSION = 1;

  /** Which object a footer closes: the first 8 bytes of the footer. */
  public enum Magic {
    /** A version object ({@code v/...svo}): its SST delta, its manifest. */
    VERSION_OBJECT("STRATAVO", "version object"),
    /** A published snapshot of format 2 ({@code b/...bsm}): its inline files, its JSON. */
    PUBLISHED_SNAPSHOT("STRATABS", "published snapshot");

    private final byte[] bytes;
    private final String what;

    Magic(String text, String what) {
      this.bytes = text.getBytes(StandardCharsets.US_ASCII);
      this.what = what;
    }
  }

  private VersionObjectCodec() { }

  /**
   * True if {@code tail} (the last bytes of an object) ends with {@code magic}'s footer magic
   * (nothing else is checked).
   */
  public static boolean endsWithFooter(byte[] tail, Magic magic) {
    if (tail.length < FOOTER_BYTES) {
      return false;
    }
    return java.util.Arrays.equals(tail, tail.length - FOOTER_BYTES,
        tail.length - FOOTER_BYTES + magic.bytes.length, magic.bytes, 0, magic.bytes.length);
  }

  /**
   * The manifest bytes followed by the footer, to be appended after {@code deltaLength} bytes of
   * SST delta.
   */
  public static byte[] manifestAndFooter(byte[] manifestJson, long deltaLength) {
    return jsonAndFooter(manifestJson, deltaLength, Magic.VERSION_OBJECT);
  }

  /**
   * {@code json} followed by a footer with {@code magic}, to be appended after {@code
   * dataLength} bytes of data.
   */
  public static byte[] jsonAndFooter(byte[] json, long dataLength, Magic magic) {
    ByteBuffer buf = ByteBuffer.allocate(json.length + FOOTER_BYTES)
        .order(ByteOrder.BIG_ENDIAN);
    buf.put(json);
    buf.put(magic.bytes);
    buf.putInt(FOOTER_VERSION);
    buf.putLong(dataLength);
    buf.putInt(json.length);
    buf.putLong(Checksums.xxhash64(json));
    return buf.array();
  }

  /**
   * Where the manifest is, parsed from the object's footer.
   *
   * @param manifestOffset byte offset of the manifest in the object
   * @param manifestLength manifest length in bytes
   * @param manifestChecksum XXHash64 of the manifest bytes
   */
  public record Footer(long manifestOffset, int manifestLength, long manifestChecksum) { }

  /**
   * Parses the footer from the last bytes of an object.
   *
   * @param tail the last {@code tail.length} bytes of the object (at least {@link #FOOTER_BYTES})
   * @param objectSize total object size if known, else -1 (then only internal checks apply)
   * @throws ManifestFormatException if the bytes do not end with a valid footer
   */
  public static Footer footer(byte[] tail, long objectSize) throws ManifestFormatException {
    return footer(tail, objectSize, Magic.VERSION_OBJECT);
  }

  /**
   * {@link #footer(byte[], long)} of an object closed by {@code magic}'s footer.
   *
   * @throws ManifestFormatException if the bytes do not end with a valid footer
   */
  public static Footer footer(byte[] tail, long objectSize, Magic magic)
      throws ManifestFormatException {
    byte[] expectedMagic = magic.bytes;
    if (tail.length < FOOTER_BYTES) {
      throw new ManifestFormatException("object is " + tail.length
          + " bytes, shorter than the " + FOOTER_BYTES + "-byte footer (truncated?)", null);
    }
    ByteBuffer buf = ByteBuffer.wrap(tail, tail.length - FOOTER_BYTES, FOOTER_BYTES)
        .order(ByteOrder.BIG_ENDIAN);
    byte[] found = new byte[expectedMagic.length];
    buf.get(found);
    if (!java.util.Arrays.equals(found, expectedMagic)) {
      throw new ManifestFormatException("no " + magic.what.replace(' ', '-')
          + " footer (bad magic; truncated or not written by Strata)", null);
    }
    int fv = buf.getInt();
    if (fv > FOOTER_VERSION) {
      throw new ManifestFormatException("written by a newer Strata (" + magic.what
          + " footer version " + fv + "; this build reads up to " + FOOTER_VERSION + ")", null);
    }
    long off = buf.getLong();
    int len = buf.getInt();
    long sum = buf.getLong();
    if (off < 0 || len <= 0 || (objectSize >= 0 && off + len + FOOTER_BYTES != objectSize)) {
      throw new ManifestFormatException("footer points outside the object (manifest offset "
          + off + ", length " + len + ", object size " + objectSize + ")", null);
    }
    return new Footer(off, len, sum);
  }

  /**
   * Extracts and verifies the manifest bytes from the tail of an object, if the tail holds it.
   *
   * @param tail last bytes of the object
   * @param footer the parsed footer
   * @return the manifest bytes, or null if the tail is too short to hold them
   * @throws ManifestFormatException on a checksum mismatch
   */
  public static byte[] manifestFromTail(byte[] tail, Footer footer) throws ManifestFormatException {
    int needed = footer.manifestLength() + FOOTER_BYTES;
    if (tail.length < needed) {
      return null;
    }
    int start = tail.length - needed;
    byte[] manifest = java.util.Arrays.copyOfRange(tail, start, start + footer.manifestLength());
    verifyManifest(manifest, footer);
    return manifest;
  }

  /**
   * Checks the manifest bytes against the footer's checksum.
   *
   * @throws ManifestFormatException if they differ
   */
  public static void verifyManifest(byte[] manifest, Footer footer) throws ManifestFormatException {
    long actual = Checksums.xxhash64(manifest);
    if (manifest.length != footer.manifestLength() || actual != footer.manifestChecksum()) {
      throw new ManifestFormatException("manifest checksum mismatch (expected xxhash64 "
          + Checksums.hex(footer.manifestChecksum()) + " over " + footer.manifestLength()
          + " bytes, got " + Checksums.hex(actual) + " over " + manifest.length + ")", null);
    }
  }
}
