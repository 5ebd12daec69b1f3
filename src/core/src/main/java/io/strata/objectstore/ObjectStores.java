// SPDX-License-Identifier: Apache-2.0
package io.strata.objectstore;

import java.net.URI;
import java.net.URISyntaxException;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Objects;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Opens the {@link ObjectStore} for a checkpoint location string, as Spark users write it.
 *
 * <table>
 *   <caption>Supported locations</caption>
 *   <tr><th>location</th><th>store</th></tr>
 *   <tr><td>{@code s3://bucket/prefix}, {@code s3a://...}, {@code s3n://...}</td>
 *       <td>S3 (AWS SDK v2) rooted at that bucket and prefix; the scheme only selects S3, all
 *       three mean the same</td></tr>
 *   <tr><td>{@code file:/path}, {@code file:///path}, {@code file://localhost/path}</td>
 *       <td>a local directory</td></tr>
 *   <tr><td>a path without a scheme, {@code /tmp/ckpt} or {@code ckpt}</td>
 *       <td>a local directory (relative to the working directory)</td></tr>
 * </table>
 *
 * <p>Any other scheme ({@code hdfs:}, {@code gs:}, {@code abfs:}, ...) is rejected.
 */
public final class ObjectStores {
  /** Schemes {@link #open} accepts, for messages. */
  public static final String SUPPORTED = "s3://, s3a://, s3n://, file: or a local path";

  /** A URI scheme of at least two characters (one letter is a Windows drive). */
  private static final Pattern SCHEME = Pattern.compile("^([A-Za-z][A-Za-z0-9+.-]+):");

  private ObjectStores() { }

  /**
   * Opens the store for {@code location}. Does no network or disk I/O; failures to reach S3
   * show up on the first call. S3 stores lease a shared client from {@link SharedS3Clients} and
   * release it in {@link ObjectStore#close()}.
   *
   * @param location checkpoint location, see the class comment; a trailing '/' is ignored
   * @param s3 how to reach S3; required for S3 locations, ignored for local ones (may be null)
   * @param listener sees every HTTP attempt of an S3 store; null for none
   * @throws IllegalArgumentException if the scheme is not supported, the bucket is missing, the
   *     prefix has empty, "." or ".." segments, or an S3 location comes without settings
   */
  public static ObjectStore open(String location, S3Settings s3, RequestListener listener) {
    return open(location, () -> s3, listener);
  }

  /**
   * As {@link #open(String, S3Settings, RequestListener)}, with the S3 settings asked for only
   * when {@code location} is on S3: a local location never resolves (nor fails on) them.
   *
   * @param s3 supplies how to reach S3; called once for an S3 location, never for a local one;
   *     what it throws propagates
   */
  public static ObjectStore open(String location, Supplier<S3Settings> s3,
      RequestListener listener) {
    Objects.requireNonNull(location, "location");
    String scheme = scheme(location);
    if (scheme == null) {
      return new LocalObjectStore(localPath(location, location));
    }
    switch (scheme) {
      case "s3", "s3a", "s3n" -> {
        S3Location loc = parseS3(location);
        S3Settings settings = s3 == null ? null : s3.get();
        if (settings == null) {
          throw new IllegalArgumentException(
              "Cannot open " + location + ": an S3 location needs S3 settings");
        }
        SharedS3Clients.Lease lease = SharedS3Clients.lease(settings);
        try {
          return new S3ObjectStore(lease, loc.bucket(), loc.prefix(), listener, 1000);
        } catch (RuntimeException e) {
          lease.close();
          throw e;
        }
      }
      case "file" -> {
        return new LocalObjectStore(filePath(location));
      }
      default -> throw new IllegalArgumentException("Unsupported checkpoint location '"
          + location + "': scheme '" + scheme + ":' is not supported; use " + SUPPORTED);
    }
  }

  /**
   * The bucket of an S3 location, for per-bucket settings ({@code fs.s3a.bucket.<bucket>.*}).
   * Does no I/O.
   *
   * @param location checkpoint location, see the class comment
   * @return the bucket; null for a local location, an unsupported scheme or a malformed S3
   *     location ({@link #open} refuses those, naming what is wrong)
   */
  public static String bucketOf(String location) {
    String scheme = scheme(Objects.requireNonNull(location, "location"));
    if (scheme == null || !(scheme.equals("s3") || scheme.equals("s3a") || scheme.equals("s3n"))) {
      return null;
    }
    try {
      return parseS3(location).bucket();
    } catch (IllegalArgumentException malformed) {
      return null;
    }
  }

  /**
   * True if {@link #open} maps {@code location} to the local-filesystem store: a {@code file:}
   * location or a path without a scheme. Does no I/O and does not validate the rest of the
   * location ({@link #open} does).
   *
   * @param location checkpoint location, see the class comment
   */
  public static boolean isLocal(String location) {
    String scheme = scheme(Objects.requireNonNull(location, "location"));
    return scheme == null || scheme.equals("file");
  }

  /**
   * Joins a location and a relative path with exactly one '/', for example {@code
   * child("s3://b/ckpt/", "state/0")} is {@code s3://b/ckpt/state/0}.
   *
   * @throws IllegalArgumentException if {@code relative} is empty or starts with '/'
   */
  public static String child(String location, String relative) {
    if (relative == null || relative.isEmpty() || relative.startsWith("/")) {
      throw new IllegalArgumentException("Invalid relative path '" + relative + "' under "
          + location + ": must be non-empty and not start with '/'");
    }
    return location.endsWith("/") ? location + relative : location + "/" + relative;
  }

  /** The lower-case scheme of {@code location}, or null for a plain path. */
  static String scheme(String location) {
    Matcher m = SCHEME.matcher(location);
    return m.find() ? m.group(1).toLowerCase(Locale.ROOT) : null;
  }

  /** Bucket and normalized root prefix ("" or ending with '/') of an S3 location. */
  record S3Location(String bucket, String prefix) { }

  /**
   * Parses {@code s3://bucket/prefix} (any of the S3 schemes).
   *
   * @throws IllegalArgumentException naming the location if the bucket is missing or the prefix
   *     has empty, "." or ".." segments
   */
  static S3Location parseS3(String location) {
    String rest = location.substring(location.indexOf(':') + 1);
    if (!rest.startsWith("//")) {
      throw new IllegalArgumentException("Invalid S3 location '" + location
          + "': expected s3://bucket/prefix");
    }
    rest = rest.substring(2);
    int slash = rest.indexOf('/');
    String bucket = slash < 0 ? rest : rest.substring(0, slash);
    String path = slash < 0 ? "" : rest.substring(slash + 1);
    if (bucket.contains("@")) {
      // s3a://KEY:SECRET@bucket/...: never echo it, it carries credentials.
      throw new IllegalArgumentException("Invalid S3 location (not shown: it embeds credentials "
          + "in user:secret@bucket form): configure credentials through the S3 settings instead");
    }
    if (bucket.isEmpty()) {
      throw new IllegalArgumentException("Invalid S3 location '" + location
          + "': no bucket; expected s3://bucket/prefix");
    }
    try {
      return new S3Location(bucket, S3ObjectStore.normalizePrefix(path));
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("Invalid S3 location '" + location
          + "': the prefix must not have empty, '.' or '..' segments", e);
    }
  }

  /** The local path of a {@code file:} location. */
  static Path filePath(String location) {
    try {
      URI uri = new URI(location);
      if (uri.isOpaque()) {
        throw new IllegalArgumentException("Invalid file location '" + location
            + "': expected file:/absolute/path or file:///absolute/path");
      }
      String host = uri.getAuthority();
      if (host != null && !host.isEmpty() && !host.equalsIgnoreCase("localhost")) {
        throw new IllegalArgumentException("Invalid file location '" + location
            + "': remote host '" + host + "' is not supported");
      }
      return localPath(uri.getPath(), location);
    } catch (URISyntaxException e) {
      // Not a valid URI (for example an unencoded space): take the text after "file:" literally.
      String rest = location.substring("file:".length());
      if (rest.startsWith("//")) {
        int slash = rest.indexOf('/', 2);
        String host = slash < 0 ? rest.substring(2) : rest.substring(2, slash);
        if (!host.isEmpty() && !host.equalsIgnoreCase("localhost")) {
          throw new IllegalArgumentException("Invalid file location '" + location
              + "': remote host '" + host + "' is not supported", e);
        }
        rest = slash < 0 ? "/" : rest.substring(slash);
      }
      return localPath(rest, location);
    }
  }

  private static Path localPath(String path, String location) {
    if (path == null || path.isEmpty()) {
      throw new IllegalArgumentException("Invalid local location '" + location + "': no path");
    }
    try {
      return Path.of(path);
    } catch (InvalidPathException e) {
      throw new IllegalArgumentException(
          "Invalid local location '" + location + "': " + e.getMessage(), e);
    }
  }
}
