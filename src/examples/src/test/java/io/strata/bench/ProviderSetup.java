// SPDX-License-Identifier: Apache-2.0
package io.strata.bench;

import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A state store provider and how Spark reaches the S3 server, as the end-to-end benchmark runs
 * it. Every set-up checkpoints to the same server through {@code s3a://}; the provider is chosen
 * only through Spark's {@code spark.sql.streaming.stateStore.providerClass}, so the benchmark
 * depends on no provider's internals.
 *
 * <p>"Default" is Spark's out-of-the-box behaviour on S3A: {@code FileContextBasedCheckpointFileManager}
 * (write a temporary file, then rename it: a COPY and a DELETE on S3) and checkpoint file
 * checksums on (a {@code .crc} object next to each state file). "Tuned" is what Spark's cloud
 * integration guide advises for S3: {@code spark.sql.streaming.checkpointFileManagerClass} set
 * to spark-hadoop-cloud's {@code AbortableStreamBasedCheckpointFileManager} (write the final
 * object directly, abort the upload on failure) and checksums off
 * ({@code spark.sql.streaming.checkpoint.fileChecksum.enabled=false}).
 */
enum ProviderSetup {
  /** Strata; Spark's own offset/commit logs use the tuned file manager. */
  STRATA("strata", Provider.STRATA, true, false),
  /**
   * Strata for the state and for Spark's own checkpoint files ({@code StrataCheckpointFileManager}:
   * one create-only PUT per log entry, no S3A on the checkpoint path).
   */
  STRATA_CHECKPOINT("strata-checkpoint", Provider.STRATA, false, false),
  /** Strata with Spark's default file manager for Spark's own offset/commit logs. */
  STRATA_DEFAULT("strata-default", Provider.STRATA, false, false),
  ROCKSDB_DEFAULT("rocksdb-default", Provider.ROCKSDB, false, false),
  ROCKSDB_TUNED("rocksdb-tuned", Provider.ROCKSDB, true, false),
  ROCKSDB_CHANGELOG_DEFAULT("rocksdb-changelog-default", Provider.ROCKSDB, false, true),
  /** The peer to beat: RocksDB with changelog checkpointing, tuned for S3. */
  ROCKSDB_CHANGELOG_TUNED("rocksdb-changelog-tuned", Provider.ROCKSDB, true, true),
  HDFS_DEFAULT("hdfs-default", Provider.HDFS, false, false),
  HDFS_TUNED("hdfs-tuned", Provider.HDFS, true, false);

  /** The set-ups a full run compares (all but {@link #STRATA_DEFAULT}). */
  static final String DEFAULT_LIST = "strata,strata-checkpoint,rocksdb-default,rocksdb-tuned,"
      + "rocksdb-changelog-default,rocksdb-changelog-tuned,hdfs-default,hdfs-tuned";

  /** spark-hadoop-cloud's checkpoint file manager that writes objects in place. */
  static final String ABORTABLE_MANAGER =
      "org.apache.spark.internal.io.cloud.AbortableStreamBasedCheckpointFileManager";

  /** Strata's checkpoint file manager for Spark's own checkpoint files. */
  static final String STRATA_MANAGER = "io.strata.checkpoint.StrataCheckpointFileManager";

  /** The provider classes. */
  enum Provider {
    STRATA("io.strata.spark.StrataStateStoreProvider"),
    ROCKSDB("org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"),
    HDFS("org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider");

    final String className;

    Provider(String className) {
      this.className = className;
    }
  }

  private final String id;
  private final Provider provider;
  private final boolean tuned;
  private final boolean changelog;

  ProviderSetup(String id, Provider provider, boolean tuned, boolean changelog) {
    this.id = id;
    this.provider = provider;
    this.tuned = tuned;
    this.changelog = changelog;
  }

  /** The name used on the command line and in results. */
  String id() {
    return id;
  }

  Provider provider() {
    return provider;
  }

  boolean tuned() {
    return tuned;
  }

  /** Spark settings of this set-up (on top of the common S3A and Strata endpoint settings). */
  Map<String, String> sparkConf() {
    Map<String, String> c = new LinkedHashMap<>();
    c.put("spark.sql.streaming.stateStore.providerClass", provider.className);
    if (provider == Provider.ROCKSDB) {
      c.put("spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled",
          Boolean.toString(changelog));
    }
    if (this == STRATA_CHECKPOINT) {
      c.put("spark.sql.streaming.checkpointFileManagerClass", STRATA_MANAGER);
      c.put("spark.sql.streaming.checkpoint.fileChecksum.enabled", "false");
    } else if (tuned) {
      c.put("spark.sql.streaming.checkpointFileManagerClass", ABORTABLE_MANAGER);
      c.put("spark.sql.streaming.checkpoint.fileChecksum.enabled", "false");
    }
    return c;
  }

  /**
   * The set-up named {@code id}.
   *
   * @throws IllegalArgumentException naming the allowed ids if there is none
   */
  static ProviderSetup of(String id) {
    for (ProviderSetup s : values()) {
      if (s.id.equals(id)) {
        return s;
      }
    }
    throw new IllegalArgumentException("Unknown set-up '" + id + "'; expected one of "
        + Arrays.stream(values()).map(ProviderSetup::id).toList());
  }
}
