// SPDX-License-Identifier: Apache-2.0
package io.strata.demo;

import java.net.URI;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

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

  /** The usage text picocli renders from {@link Cli}'s options. */
  static String usage() {
    return new CommandLine(new Cli()).getUsageMessage(CommandLine.Help.Ansi.OFF);
  }

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

  /** Thrown by {@link #parse} for {@code --help}; the message is {@link #usage()}. */
  static final class HelpRequested extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    HelpRequested() {
      super(usage());
    }
  }

  /** True when the demo starts its own S3Proxy (no --checkpoint given). */
  boolean localS3Proxy() {
    return checkpoint.isEmpty();
  }

  /**
   * Parses the command line.
   *
   * @throws IllegalArgumentException with a message naming the bad option, followed by {@link
   *     #usage()}
   */
  static DemoOptions parse(String... args) {
    Cli c = new Cli();
    // An option's value may look like an option (a secret "-hx"): it is a value, so picocli's
    // message never echoes it as a misplaced option.
    CommandLine cl = new CommandLine(c).setOverwrittenOptionsAllowed(true)
        .setAllowOptionsAsOptionParameters(true);
    try {
      // an empty -Ddemo.args expands to one empty argument, which means no options
      cl.parseArgs(args.length == 1 && args[0].isBlank() ? new String[0] : args);
    } catch (CommandLine.ParameterException e) {
      // picocli's message names the option and, for an unknown one, the argument; the value of
      // --secret-key is always taken as a value, so it is never echoed
      throw new IllegalArgumentException(e.getMessage() + "\n" + usage(), e);
    }
    if (cl.isUsageHelpRequested()) {
      throw new HelpRequested();
    }
    if (c.conf.keySet().stream().anyMatch(String::isBlank)) {
      throw new IllegalArgumentException("--conf needs KEY=VALUE with a key, got '="
          + c.conf.get(c.conf.keySet().stream().filter(String::isBlank).findFirst().orElseThrow())
          + "'");
    }
    return new DemoOptions(
        Optional.ofNullable(c.data),
        Optional.ofNullable(c.checkpoint),
        Optional.ofNullable(c.endpoint),
        Optional.ofNullable(c.region),
        Optional.ofNullable(c.accessKey),
        Optional.ofNullable(c.secretKey),
        c.pathStyle,
        c.provider,
        (int) c.partitions,
        (int) c.files,
        c.stopAfter == null ? (int) c.files / 2 : (int) (long) c.stopAfter,
        c.maxRows,
        c.workDir,
        c.cacheDir,
        c.keep || c.serve,
        c.conf,
        c.hardStop,
        c.s3aCheckpointFiles,
        c.serve);
  }

  /** The options as picocli declares and parses them; {@link #parse} validates the result. */
  @Command(name = "FlightsDemo", mixinStandardHelpOptions = false, sortOptions = false,
      customSynopsis = "FlightsDemo [options]", usageHelpWidth = 100,
      footer = {"Spark runs in this JVM (local[2]) unless a master is set, e.g. by spark-submit",
          "--master spark://host:7077: then --checkpoint is required, and --data and",
          "--work-dir must be paths every worker sees at the same place (a shared volume)."})
  static final class Cli {
    @Option(names = "--data", paramLabel = "PATH",
        description = "flights parquet (default: ../shared/data/flights-3m.parquet, "
        + "else fetched with 'npm pack vega-datasets@3.2.1' into "
        + "--cache-dir)")
    Path data;

    @Option(names = "--checkpoint", paramLabel = "URI",
        description = "s3://bucket/prefix, s3a://bucket/prefix or file:/dir (default: "
        + "s3://strata-demo/<run id> on a local S3Proxy)")
    URI checkpoint;

    @Option(names = "--endpoint", paramLabel = "URL",
        description = "S3 endpoint (MinIO, ...); default AWS S3")
    URI endpoint;

    @Option(names = "--region", paramLabel = "R",
        description = "S3 region")
    String region;

    @Option(names = "--access-key", paramLabel = "K",
        description = "S3 access key (default: AWS default credential chain)")
    String accessKey;

    @Option(names = "--secret-key", paramLabel = "S",
        description = "S3 secret key")
    String secretKey;

    @Option(names = "--path-style",
        description = "path-style bucket addressing")
    boolean pathStyle;

    @Option(names = "--provider", paramLabel = "CLASS",
        description = "state store provider (default " + STRATA_PROVIDER + ")")
    String provider = STRATA_PROVIDER;

    @Option(names = "--partitions", paramLabel = "N", converter = Count.class,
        description = "shuffle partitions = state stores per query (default 8)")
    long partitions = 8;

    @Option(names = "--files", paramLabel = "N", converter = Count.class,
        description = "input files = micro-batches (default 32)")
    long files = 32;

    @Option(names = "--stop-after", paramLabel = "N", converter = Count.class,
        description = "files processed before the restart (default files/2)")
    Long stopAfter;

    @Option(names = "--max-rows", paramLabel = "N", converter = Count.class,
        description = "use only the first N flights by date (default: all)")
    long maxRows;

    @Option(names = "--work-dir", paramLabel = "DIR",
        description = "run directories go here (default target/strata-demo)")
    Path workDir = Paths.get("target", "strata-demo");

    @Option(names = "--cache-dir", paramLabel = "DIR",
        description = "cache for the fetched data (default ~/.cache/strata)")
    Path cacheDir = Paths.get(System.getProperty("user.home"), ".cache", "strata");

    @Option(names = "--conf", paramLabel = "KEY=VALUE",
        description = "an extra Spark setting (repeatable)")
    Map<String, String> conf = new LinkedHashMap<>();

    @Option(names = "--keep",
        description = "keep the run directory after a verified run")
    boolean keep;

    @Option(names = "--serve",
        description = "after the run, keep the local S3 server running until Ctrl-C "
        + "(implies --keep), to read the checkpoint with the strata tool; "
        + "the demo prints the command")
    boolean serve;

    @Option(names = "--hard-stop",
        description = "stop the running queries mid-stream (may interrupt a batch) "
        + "instead of letting them finish the first --stop-after files")
    boolean hardStop;

    @Option(names = "--s3a-checkpoint-files",
        description = "Spark's own checkpoint files (offsets, commits) through Hadoop "
        + "S3A (needs hadoop-aws) instead of Strata's checkpoint file "
        + "manager")
    boolean s3aCheckpointFiles;

    @Option(names = {"--help", "-h"}, usageHelp = true,
        description = "this text")
    boolean help;
  }

  /** A count: digits, with {@code _} or {@code ,} as thousands separators allowed. */
  static final class Count implements CommandLine.ITypeConverter<Long> {
    @Override
    public Long convert(String s) {
      try {
        return Long.parseLong(s.replace("_", "").replace(",", ""));
      } catch (NumberFormatException e) {
        throw new CommandLine.TypeConversionException("needs a number, got " + s);
      }
    }
  }
}
