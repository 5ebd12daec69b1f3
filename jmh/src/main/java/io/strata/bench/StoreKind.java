package io.strata.bench;

import java.util.Arrays;

/** Which provider and checkpoint location a benchmark runs against (the {@code store} param). */
enum StoreKind {
  /** Strata on a {@code file:} checkpoint location. */
  STRATA_FILE("strata-file"),
  /** Strata on an {@code s3://} location served by a local S3Proxy (a child JVM on loopback). */
  STRATA_S3("strata-s3"),
  /** Spark's RocksDBStateStoreProvider, default settings, on a {@code file:} location. */
  ROCKSDB_FILE("rocksdb-file"),
  /** Spark's RocksDBStateStoreProvider with changelog checkpointing, on a {@code file:} location. */
  ROCKSDB_CHANGELOG_FILE("rocksdb-changelog-file");

  private final String param;

  StoreKind(String param) {
    this.param = param;
  }

  /** The value of the JMH {@code store} parameter. */
  String param() {
    return param;
  }

  boolean isStrata() {
    return this == STRATA_FILE || this == STRATA_S3;
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
