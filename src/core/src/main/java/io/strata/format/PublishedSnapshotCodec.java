// SPDX-License-Identifier: Apache-2.0
package io.strata.format;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Encodes and decodes {@link PublishedSnapshot}s ({@code b/...bsm}) as UTF-8 JSON (docs/format.md,
 * "Published snapshots"; golden files {@code golden/published-snapshot-v1.json} and {@code
 * -v2.json}). Decoding is as strict as {@link ManifestCodec}'s: a newer {@code formatVersion}, a
 * missing or mistyped field, or a {@code counts.bytes} that does not match the files fails with a
 * {@link ManifestFormatException} naming the object key and the field.
 *
 * <p>Two object layouts: format 1 is the JSON alone; format 2 (written by this build) is the
 * snapshot's inline files, then the JSON, then a 32-byte footer as a version object's with the
 * magic {@code "STRATABS"} ({@link VersionObjectCodec.Magic#PUBLISHED_SNAPSHOT}), so that one
 * create-only PUT writes the whole snapshot and a reader finds the JSON with one suffix-range
 * GET. A format-2 file whose key is the object's own lies in its inline bytes.
 */
public final class PublishedSnapshotCodec {
  /** The newest published-snapshot format version this build reads and writes. */
  public static final int FORMAT_VERSION = 2;
  /** The format version of a published snapshot that is JSON alone (no footer). */
  public static final int JSON_ONLY_FORMAT_VERSION = 1;

  private static final ObjectMapper MAPPER = new ObjectMapper();

  private PublishedSnapshotCodec() { }

  /** Encodes {@code p} as compact UTF-8 JSON. */
  public static byte[] encode(PublishedSnapshot p) {
    ObjectNode root = MAPPER.createObjectNode();
    root.put("formatVersion", p.formatVersion());
    root.put("storeId", p.storeId());
    root.put("version", p.version());
    root.put("attempt", p.attempt());
    ObjectNode lineage = root.putObject("lineage");
    if (p.sourceBase().isPresent()) {
      ObjectNode b = lineage.putObject("base");
      b.put("version", p.sourceBase().get().version());
      b.put("attempt", p.sourceBase().get().attempt());
    } else {
      lineage.putNull("base");
    }
    ArrayNode deltas = lineage.putArray("deltas");
    for (Delta d : p.sourceDeltas()) {
      ObjectNode n = deltas.addObject();
      n.put("version", d.version());
      n.put("attempt", d.attempt());
      ManifestCodec.putRef(n, d.file());
    }
    ArrayNode files = root.putArray("files");
    long bytes = 0;
    for (BaseSnapshot.BaseFile f : p.files()) {
      ObjectNode n = files.addObject();
      n.put("name", f.name());
      ManifestCodec.putRef(n, f.file());
      bytes += f.file().length();
    }
    root.putObject("counts").put("bytes", bytes);
    root.put("createdAtMillis", p.createdAtMillis());
    try {
      return MAPPER.writeValueAsBytes(root);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("cannot encode published snapshot of version "
          + p.version(), e);
    }
  }

  /**
   * Decodes the published snapshot stored as {@code key}, and checks that the key's version and
   * tip hash ({@link StoreLayout#publishedSnapshot}) match its content.
   *
   * @param key the object's key (in every error message)
   * @throws ManifestFormatException if the bytes are not a published snapshot this build reads,
   *     or do not match the key
   */
  /**
   * The JSON of format-2 {@code p} followed by its footer, to be written after {@code
   * inlineBytes} bytes of inline files in one object.
   */
  public static byte[] encodeTail(PublishedSnapshot p, long inlineBytes) {
    return VersionObjectCodec.jsonAndFooter(encode(p), inlineBytes,
        VersionObjectCodec.Magic.PUBLISHED_SNAPSHOT);
  }

  /**
   * Decodes the whole object {@code key} of either layout (format 1: JSON alone; format 2:
   * inline files, JSON, footer).
   *
   * @throws ManifestFormatException as {@link #decodeJson}, or if a footer is damaged
   */
  public static PublishedSnapshot decode(byte[] bytes, String key)
      throws ManifestFormatException {
    if (!VersionObjectCodec.endsWithFooter(bytes, VersionObjectCodec.Magic.PUBLISHED_SNAPSHOT)) {
      return decodeJson(bytes, key, -1);
    }
    VersionObjectCodec.Footer f;
    try {
      f = VersionObjectCodec.footer(bytes, bytes.length,
          VersionObjectCodec.Magic.PUBLISHED_SNAPSHOT);
      byte[] json = VersionObjectCodec.manifestFromTail(bytes, f);
      return decodeJson(json, key, f.manifestOffset());
    } catch (ManifestFormatException e) {
      if (e.getMessage().startsWith("published snapshot ")) {
        throw e;
      }
      throw new ManifestFormatException("published snapshot " + key + ": " + e.getMessage(), e);
    }
  }

  /**
   * Decodes the JSON of published snapshot {@code key}.
   *
   * @param inlineBytes for format 2 the length of the inline files before the JSON (where the
   *     footer says the JSON starts); -1 if the object is the JSON alone (format 1)
   * @throws ManifestFormatException if the JSON is invalid, of a newer format, of a format that
   *     does not match the layout, its counts do not match, a file it names in its own object
   *     lies outside the inline bytes, or its version or tip does not match the key
   */
  public static PublishedSnapshot decodeJson(byte[] bytes, String key, long inlineBytes)
      throws ManifestFormatException {
    String what = "published snapshot " + key + ": ";
    JsonNode root;
    try {
      root = MAPPER.readTree(bytes);
    } catch (java.io.IOException e) {
      throw new ManifestFormatException(what + "not valid JSON: " + e.getMessage(), e);
    }
    if (root == null || !root.isObject()) {
      throw new ManifestFormatException(what + "not a JSON object", null);
    }
    try {
      int fv = (int) ManifestCodec.num(root, "formatVersion");
      if (fv > FORMAT_VERSION) {
        throw new ManifestFormatException("written by a newer Strata (published snapshot "
            + "format version " + fv + "); this build reads format versions up to "
            + FORMAT_VERSION, null);
      }
      if (fv < 1) {
        throw new ManifestFormatException("invalid formatVersion " + fv, null);
      }
      if ((fv == JSON_ONLY_FORMAT_VERSION) != (inlineBytes < 0)) {
        throw new ManifestFormatException("formatVersion " + fv + " in an object "
            + (inlineBytes < 0 ? "without" : "with") + " a published-snapshot footer", null);
      }
      JsonNode lineage = ManifestCodec.obj(root, "lineage");
      JsonNode b = lineage.get("base");
      if (b == null) {
        throw new ManifestFormatException("field 'base' missing", null);
      }
      Optional<PublishedSnapshot.Identity> base = b.isNull() ? Optional.empty()
          : Optional.of(new PublishedSnapshot.Identity(ManifestCodec.num(b, "version"),
              ManifestCodec.str(b, "attempt")));
      List<Delta> deltas = new ArrayList<>();
      for (JsonNode d : ManifestCodec.arr(lineage, "deltas")) {
        deltas.add(new Delta(ManifestCodec.num(d, "version"), ManifestCodec.str(d, "attempt"),
            ManifestCodec.ref(d)));
      }
      List<BaseSnapshot.BaseFile> files = new ArrayList<>();
      long sum = 0;
      for (JsonNode f : ManifestCodec.arr(root, "files")) {
        BaseSnapshot.BaseFile file =
            new BaseSnapshot.BaseFile(ManifestCodec.str(f, "name"), ManifestCodec.ref(f));
        files.add(file);
        sum += file.file().length();
        if (file.file().key().equals(key)
            && (inlineBytes < 0 || file.file().offset() + file.file().length() > inlineBytes)) {
          throw new ManifestFormatException("file " + file.name() + " lies outside the "
              + "object's inline bytes (" + Math.max(0, inlineBytes) + ")", null);
        }
      }
      long bytesField = ManifestCodec.num(ManifestCodec.obj(root, "counts"), "bytes");
      if (bytesField != sum) {
        throw new ManifestFormatException("counts.bytes " + bytesField
            + " does not match the sum of its files " + sum, null);
      }
      PublishedSnapshot p = new PublishedSnapshot(fv, ManifestCodec.str(root, "storeId"),
          ManifestCodec.num(root, "version"), ManifestCodec.str(root, "attempt"), base, deltas,
          files, ManifestCodec.num(root, "createdAtMillis"));
      if (StoreLayout.publishedSnapshotVersionOf(key) != p.version()
          || StoreLayout.publishedSnapshotTipOf(key) != p.tip().hash()) {
        throw new ManifestFormatException("its version " + p.version() + " or lineage tip "
            + Checksums.hex(p.tip().hash()) + " does not match the key", null);
      }
      return p;
    } catch (ManifestFormatException e) {
      throw new ManifestFormatException(what + e.getMessage(), e);
    } catch (IllegalArgumentException e) {
      throw new ManifestFormatException(what + e.getMessage(), e);
    }
  }
}
