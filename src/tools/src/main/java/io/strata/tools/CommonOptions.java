// SPDX-License-Identifier: Apache-2.0
package io.strata.tools;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import picocli.CommandLine.Option;

/**
 * The options every command takes: where the S3 settings come from, the output form, and the
 * parallelism. The settings are the provider's own keys ({@code
 * spark.sql.streaming.stateStore.strata.*}, with S3A's {@code fs.s3a.*} as fallbacks), so a
 * job's {@code spark-defaults.conf} works as the properties file as it is.
 */
final class CommonOptions {
  @Option(names = "--conf-file", paramLabel = "FILE",
      description = "A properties file of settings, e.g. a job's spark-defaults.conf "
          + "(spark.sql.streaming.stateStore.strata.* keys, spark.hadoop.fs.s3a.* or fs.s3a.* "
          + "fallbacks, spark.sql.streaming.minBatchesToRetain). Whitespace- or '='-separated.")
  Path confFile;

  @Option(names = "--conf", paramLabel = "KEY=VALUE",
      description = "One setting, as in the file; wins over the file. Repeatable.")
  List<String> conf = new ArrayList<>();

  @Option(names = "--endpoint", paramLabel = "URL",
      description = "Short for --conf spark.sql.streaming.stateStore.strata.s3.endpoint=URL.")
  String endpoint;

  @Option(names = "--region", paramLabel = "REGION",
      description = "Short for --conf spark.sql.streaming.stateStore.strata.s3.region=REGION.")
  String region;

  @Option(names = "--path-style",
      description = "Short for --conf spark.sql.streaming.stateStore.strata.s3.pathStyleAccess"
          + "=true.")
  boolean pathStyle;

  @Option(names = "--access-key", paramLabel = "KEY",
      description = "Short for --conf spark.sql.streaming.stateStore.strata.s3.accessKeyId=KEY "
          + "(the flights demo's option too). Without keys: the AWS default credential chain.")
  String accessKey;

  @Option(names = "--secret-key", paramLabel = "SECRET",
      description = "Short for --conf spark.sql.streaming.stateStore.strata.s3.secretAccessKey"
          + "=SECRET; never printed. A command line is visible to other users of the machine: "
          + "prefer --conf-file or the AWS default chain for real credentials.")
  String secretKey;

  @Option(names = "--json", description = "Print one JSON document instead of tables.")
  boolean json;

  @Option(names = "--threads", paramLabel = "N", defaultValue = "8",
      description = "Stores worked on at once, and S3 requests at once within them "
          + "(default: ${DEFAULT-VALUE}).")
  int threads;
}
