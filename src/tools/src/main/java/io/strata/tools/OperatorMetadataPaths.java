// SPDX-License-Identifier: Apache-2.0
package io.strata.tools;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.TextNode;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * The one Spark checkpoint file that names the checkpoint's own location: operator state
 * metadata version 2 ({@code state/<operator>/_metadata/v2/<batch>}, Spark 4.0 and later, written
 * for {@code transformWithState}), whose stores name their state schema files by absolute path
 * (Spark's {@code StateStoreMetadataV2}: {@code stateSchemaFilePath}, a string, on 4.0;
 * {@code stateSchemaFilePaths}, a list, on 4.1 and later). A copy that kept those paths would
 * read its schemas from the source, and fail once the source is deleted. This class decides how
 * such a file reads in a copy: every path under the source's location names the same file under
 * the destination's; nothing else changes.
 *
 * <p>The file is Spark's {@code OperatorStateMetadataUtils.writeMetadata}: a line {@code v2},
 * then the JSON of {@code OperatorStateMetadataV2} (json4s; the order of fields does not matter
 * to Spark's reader).
 */
final class OperatorMetadataPaths {
  private OperatorMetadataPaths() { }

  private static final Pattern V2 = Pattern.compile("state/\\d+/_metadata/v2/\\d+");

  /**
   * Whether {@code key}, relative to the checkpoint, is an operator metadata file of version 2.
   *
   * @param key a key relative to the checkpoint, such as {@code state/0/_metadata/v2/4}
   * @return true for exactly {@code state/<digits>/_metadata/v2/<digits>}
   */
  static boolean namesLocations(String key) {
    return V2.matcher(key).matches();
  }

  /**
   * {@code bytes} of an operator metadata v2 file with every schema file path under {@code
   * source} moved under {@code destination} (same path below the location; the path's own
   * scheme kept where source and destination are both S3 locations, since Spark wrote the
   * scheme its query used). Paths elsewhere are kept: they do not depend on the source.
   *
   * @param bytes the file as Spark wrote it
   * @param source the source checkpoint's location, such as {@code s3a://bucket/ckpt}
   * @param destination the copy's location
   * @param key the file's key relative to the checkpoint, for messages
   * @return the file for the copy (the input itself if no path needed moving)
   * @throws ToolException (exit 3) naming the key if the file is not Spark's format
   */
  static byte[] relocate(byte[] bytes, String source, String destination, String key)
      throws ToolException {
    String text = new String(bytes, StandardCharsets.UTF_8);
    int newline = text.indexOf('\n');
    if (newline < 0 || !text.substring(0, newline).trim().equals("v2")) {
      throw unreadable(key, "expected a first line \"v2\"", null);
    }
    JsonNode root;
    try {
      root = ToolContext.JSON.readTree(text.substring(newline + 1));
    } catch (IOException e) {
      throw unreadable(key, e.getMessage(), e);
    }
    if (root == null || !root.path("stateStoreInfo").isArray()) {
      throw unreadable(key, "expected a JSON object with \"stateStoreInfo\"", null);
    }
    boolean changed = false;
    for (JsonNode store : root.get("stateStoreInfo")) {
      if (!(store instanceof ObjectNode o)) {
        continue;
      }
      JsonNode one = o.get("stateSchemaFilePath");
      if (one != null && one.isTextual()) {
        Optional<String> moved = moved(one.asText(), source, destination);
        if (moved.isPresent()) {
          o.put("stateSchemaFilePath", moved.get());
          changed = true;
        }
      }
      JsonNode many = o.get("stateSchemaFilePaths");
      if (many instanceof ArrayNode list) {
        for (int i = 0; i < list.size(); i++) {
          Optional<String> moved = list.get(i).isTextual()
              ? moved(list.get(i).asText(), source, destination) : Optional.empty();
          if (moved.isPresent()) {
            list.set(i, TextNode.valueOf(moved.get()));
            changed = true;
          }
        }
      }
    }
    if (!changed) {
      return bytes;
    }
    try {
      return (text.substring(0, newline + 1) + ToolContext.JSON.writeValueAsString(root))
          .getBytes(StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw unreadable(key, e.getMessage(), e);
    }
  }

  /**
   * {@code path} under {@code destination} if it lies under {@code source}, else empty. The
   * three are compared as text, not decoded as URIs: Spark writes the path as Hadoop's {@code
   * Path.toString} (a space stays a space, {@code %41} stays three characters), and the tool
   * takes locations literally. S3 schemes ({@code s3}, {@code s3a}, {@code s3n}) are one
   * location family, as are {@code file:} in its forms and a plain absolute path.
   *
   * @param path an absolute path Spark wrote, such as {@code
   *     s3a://b/ckpt/state/0/_stateSchema/default/0_<uuid>} or {@code file:/tmp/ckpt/...}
   * @param source the source checkpoint's location as given to the tool
   * @param destination the copy's location as given to the tool
   * @return the moved path (the path's own scheme where path and destination are of one
   *     family, else the destination's; a local path as {@code file:/...}), or empty if {@code
   *     path} is not under {@code source}
   */
  static Optional<String> moved(String path, String source, String destination) {
    Location p = Location.of(path);
    Location s = Location.of(source);
    Location d = Location.of(destination);
    if (p == null || s == null || d == null || !p.family().equals(s.family())
        || !p.rest().startsWith(s.rest() + "/")) {
      return Optional.empty();
    }
    String below = p.rest().substring(s.rest().length() + 1);
    String scheme = p.family().equals(d.family()) ? p.scheme() : d.scheme();
    String prefix = d.family().equals("file") ? "file:" : scheme + "://";
    return Optional.of(prefix + d.rest() + "/" + below);
  }

  /**
   * A location split as text: {@code family} ({@code s3} or {@code file}, or another scheme),
   * the scheme as written ({@code file} for a plain path), and the rest without trailing
   * slashes ({@code bucket/prefix} for S3, the absolute path for local files).
   */
  private record Location(String family, String scheme, String rest) {
    /** The location, or null if it is neither an S3 nor a local one (never moved). */
    static Location of(String text) {
      int colon = text.indexOf(':');
      int slash = text.indexOf('/');
      if (colon > 1 && (slash < 0 || colon < slash)) {
        String scheme = text.substring(0, colon).toLowerCase(Locale.ROOT);
        String after = text.substring(colon + 1);
        if (scheme.equals("s3") || scheme.equals("s3a") || scheme.equals("s3n")) {
          return after.startsWith("//") ? new Location("s3", text.substring(0, colon),
              trimmed(after.substring(2))) : null;
        }
        if (scheme.equals("file")) {
          // file:/p, file:///p (empty authority) and file://localhost/p name /p
          String p = after;
          if (p.startsWith("//")) {
            int next = p.indexOf('/', 2);
            p = next < 0 ? "/" : p.substring(next);
          }
          return p.startsWith("/") ? new Location("file", "file", trimmed(p)) : null;
        }
        return new Location(scheme, text.substring(0, colon), trimmed(after));
      }
      return text.startsWith("/") ? new Location("file", "file", trimmed(text)) : null;
    }
  }

  private static String trimmed(String path) {
    String p = path == null ? "" : path;
    while (p.endsWith("/")) {
      p = p.substring(0, p.length() - 1);
    }
    return p;
  }

  private static ToolException unreadable(String key, String why, Throwable cause) {
    return new ToolException(StrataTool.EXIT_UNREADABLE, "Cannot copy " + key + ": it is not "
        + "Spark's operator state metadata (version 2): " + why, cause);
  }
}
