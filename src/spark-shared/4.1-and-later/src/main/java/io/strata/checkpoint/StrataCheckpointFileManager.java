// SPDX-License-Identifier: Apache-2.0
package io.strata.checkpoint;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.PathFilter;
import org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager;
import org.apache.spark.sql.execution.streaming.checkpointing.FileContextBasedCheckpointFileManager;
import org.apache.spark.sql.execution.streaming.checkpointing.FileSystemBasedCheckpointFileManager;

/**
 * Spark's checkpoint files (offsets, commits, metadata, source logs, state schema and operator
 * metadata files) on S3 by create-only PUTs, the Spark 4.1 and 4.2 build: set {@code
 * spark.sql.streaming.checkpointFileManagerClass=io.strata.checkpoint.StrataCheckpointFileManager}.
 *
 * <p>What it does is {@link StrataCheckpointFileManagerBase}'s, written once for every line (S3
 * paths to {@link S3CheckpointFiles}, any other scheme to Spark's default manager). This class
 * only adapts it to the package Spark 4.1 moved {@code CheckpointFileManager} to
 * ({@code org.apache.spark.sql.execution.streaming.checkpointing}, with {@code close()}):
 * {@code createAtomic} and the calls passed on to Spark's default manager. Thread-safe.
 */
public final class StrataCheckpointFileManager
    extends StrataCheckpointFileManagerBase<StrataCheckpointFileManager.Default>
    implements CheckpointFileManager {
  /** The Spark setting that selects a checkpoint file manager. */
  public static final String SPARK_CONF = "spark.sql.streaming.checkpointFileManagerClass";

  /**
   * Creates the manager Spark asks for with {@code CheckpointFileManager.create(path, conf)}.
   * Does no network I/O.
   *
   * @param path a path of the checkpoint (its root, a log directory or a file's parent)
   * @param hadoopConf the session's Hadoop configuration (with its SQL settings)
   * @throws IllegalArgumentException for an S3 path without bucket or with credentials in it,
   *     or an invalid Strata setting (the message names the key); Spark reports it as a failure
   *     to load the checkpoint file manager
   */
  public StrataCheckpointFileManager(Path path, Configuration hadoopConf) {
    super(path, hadoopConf, (p, c) -> new Default(sparkDefault(p, c,
        FileContextBasedCheckpointFileManager::new, FileSystemBasedCheckpointFileManager::new)));
  }

  /**
   * Writes {@code path} atomically at close: create-only unless {@code overwriteIfPossible}.
   *
   * @return a stream whose {@code close()} sends one PUT and whose {@code cancel()} sends nothing;
   *     {@code close()} throws Hadoop's {@code FileAlreadyExistsException} if a create-only
   *     write finds the object there
   */
  @Override
  public CancellableFSDataOutputStream createAtomic(Path path, boolean overwriteIfPossible) {
    return sparkDefault() != null
        ? sparkDefault().manager().createAtomic(path, overwriteIfPossible)
        : new CancellablePut(s3().createAtomic(path, overwriteIfPossible));
  }

  /** Spark's default manager as the calls {@link StrataCheckpointFileManagerBase} passes on. */
  record Default(CheckpointFileManager manager) implements SparkDefault {
    @Override
    public FSDataInputStream open(Path path) {
      return manager.open(path);
    }

    @Override
    public FileStatus[] list(Path path, PathFilter filter) {
      return manager.list(path, filter);
    }

    @Override
    public void mkdirs(Path path) {
      manager.mkdirs(path);
    }

    @Override
    public boolean exists(Path path) {
      return manager.exists(path);
    }

    @Override
    public void delete(Path path) {
      manager.delete(path);
    }

    @Override
    public boolean isLocal() {
      return manager.isLocal();
    }

    @Override
    public Path createCheckpointDirectory() {
      return manager.createCheckpointDirectory();
    }

    /** Closes Spark's default manager. */
    @Override
    public void close() {
      manager.close();
    }

    @Override
    public String toString() {
      return manager.toString();
    }
  }
}
