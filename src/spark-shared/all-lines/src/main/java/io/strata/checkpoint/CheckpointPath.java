// SPDX-License-Identifier: Apache-2.0
package io.strata.checkpoint;

import java.net.URI;
import java.util.Locale;
import org.apache.hadoop.fs.Path;

/**
 * A Hadoop path on S3 split into what the object store needs: the bucket and the key. S3 has no
 * directories; a "directory" {@code d} is every key starting with {@code d/}.
 *
 * @param path the fully qualified path ({@code s3a://bucket/a/b}), as callers gave it; returned
 *     paths (listings, the checkpoint directory) keep its scheme
 * @param bucket the bucket (the URI authority)
 * @param key the key without leading or trailing '/'; empty for the bucket root
 */
record CheckpointPath(Path path, String bucket, String key) {

  /** Schemes this manager serves itself; all mean S3. */
  static boolean isS3(String scheme) {
    if (scheme == null) {
      return false;
    }
    String s = scheme.toLowerCase(Locale.ROOT);
    return s.equals("s3") || s.equals("s3a") || s.equals("s3n");
  }

  /**
   * Splits a qualified S3 path.
   *
   * @throws IllegalArgumentException if the path is not {@code s3://bucket/...} (any S3 scheme),
   *     has no bucket, or embeds credentials ({@code user:secret@bucket}, not echoed)
   */
  static CheckpointPath of(Path path) {
    URI uri = path.toUri();
    if (!isS3(uri.getScheme())) {
      throw new IllegalArgumentException("Not an S3 checkpoint path: '" + path
          + "'; expected s3://bucket/prefix or s3a://bucket/prefix");
    }
    String authority = uri.getRawAuthority();
    if (authority != null && authority.contains("@")) {
      throw new IllegalArgumentException("Invalid S3 checkpoint path (not shown: it embeds "
          + "credentials in user:secret@bucket form); configure credentials through the "
          + "spark.sql.streaming.stateStore.strata.s3.* settings instead");
    }
    if (authority == null || authority.isEmpty()) {
      throw new IllegalArgumentException("Invalid S3 checkpoint path '" + path
          + "': no bucket; expected s3://bucket/prefix");
    }
    String key = uri.getPath() == null ? "" : uri.getPath();
    while (key.startsWith("/")) {
      key = key.substring(1);
    }
    while (key.endsWith("/")) {
      key = key.substring(0, key.length() - 1);
    }
    return new CheckpointPath(path, authority, key);
  }

  /** True for the bucket root. */
  boolean isRoot() {
    return key.isEmpty();
  }

  /** The listing prefix of this path as a directory: "" for the root, else {@code key + "/"}. */
  String dirPrefix() {
    return key.isEmpty() ? "" : key + "/";
  }

  /** The parent directory's key ("" for a child of the root). */
  String parentKey() {
    int slash = key.lastIndexOf('/');
    return slash < 0 ? "" : key.substring(0, slash);
  }

  /** The last segment of the key. */
  String name() {
    return key.substring(key.lastIndexOf('/') + 1);
  }

  /** The path of a direct child named {@code name}, with this path's scheme and bucket. */
  Path child(String name) {
    return new Path(path, name);
  }
}
