// SPDX-License-Identifier: Apache-2.0
package io.strata.format;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.util.ByteArrayBuilder;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Encodes and decodes {@link Manifest}s as UTF-8 JSON with explicit, stable field names (see
 * docs/format.md). Checksums are written as 16 hex digits so no JSON reader loses precision.
 *
 * <p>Decoding rejects a manifest whose {@code formatVersion} is newer than {@link
 * #FORMAT_VERSION} (written by a newer Strata) and any missing or mistyped field, with a {@link
 * ManifestFormatException} that says which field.
 */
public final class ManifestCodec {
  /** The newest manifest format version this build reads (and writes, when needed). */
  public static final int FORMAT_VERSION = 3;
  /** The format version of manifests without column families (readable by every build). */
  public static final int BASE_FORMAT_VERSION = 1;
  /** The first format version with the {@code columnFamilies} field. */
  public static final int COLUMN_FAMILIES_FORMAT_VERSION = 2;
  /** The first format version with the {@code epoch} field (checkpoint format 1 with a run). */
  public static final int EPOCH_FORMAT_VERSION = 3;

  private static final ObjectMapper MAPPER =
      new ObjectMapper().disable(SerializationFeature.INDENT_OUTPUT);

  private ManifestCodec() { }

  /**
   * The format version to write a manifest with: {@link #BASE_FORMAT_VERSION} when it has no
   * column families, so builds that predate them keep reading such stores, else {@link
   * #COLUMN_FAMILIES_FORMAT_VERSION}, which those builds refuse instead of misreading.
   */
  public static int formatVersionFor(ColumnFamilies columnFamilies) {
    return columnFamilies.isNone() ? BASE_FORMAT_VERSION : COLUMN_FAMILIES_FORMAT_VERSION;
  }

  /**
   * As {@link #formatVersionFor(ColumnFamilies)}, for a manifest committed under the query-run
   * {@code epoch} (0 for none): {@link #EPOCH_FORMAT_VERSION} when there is one, so builds that
   * predate epochs refuse it rather than read it without knowing which run wrote it.
   */
  public static int formatVersionFor(ColumnFamilies columnFamilies, long epoch) {
    return epoch > 0 ? EPOCH_FORMAT_VERSION : formatVersionFor(columnFamilies);
  }

  /** Encodes {@code m} as compact UTF-8 JSON. */
  public static byte[] encode(Manifest m) {
    // Streamed, not built as a tree: a commit encodes one manifest, on its critical path, in
    // code that runs too rarely to be compiled. The field order is the golden files'.
    ByteArrayBuilder out = new ByteArrayBuilder(2048);
    try (JsonGenerator g = MAPPER.getFactory().createGenerator(out)) {
      g.writeStartObject();
      g.writeNumberField("formatVersion", m.formatVersion());
      g.writeStringField("storeId", m.storeId());
      g.writeNumberField("version", m.version());
      g.writeStringField("attempt", m.attempt());
      if (m.epoch() > 0) {
        g.writeNumberField("epoch", m.epoch());
      }
      g.writeObjectFieldStart("parent");
      g.writeNumberField("version", m.parentVersion());
      g.writeStringField("attempt", m.parentAttempt().orElse(null));
      g.writeEndObject();
      if (m.base().isPresent()) {
        BaseSnapshot b = m.base().get();
        g.writeObjectFieldStart("base");
        g.writeNumberField("version", b.version());
        g.writeStringField("attempt", b.attempt());
        g.writeArrayFieldStart("files");
        for (BaseSnapshot.BaseFile f : b.files()) {
          g.writeStartObject();
          g.writeStringField("name", f.name());
          writeRef(g, f.file());
          g.writeEndObject();
        }
        g.writeEndArray();
        g.writeEndObject();
      } else {
        g.writeNullField("base");
      }
      g.writeArrayFieldStart("deltas");
      for (Delta d : m.deltas()) {
        g.writeStartObject();
        g.writeNumberField("version", d.version());
        g.writeStringField("attempt", d.attempt());
        writeRef(g, d.file());
        g.writeEndObject();
      }
      g.writeEndArray();
      g.writeStringField("keySchema", m.keySchema());
      g.writeStringField("valueSchema", m.valueSchema());
      if (!m.columnFamilies().isNone()) {
        g.writeObjectFieldStart("columnFamilies");
        g.writeNumberField("maxId", m.columnFamilies().maxId());
        g.writeArrayFieldStart("families");
        for (ColumnFamily f : m.columnFamilies().families()) {
          g.writeStartObject();
          g.writeStringField("name", f.name());
          g.writeNumberField("id", f.id());
          g.writeBooleanField("internal", f.internal());
          g.writeEndObject();
        }
        g.writeEndArray();
        g.writeEndObject();
      }
      g.writeObjectFieldStart("counts");
      g.writeNumberField("keys", m.numKeys());
      g.writeNumberField("bytes", m.totalBytes());
      g.writeEndObject();
      g.writeNumberField("createdAtMillis", m.createdAtMillis());
      g.writeEndObject();
    } catch (IOException e) { // a generator over a byte array has no I/O to fail
      throw new IllegalStateException("cannot encode manifest of version " + m.version(), e);
    }
    return out.toByteArray();
  }

