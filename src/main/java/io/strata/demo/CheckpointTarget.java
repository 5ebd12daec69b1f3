package io.strata.demo;

import java.net.URI;
import java.nio.file.Paths;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Where the run's checkpoints go and the Spark settings to reach it: Hadoop S3A for Spark's own
 * checkpoint files (offsets, commits, metadata, schemas) and Strata's S3 settings for the state.
 *
 * @param root checkpoint root of this run; each query checkpoints to {@code <root>/<query>}
 * @param sparkConf settings to put on the SparkSession
 * @param description a line for the console, without credentials
 */
record CheckpointTarget(String root, Map<String, String> sparkConf, String description) {

  /** Prefix of Strata's own settings; Spark ships all {@code stateStore.*} keys to executors. */
  static final String STRATA = "spark.sql.streaming.stateStore.strata.";

  CheckpointTarget {
    sparkConf = Map.copyOf(sparkConf);
  }

  /** The checkpoint location of one query. */
  String queryCheckpoint(String query) {
    return root + "/" + query;
  }

  /** The bucket and run prefix on the demo's own S3Proxy. */
  static CheckpointTarget localS3Proxy(S3ProxyServer server, String bucket, String runId) {
    URI endpoint = server.endpoint();
    Map<String, String> conf =
        s3Conf(endpoint, "us-east-1", true, S3ProxyServer.ACCESS_KEY, S3ProxyServer.SECRET_KEY);
    return new CheckpointTarget(
        "s3://" + bucket + "/" + runId,
        conf,
        "s3://" + bucket + "/" + runId + " on a local S3Proxy at " + endpoint);
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
            o.secretKey().orElse(null)));
    String where = o.endpoint().map(e -> " at " + e).orElse(" (AWS S3)");
    String creds = o.accessKey().isPresent() ? "" : ", credentials from the AWS default chain";
    return new CheckpointTarget(base + "/" + runId, conf, base + "/" + runId + where + creds);
  }

  private static Map<String, String> s3Conf(
      URI endpoint, String region, boolean pathStyle, String accessKey, String secretKey) {
    Map<String, String> c = new LinkedHashMap<>();
    // s3:// as well as s3a:// through S3A, for FileSystem and FileContext (Spark's checkpoint
    // file manager prefers FileContext).
    c.put("spark.hadoop.fs.s3.impl", "org.apache.hadoop.fs.s3a.S3AFileSystem");
    c.put("spark.hadoop.fs.AbstractFileSystem.s3.impl", "org.apache.hadoop.fs.s3a.S3A");
    // S3Proxy returns no ETag on HEAD of a directory marker; S3A's rename then fails without this.
    c.put("spark.hadoop.fs.s3a.change.detection.version.required", "false");
    c.put("spark.hadoop.fs.s3a.path.style.access", Boolean.toString(pathStyle));
    c.put(STRATA + "s3.pathStyleAccess", Boolean.toString(pathStyle));
    if (endpoint != null) {
      c.put("spark.hadoop.fs.s3a.endpoint", endpoint.toString());
      c.put(STRATA + "s3.endpoint", endpoint.toString());
      if ("http".equals(endpoint.getScheme())) {
        c.put("spark.hadoop.fs.s3a.connection.ssl.enabled", "false");
      }
    }
    if (region != null) {
      c.put("spark.hadoop.fs.s3a.endpoint.region", region);
      c.put(STRATA + "s3.region", region);
    }
    if (accessKey != null) {
      c.put(
          "spark.hadoop.fs.s3a.aws.credentials.provider",
          "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider");
      c.put("spark.hadoop.fs.s3a.access.key", accessKey);
      c.put("spark.hadoop.fs.s3a.secret.key", secretKey);
      c.put(STRATA + "s3.accessKeyId", accessKey);
      c.put(STRATA + "s3.secretAccessKey", secretKey);
    }
    return c;
  }

  @Override
  public String toString() {
    return description; // never the credentials in sparkConf
  }
}
