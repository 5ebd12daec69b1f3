// SPDX-License-Identifier: Apache-2.0
package io.strata.tools;

import io.strata.config.S3aFallbacks;
import io.strata.config.StrataConf;
import io.strata.objectstore.ObjectStores;
import io.strata.sync.GcSettings;
import java.io.IOException;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Properties;

/**
 * The settings of one run of the tool, in the provider's terms: Strata's keys resolved by {@link
 * StrataConf#from} (the same validation and S3A fallbacks as the provider, per bucket), and the
 * retention Spark's maintenance uses. Sources, later winning: JVM system properties starting
 * with {@code spark.} (what {@code spark-submit --conf} passes to a client-mode driver), the
 * {@code --conf-file}, each {@code --conf}, then the short flags.
 */
final class ToolSettings {
  /** Spark's {@code spark.sql.streaming.minBatchesToRetain}. */
  static final String MIN_BATCHES_TO_RETAIN = "spark.sql.streaming.minBatchesToRetain";
  private static final String HADOOP = "spark.hadoop.";

  private final Map<String, String> all;

  private ToolSettings(Map<String, String> all) {
    this.all = all;
  }

  /**
   * Collects the settings.
   *
   * @throws ToolException (exit 2) if the file cannot be read or a {@code --conf} has no '='
   */
  static ToolSettings from(CommonOptions o) throws ToolException {
    Map<String, String> all = new LinkedHashMap<>();
    System.getProperties().forEach((k, v) -> {
      if (k.toString().startsWith("spark.")) {
        all.put(k.toString(), v.toString());
      }
    });
    if (o.confFile != null) {
      Properties p = new Properties();
      try (Reader r = Files.newBufferedReader(o.confFile, StandardCharsets.UTF_8)) {
        p.load(r);
      } catch (IOException e) {
        // NoSuchFileException and AccessDeniedException carry only the path as message.
        String why = e instanceof java.nio.file.NoSuchFileException ? "no such file"
            : e instanceof java.nio.file.AccessDeniedException ? "permission denied"
            : e.getClass().getSimpleName() + ": " + e.getMessage();
        throw new ToolException(StrataTool.EXIT_USAGE, "Cannot read --conf-file " + o.confFile
            + ": " + why + " (a file of 'key value' or 'key=value' lines, as Spark's "
            + "spark-defaults.conf)", e);
      }
      p.stringPropertyNames().forEach(k -> all.put(k, p.getProperty(k).trim()));
    }
    for (String kv : o.conf) {
      int eq = kv.indexOf('=');
      if (eq <= 0) {
        throw new ToolException(StrataTool.EXIT_USAGE, "Invalid --conf '" + kv
            + "': expected KEY=VALUE", null);
      }
      all.put(kv.substring(0, eq).trim(), kv.substring(eq + 1).trim());
    }
    if (o.endpoint != null) {
      all.put(StrataConf.S3_ENDPOINT.fullKey(), o.endpoint);
    }
    if (o.region != null) {
      all.put(StrataConf.S3_REGION.fullKey(), o.region);
    }
    if (o.pathStyle) {
      all.put(StrataConf.S3_PATH_STYLE.fullKey(), "true");
    }
    if (o.accessKey != null) {
      all.put(StrataConf.S3_ACCESS_KEY.fullKey(), o.accessKey);
    }
    if (o.secretKey != null) {
      all.put(StrataConf.S3_SECRET_KEY.fullKey(), o.secretKey);
    }
    return new ToolSettings(all);
  }

  /**
   * Strata's settings for {@code location}, as the provider resolves them for its bucket.
   *
   * @throws ToolException (exit 2) naming the key of the first bad setting
   */
  StrataConf strata(String location) throws ToolException {
    Map<String, String> hadoop = new LinkedHashMap<>();
    all.forEach((k, v) -> {
      if (k.startsWith("fs.s3a.")) {
        hadoop.put(k, v);
      }
    });
    all.forEach((k, v) -> {
      if (k.startsWith(HADOOP + "fs.s3a.")) {
        hadoop.put(k.substring(HADOOP.length()), v);
      }
    });
    try {
      return StrataConf.from(all,
          S3aFallbacks.from(hadoop::get, ObjectStores.bucketOf(location)));
    } catch (IllegalArgumentException e) {
      throw new ToolException(StrataTool.EXIT_USAGE, e.getMessage(), e);
    }
  }

  /**
   * The retention maintenance applies: {@code minBatchesToRetain} (Spark's default 100) and
   * Strata's grace period.
   *
   * @throws ToolException (exit 2) if {@value #MIN_BATCHES_TO_RETAIN} is not a positive integer
   */
  GcSettings gc(StrataConf conf) throws ToolException {
    String r = all.getOrDefault(MIN_BATCHES_TO_RETAIN, "100");
    int retain;
    try {
      retain = Integer.parseInt(r.trim());
      if (retain < 1) {
        throw new NumberFormatException();
      }
    } catch (NumberFormatException e) {
      throw new ToolException(StrataTool.EXIT_USAGE, "Invalid value '" + r + "' for "
          + MIN_BATCHES_TO_RETAIN + ": expected a positive integer (Spark's default is 100)",
          null);
    }
    return new GcSettings(true, retain, 1, conf.gcGracePeriod().toMillis());
  }
}