  /** {@link #putRef}, streamed: the same four fields in the same order. */
  private static void writeRef(JsonGenerator g, FileRef r) throws IOException {
    g.writeStringField("key", r.key());
    g.writeNumberField("offset", r.offset());
    g.writeNumberField("length", r.length());
    g.writeStringField("xxhash64", Checksums.hex(r.checksum()));
  }


  /**
   * Decodes a manifest.
   *
   * @throws ManifestFormatException if the bytes are not a manifest this build can read
   */
  public static Manifest decode(byte[] bytes) throws ManifestFormatException {
    JsonNode root;
    try {
      root = MAPPER.readTree(bytes);
    } catch (java.io.IOException e) {
      throw new ManifestFormatException("not valid JSON: " + e.getMessage(), e);
    }
    if (root == null || !root.isObject()) {
      throw new ManifestFormatException("not a JSON object", null);
    }
    int fv = (int) num(root, "formatVersion");
    if (fv > FORMAT_VERSION) {
      throw new ManifestFormatException("written by a newer Strata (manifest format version " + fv
          + "); this build reads format versions up to " + FORMAT_VERSION, null);
    }
    if (fv < 1) {
      throw new ManifestFormatException("invalid formatVersion " + fv, null);
    }
    try {
      JsonNode parent = obj(root, "parent");
      JsonNode pa = parent.get("attempt");
      Optional<BaseSnapshot> base = Optional.empty();
      JsonNode b = root.get("base");
      if (b != null && !b.isNull()) {
        List<BaseSnapshot.BaseFile> files = new ArrayList<>();
        for (JsonNode f : arr(b, "files")) {
          files.add(new BaseSnapshot.BaseFile(str(f, "name"), ref(f)));
        }
        base = Optional.of(new BaseSnapshot(num(b, "version"), str(b, "attempt"), files));
      }
      List<Delta> deltas = new ArrayList<>();
      for (JsonNode d : arr(root, "deltas")) {
        deltas.add(new Delta(num(d, "version"), str(d, "attempt"), ref(d)));
      }
      ColumnFamilies cfs = ColumnFamilies.NONE;
      JsonNode c = root.get("columnFamilies");
      if (c != null && !c.isNull()) {
        if (fv < COLUMN_FAMILIES_FORMAT_VERSION) {
          throw new ManifestFormatException("field 'columnFamilies' needs formatVersion "
              + COLUMN_FAMILIES_FORMAT_VERSION + ", manifest has " + fv, null);
        }
        List<ColumnFamily> families = new ArrayList<>();
        for (JsonNode f : arr(c, "families")) {
          families.add(new ColumnFamily(str(f, "name"), smallInt(f, "id"), bool(f, "internal")));
        }
        cfs = new ColumnFamilies(smallInt(c, "maxId"), families);
      }
      long epoch = 0;
      if (root.has("epoch")) {
        if (fv < EPOCH_FORMAT_VERSION) {
          throw new ManifestFormatException("field 'epoch' needs formatVersion "
              + EPOCH_FORMAT_VERSION + ", manifest has " + fv, null);
        }
        epoch = num(root, "epoch");
        if (epoch < 1) {
          throw new ManifestFormatException("invalid epoch " + epoch, null);
        }
      }
      JsonNode counts = obj(root, "counts");
      Manifest m = new Manifest(fv, str(root, "storeId"), num(root, "version"),
          str(root, "attempt"), num(parent, "version"),
          pa == null || pa.isNull() ? Optional.empty() : Optional.of(pa.asText()),
          base, deltas, str(root, "keySchema"), str(root, "valueSchema"),
          num(counts, "keys"), num(root, "createdAtMillis"), cfs, epoch);
      long bytesField = num(counts, "bytes");
      if (bytesField != m.totalBytes()) {
        throw new ManifestFormatException("counts.bytes " + bytesField
            + " does not match the sum of its files " + m.totalBytes(), null);
      }
      return m;
    } catch (IllegalArgumentException e) {
      throw new ManifestFormatException(e.getMessage(), e);
    }
  }

