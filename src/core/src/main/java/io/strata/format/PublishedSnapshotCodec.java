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
 * "Published snapshots"; golden file {@code golden/published-snapshot-v1.json}). Decoding is as
 * strict as {@link ManifestCodec}'s: a newer {@code formatVersion}, a missing or mistyped field,
 * or a {@code counts.bytes} that does not match the files fails with a {@link
 * ManifestFormatException} naming the object key and the field.
 */
public final class PublishedSnapshotCodec {
  /** The newest published-snapshot format version this build reads and writes. */
  public static final int FORMAT_VERSION = 1;

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
  public static PublishedSnapshot decode(byte[] bytes, String key)
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
