// SPDX-License-Identifier: Apache-2.0
package io.strata.demo;

import io.strata.testkit.S3ProxyServer;
import java.net.URI;
import java.nio.file.Paths;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Where the run's checkpoints go and the Spark settings to reach it: Strata's S3 settings, used
 * by Strata's state store and by Strata's checkpoint file manager for Spark's own checkpoint
 * files (offsets, commits, metadata, schemas); or, with {@code --s3a-checkpoint-files}, Hadoop
 * S3A and Spark's default manager for those files.
 *
 * @param root checkpoint root of this run; each query checkpoints to {@code <root>/<query>}
 * @param sparkConf settings to put on the SparkSession
 * @param description a line for the console, without credentials
 */
record CheckpointTarget(String root, Map<String, String> sparkConf, String description) {

  /** Prefix of Strata's own settings; Spark ships all {@code stateStore.*} keys to executors. */
  static final String STRATA = "spark.sql.streaming.stateStore.strata.";

  /** Spark's setting that selects the checkpoint file manager. */
  static final String CHECKPOINT_FILE_MANAGER = "spark.sql.streaming.checkpointFileManagerClass";

  /** Strata's checkpoint file manager (offsets, commits, metadata on S3 by conditional PUT). */
  static final String STRATA_CHECKPOINT_FILE_MANAGER =
      "io.strata.checkpoint.StrataCheckpointFileManager";

  CheckpointTarget {
    sparkConf = Map.copyOf(sparkConf);
  }

  /** The checkpoint location of one query. */
  String queryCheckpoint(String query) {
    return root + "/" + query;
  }

  /**
   * The bucket and run prefix on the demo's own S3Proxy.
   *
   * @param s3a Spark's own checkpoint files through S3A instead of Strata's manager
   */
  static CheckpointTarget localS3Proxy(
      S3ProxyServer server, String bucket, String runId, boolean s3a) {
    URI endpoint = server.endpoint();
    Map<String, String> conf =
        s3Conf(
            endpoint, "us-east-1", true, S3ProxyServer.ACCESS_KEY, S3ProxyServer.SECRET_KEY, s3a);
    return new CheckpointTarget(
        "s3://" + bucket + "/" + runId,
        conf,
        "s3://" + bucket + "/" + runId + " on a local S3Proxy at " + endpoint + files(s3a));
  }

  private static String files(boolean s3a) {
    return s3a
        ? " (Spark's checkpoint files through S3A)"
        : " (Spark's checkpoint files through Strata)";
  }

  /** The target named by {@code --checkpoint} and friends; the run id is appended. */
  static CheckpointTarget fromOptions(DemoOptions o, String runId) {
    URI uri = o.checkpoint().orElseThrow();
    if ("file".equals(uri.getScheme())) {
      String path = uri.getPath() != null ? uri.getPath() : uri.getSchemeSpecificPart();
      String root = Paths.get(path).toAbsolutePath().resolve(runId).toUri().toString();
      root = root.endsWith("/") ? root.substring(0, root.length() - 1) : root;
      return new CheckpointTarget(root, Map.of(), root + " (local directory)");
    }
    String base = uri.toString().replaceAll("/+$", "");
    Map<String, String> conf = new LinkedHashMap<>();
    conf.putAll(
        s3Conf(
            o.endpoint().orElse(null),
            o.region().orElse(null),
            o.pathStyle(),
            o.accessKey().orElse(null),
            o.secretKey().orElse(null),
            o.s3aCheckpointFiles()));
    String where = o.endpoint().map(e -> " at " + e).orElse(" (AWS S3)");
    String creds = o.accessKey().isPresent() ? "" : ", credentials from the AWS default chain";
    return new CheckpointTarget(
        base + "/" + runId,
        conf,
        base + "/" + runId + where + creds + files(o.s3aCheckpointFiles()));
  }

  private static Map<String, String> s3Conf(
      URI endpoint,
      String region,
      boolean pathStyle,
      String accessKey,
      String secretKey,
      boolean s3a) {
    Map<String, String> c = new LinkedHashMap<>();
    // One set of S3 settings for the state (Strata's provider) and, through Strata's checkpoint
    // file manager, for Spark's own checkpoint files: no Hadoop S3A involved.
    c.put(STRATA + "s3.pathStyleAccess", Boolean.toString(pathStyle));
    if (endpoint != null) {
      c.put(STRATA + "s3.endpoint", endpoint.toString());
    }
    if (region != null) {
      c.put(STRATA + "s3.region", region);
    }
    if (accessKey != null) {
      c.put(STRATA + "s3.accessKeyId", accessKey);
      c.put(STRATA + "s3.secretAccessKey", secretKey);
    }
    if (!s3a) {
      c.put(CHECKPOINT_FILE_MANAGER, STRATA_CHECKPOINT_FILE_MANAGER);
      return c;
    }
    // s3:// as well as s3a:// through S3A, for FileSystem and FileContext (Spark's default
    // checkpoint file manager prefers FileContext).
    c.put("spark.hadoop.fs.s3.impl", "org.apache.hadoop.fs.s3a.S3AFileSystem");
    c.put("spark.hadoop.fs.AbstractFileSystem.s3.impl", "org.apache.hadoop.fs.s3a.S3A");
    // S3Proxy returns no ETag on HEAD of a directory marker; S3A's rename then fails without this.
    c.put("spark.hadoop.fs.s3a.change.detection.version.required", "false");
    c.put("spark.hadoop.fs.s3a.path.style.access", Boolean.toString(pathStyle));
    if (endpoint != null) {
      c.put("spark.hadoop.fs.s3a.endpoint", endpoint.toString());
      if ("http".equals(endpoint.getScheme())) {
        c.put("spark.hadoop.fs.s3a.connection.ssl.enabled", "false");
      }
    }
    if (region != null) {
      c.put("spark.hadoop.fs.s3a.endpoint.region", region);
    }
    if (accessKey != null) {
      c.put(
          "spark.hadoop.fs.s3a.aws.credentials.provider",
          "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider");
      c.put("spark.hadoop.fs.s3a.access.key", accessKey);
      c.put("spark.hadoop.fs.s3a.secret.key", secretKey);
    }
    return c;
  }

  @Override
  public String toString() {
    return description; // never the credentials in sparkConf
  }
}