  static void putRef(ObjectNode n, FileRef r) {
    n.put("key", r.key());
    n.put("offset", r.offset());
    n.put("length", r.length());
    n.put("xxhash64", Checksums.hex(r.checksum()));
  }

  static FileRef ref(JsonNode n) throws ManifestFormatException {
    return new FileRef(str(n, "key"), num(n, "offset"), num(n, "length"),
        Checksums.parseHex(str(n, "xxhash64")));
  }

  static long num(JsonNode n, String field) throws ManifestFormatException {
    JsonNode v = n.get(field);
    if (v == null || !v.isIntegralNumber()) {
      throw new ManifestFormatException("field '" + field + "' missing or not an integer", null);
    }
    return v.asLong();
  }

  private static int smallInt(JsonNode n, String field) throws ManifestFormatException {
    long v = num(n, field);
    if (v < 0 || v > ColumnFamily.MAX_ID) {
      throw new ManifestFormatException("field '" + field + "' must be 0.." + ColumnFamily.MAX_ID
          + ", was " + v, null);
    }
    return (int) v;
  }

  private static boolean bool(JsonNode n, String field) throws ManifestFormatException {
    JsonNode v = n.get(field);
    if (v == null || !v.isBoolean()) {
      throw new ManifestFormatException("field '" + field + "' missing or not a boolean", null);
    }
    return v.asBoolean();
  }

  static String str(JsonNode n, String field) throws ManifestFormatException {
    JsonNode v = n.get(field);
    if (v == null || !v.isTextual()) {
      throw new ManifestFormatException("field '" + field + "' missing or not a string", null);
    }
    return v.asText();
  }

  static JsonNode obj(JsonNode n, String field) throws ManifestFormatException {
    JsonNode v = n.get(field);
    if (v == null || !v.isObject()) {
      throw new ManifestFormatException("field '" + field + "' missing or not an object", null);
    }
    return v;
  }

  static JsonNode arr(JsonNode n, String field) throws ManifestFormatException {
    JsonNode v = n.get(field);
    if (v == null || !v.isArray()) {
      throw new ManifestFormatException("field '" + field + "' missing or not an array", null);
    }
    return v;
  }

  /** For diagnostics: the manifest's bytes as a string. */
  static String toText(byte[] bytes) {
    return new String(bytes, StandardCharsets.UTF_8);
  }
}
