// SPDX-License-Identifier: Apache-2.0
package io.strata.demo;

import java.net.URI;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

/**
 * The demo's command line, parsed and validated once.
 *
 * @param data the flights parquet file; empty to find or fetch the standard one
 * @param checkpoint checkpoint root ({@code s3://}, {@code s3a://} or {@code file:}); empty for
 *     {@code s3://strata-demo/<run id>} on a local S3Proxy the demo starts itself
 * @param endpoint S3 endpoint override (MinIO, S3Proxy, ...); empty for AWS S3
 * @param region S3 signing region; empty for the AWS default chain (or us-east-1 locally)
 * @param accessKey static access key; empty for the AWS default credential chain
 * @param secretKey static secret key; present exactly when {@code accessKey} is
 * @param pathStyle address buckets path-style ({@code endpoint/bucket/key})
 * @param provider the state store provider class
 * @param partitions {@code spark.sql.shuffle.partitions}, i.e. state stores per query
 * @param files how many input files (micro-batches) to split the flights into
 * @param stopAfterFiles how many files each query processes before the restart
 * @param maxRows use only the first this many flights by date; 0 for all
 * @param workDir where the run directory (input files, local state, outputs) goes
 * @param cacheDir where a fetched copy of the flights file is kept
 * @param keep keep the run directory after a verified run
 * @param serve after the run, keep the demo's own S3 server running until the process is
 *     stopped (Ctrl-C), so the {@code strata} tool can read the checkpoint; implies keep
 * @param conf extra Spark settings ({@code --conf key=value}), applied last
 * @param hardStop stop running queries mid-stream (all input present from the start) instead of
 *     letting them finish the first part of the input
 * @param s3aCheckpointFiles write Spark's own checkpoint files (offsets, commits, metadata)
 *     through Hadoop S3A and Spark's default checkpoint file manager instead of Strata's
 */
