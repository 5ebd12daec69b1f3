// SPDX-License-Identifier: Apache-2.0
/**
 * Hadoop's configuration as S3A reads it, for both Spark-facing packages ({@code spark}, the
 * state store provider on executors, and {@code checkpoint}, Spark's own checkpoint files on the
 * driver), which may not import each other: {@link io.strata.hadoop.HadoopLookup} reads S3A's
 * keys, secrets through Hadoop's credential providers. It may import Hadoop and {@code config};
 * not Spark, the AWS SDK, RocksDB or the state store packages.
 */
package io.strata.hadoop;
