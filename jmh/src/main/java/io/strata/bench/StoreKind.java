// SPDX-License-Identifier: Apache-2.0
package io.strata.bench;

import java.util.Arrays;

/** Which provider and checkpoint location a benchmark runs against (the {@code store} param). */
enum StoreKind {
  /** Strata on a {@code file:} checkpoint location. */
  STRATA_FILE("strata-file", Provider.STRATA, false, false),
  /** Strata on an {@code s3://} location served by a local S3Proxy (a child JVM on loopback). */
  STRATA_S3("strata-s3", Provider.STRATA, true, false),
  /** Spark's RocksDBStateStoreProvider, default settings, on a {@code file:} location. */
  ROCKSDB_FILE("rocksdb-file", Provider.ROCKSDB, false, false),
  /** Spark's RocksDBStateStoreProvider with changelog checkpointing, on a {@code file:} location. */
  ROCKSDB_CHANGELOG_FILE("rocksdb-changelog-file", Provider.ROCKSDB, false, true),
  /** Spark's RocksDBStateStoreProvider, default settings, on {@code s3a://} (Hadoop S3A). */
  ROCKSDB_S3("rocksdb-s3", Provider.ROCKSDB, true, false),
  /** Spark's RocksDBStateStoreProvider with changelog checkpointing, on {@code s3a://}. */
  ROCKSDB_CHANGELOG_S3("rocksdb-changelog-s3", Provider.ROCKSDB, true, true),
  /** Spark's default HDFSBackedStateStoreProvider on a {@code file:} location. */
  HDFS_FILE("hdfs-file", Provider.HDFS, false, false);

  /** The provider classes the kinds use. */
  enum Provider { STRATA, ROCKSDB, HDFS }

  private final String param;
  private final Provider provider;
  private final boolean s3;
  private final boolean changelog;

  StoreKind(String param, Provider provider, boolean s3, boolean changelog) {
    this.param = param;
    this.provider = provider;
    this.s3 = s3;
    this.changelog = changelog;
  }

  /** The value of the JMH {@code store} parameter. */
  String param() {
    return param;
  }

  Provider provider() {
    return provider;
  }

  boolean isStrata() {
    return provider == Provider.STRATA;
  }

  /** Whether the checkpoint lives on the S3 server (S3Proxy) rather than a local directory. */
  boolean isS3() {
    return s3;
  }

  /** Spark's RocksDB provider with changelog checkpointing on. */
  boolean changelog() {
    return changelog;
  }

  static StoreKind of(String param) {
    for (StoreKind k : values()) {
      if (k.param.equals(param)) {
        return k;
      }
    }
    throw new IllegalArgumentException("Unknown store '" + param + "'; expected one of "
        + Arrays.stream(values()).map(StoreKind::param).toList());
  }
}