record DemoOptions(
    Optional<Path> data,
    Optional<URI> checkpoint,
    Optional<URI> endpoint,
    Optional<String> region,
    Optional<String> accessKey,
    Optional<String> secretKey,
    boolean pathStyle,
    String provider,
    int partitions,
    int files,
    int stopAfterFiles,
    long maxRows,
    Path workDir,
    Path cacheDir,
    boolean keep,
    Map<String, String> conf,
    boolean hardStop,
    boolean s3aCheckpointFiles,
    boolean serve) {

  /** Strata's provider, the default. */
  static final String STRATA_PROVIDER = "io.strata.spark.StrataStateStoreProvider";

  static final String USAGE =
      String.join(
          "\n",
          "Usage: FlightsDemo [options]",
          "  --data PATH          flights parquet (default: ../shared/data/flights-3m.parquet,",
          "                       else fetched with 'npm pack vega-datasets@3.2.1' into --cache-dir)",
          "  --checkpoint URI     s3://bucket/prefix, s3a://bucket/prefix or file:/dir",
          "                       (default: s3://strata-demo/<run id> on a local S3Proxy)",
          "  --endpoint URL       S3 endpoint (MinIO, ...); default AWS S3",
          "  --region R           S3 region",
          "  --access-key K       S3 access key (default: AWS default credential chain)",
          "  --secret-key S       S3 secret key",
          "  --path-style         path-style bucket addressing",
          "  --provider CLASS     state store provider (default " + STRATA_PROVIDER + ")",
          "  --partitions N       shuffle partitions = state stores per query (default 8)",
          "  --files N            input files = micro-batches (default 32)",
          "  --stop-after N       files processed before the restart (default files/2)",
          "  --max-rows N         use only the first N flights by date (default: all)",
          "  --work-dir DIR       run directories go here (default target/strata-demo)",
          "  --cache-dir DIR      cache for the fetched data (default ~/.cache/strata)",
          "  --conf KEY=VALUE     an extra Spark setting (repeatable)",
          "  --keep               keep the run directory after a verified run",
          "  --serve              after the run, keep the local S3 server running until",
          "                       Ctrl-C (implies --keep), to read the checkpoint with the",
          "                       strata tool; the demo prints the command",
          "  --hard-stop          stop the running queries mid-stream (may interrupt a batch)",
          "                       instead of letting them finish the first --stop-after files",
          "  --s3a-checkpoint-files  Spark's own checkpoint files (offsets, commits) through",
          "                       Hadoop S3A (needs hadoop-aws) instead of Strata's",
          "                       checkpoint file manager",
          "  --help               this text",
          "Spark runs in this JVM (local[2]) unless a master is set, e.g. by spark-submit",
          "--master spark://host:7077: then --checkpoint is required, and --data and",
          "--work-dir must be paths every worker sees at the same place (a shared volume).");

  DemoOptions {
    conf = Collections.unmodifiableMap(new LinkedHashMap<>(conf));
    if (partitions < 1) {
      throw new IllegalArgumentException("--partitions must be >= 1, got " + partitions);
    }
    if (files < 2) {
      throw new IllegalArgumentException("--files must be >= 2, got " + files);
    }
    if (stopAfterFiles < 1 || stopAfterFiles >= files) {
      throw new IllegalArgumentException(
          "--stop-after must be in [1, " + (files - 1) + "], got " + stopAfterFiles);
    }
    if (maxRows < 0) {
      throw new IllegalArgumentException("--max-rows must be >= 0, got " + maxRows);
    }
    if (accessKey.isPresent() != secretKey.isPresent()) {
      throw new IllegalArgumentException("--access-key and --secret-key go together");
    }
    checkpoint.ifPresent(
        uri -> {
          String scheme = String.valueOf(uri.getScheme());
          if (!scheme.equals("s3") && !scheme.equals("s3a") && !scheme.equals("file")) {
            throw new IllegalArgumentException(
                "--checkpoint must be s3://, s3a:// or file:, got " + uri);
          }
          if (!scheme.equals("file") && (uri.getHost() == null || uri.getHost().isEmpty())) {
            throw new IllegalArgumentException("--checkpoint has no bucket: " + uri);
          }
        });
    if (serve && checkpoint.isPresent()) {
      throw new IllegalArgumentException("--serve keeps the demo's own S3 server running; with "
          + "--checkpoint there is none (read that checkpoint with the strata tool directly)");
    }
    if (checkpoint.isEmpty()
        && (endpoint.isPresent() || accessKey.isPresent() || region.isPresent() || pathStyle)) {
      throw new IllegalArgumentException(
          "--endpoint, --region, --access-key, --secret-key and --path-style need --checkpoint");
    }
  }

  /** Thrown by {@link #parse} for {@code --help}; the message is {@link #USAGE}. */
  static final class HelpRequested extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    HelpRequested() {
      super(USAGE);
    }
  }

  /** True when the demo starts its own S3Proxy (no --checkpoint given). */
  boolean localS3Proxy() {
    return checkpoint.isEmpty();
  }

  /**
   * Parses the command line.
   *
   * @throws IllegalArgumentException with a message naming the bad option; {@link #USAGE} for
   *     the full list
   */
  static DemoOptions parse(String... args) {
    Optional<Path> data = Optional.empty();
    Optional<URI> checkpoint = Optional.empty();
    Optional<URI> endpoint = Optional.empty();
    Optional<String> region = Optional.empty();
    Optional<String> accessKey = Optional.empty();
    Optional<String> secretKey = Optional.empty();
    boolean pathStyle = false;
    String provider = STRATA_PROVIDER;
    int partitions = 8;
    int files = 32;
    Integer stopAfter = null;
    long maxRows = 0;
    Path workDir = Paths.get("target", "strata-demo");
    Path cacheDir = Paths.get(System.getProperty("user.home"), ".cache", "strata");
    boolean keep = false;
    boolean hardStop = false;
    boolean s3aCheckpointFiles = false;
    boolean serve = false;
    Map<String, String> conf = new LinkedHashMap<>();
    for (int i = 0; i < args.length; i++) {
      String a = args[i];
      switch (a) {
        case "--data" -> data = Optional.of(Paths.get(value(args, ++i, a)));
        case "--checkpoint" -> checkpoint = Optional.of(uri(value(args, ++i, a), a));
        case "--endpoint" -> endpoint = Optional.of(uri(value(args, ++i, a), a));
        case "--region" -> region = Optional.of(value(args, ++i, a));
        case "--access-key" -> accessKey = Optional.of(value(args, ++i, a));
        case "--secret-key" -> secretKey = Optional.of(value(args, ++i, a));
        case "--path-style" -> pathStyle = true;
        case "--provider" -> provider = value(args, ++i, a);
        case "--partitions" -> partitions = (int) number(value(args, ++i, a), a);
        case "--files" -> files = (int) number(value(args, ++i, a), a);
        case "--stop-after" -> stopAfter = (int) number(value(args, ++i, a), a);
        case "--max-rows" -> maxRows = number(value(args, ++i, a), a);
        case "--work-dir" -> workDir = Paths.get(value(args, ++i, a));
        case "--cache-dir" -> cacheDir = Paths.get(value(args, ++i, a));
        case "--keep" -> keep = true;
        case "--serve" -> serve = true;
        case "--hard-stop" -> hardStop = true;
        case "--s3a-checkpoint-files" -> s3aCheckpointFiles = true;
        case "--conf" -> {
          String kv = value(args, ++i, a);
          int eq = kv.indexOf('=');
          if (eq <= 0) {
            throw new IllegalArgumentException("--conf needs KEY=VALUE, got " + kv);
          }
          conf.put(kv.substring(0, eq), kv.substring(eq + 1));
        }
        case "--help", "-h" -> throw new HelpRequested();
        default -> {
          if (a.isBlank()) {
            continue; // an empty -Ddemo.args expands to one empty argument
          }
          throw new IllegalArgumentException("Unknown option " + a + "\n" + USAGE);
        }
      }
    }
    return new DemoOptions(
        data,
        checkpoint,
        endpoint,
        region,
        accessKey,
        secretKey,
        pathStyle,
        provider,
        partitions,
        files,
        stopAfter == null ? files / 2 : stopAfter,
        maxRows,
        workDir,
        cacheDir,
        keep || serve,
        conf,
        hardStop,
        s3aCheckpointFiles,
        serve);
  }

  private static String value(String[] args, int i, String option) {
    if (i >= args.length || args[i].startsWith("--")) {
      throw new IllegalArgumentException(option + " needs a value");
    }
    return args[i];
  }

  private static long number(String s, String option) {
    try {
      return Long.parseLong(s.replace("_", "").replace(",", ""));
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(option + " needs a number, got " + s, e);
    }
  }

  private static URI uri(String s, String option) {
    try {
      return URI.create(s);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(option + " needs a URI, got " + s, e);
    }
  }
}
