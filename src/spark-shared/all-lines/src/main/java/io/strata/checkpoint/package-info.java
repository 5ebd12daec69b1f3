// SPDX-License-Identifier: Apache-2.0
/**
 * Spark's own checkpoint files on S3 without Hadoop S3A: {@link
 * io.strata.checkpoint.StrataCheckpointFileManager}, a {@code CheckpointFileManager} for {@code
 * s3://} and {@code s3a://} checkpoint locations, set with {@code
 * spark.sql.streaming.checkpointFileManagerClass}. It writes the driver's offsets, commits,
 * metadata, source logs and state schema files through Strata's {@link
 * io.strata.objectstore.ObjectStore}: a metadata log write is one create-only PUT ({@code
 * If-None-Match: *}), so a second writer of the same batch gets Spark's "already exists" error;
 * there is no temp file, rename, COPY or directory marker.
 *
 * <p>This package owns the mapping of Hadoop paths to bucket and key, the streams Spark reads and
 * writes, what the JVM already knows about listed directories (so Spark's "exists?" before each
 * log write costs no request), and the request counts of checkpoint files. It may import Spark,
 * Hadoop, {@code objectstore}, {@code config} and {@code metrics}; not the AWS SDK, RocksDB, or
 * the state store packages ({@code spark}, {@code sync}, {@code engine}, {@code format}).
 */
package io.strata.checkpoint;
