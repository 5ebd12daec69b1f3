// SPDX-License-Identifier: Apache-2.0
package io.strata.checkpoint;

import java.io.IOException;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.PathFilter;
import org.apache.hadoop.fs.UnsupportedFileSystemException;
import org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager;
import org.apache.spark.sql.execution.streaming.checkpointing.FileContextBasedCheckpointFileManager;
import org.apache.spark.sql.execution.streaming.checkpointing.FileSystemBasedCheckpointFileManager;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Spark's checkpoint files (offsets, commits, metadata, source logs, state schema and operator
 * metadata files) on S3 by create-only PUTs, the Spark 4.1 and 4.2 build: set {@code
 * spark.sql.streaming.checkpointFileManagerClass=io.strata.checkpoint.StrataCheckpointFileManager}.
 *
 * <p>S3 paths ({@code s3://}, {@code s3a://}, {@code s3n://}, or scheme-less on an S3 {@code
 * fs.defaultFS}) go to {@link S3CheckpointFiles}, which says what each call costs in requests;
 * any other scheme goes to Spark's default manager (FileContext-based, else FileSystem-based), so
 * the setting can be global. This class is the adapter for the package Spark 4.1 moved {@code
 * CheckpointFileManager} to. Thread-safe.
 */
public final class StrataCheckpointFileManager implements CheckpointFileManager {
  private static final Logger LOG = LoggerFactory.getLogger(StrataCheckpointFileManager.class);

  /** The Spark setting that selects a checkpoint file manager. */
  public static final String SPARK_CONF = "spark.sql.streaming.checkpointFileManagerClass";

  /** Spark's default manager for non-S3 paths; null when this manager serves S3. */
  private final CheckpointFileManager delegate;
  /** The S3 files; null when {@link #delegate} serves the path. */
  private final S3CheckpointFiles s3;

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
    if (S3CheckpointFiles.serves(path, hadoopConf)) {
      this.s3 = new S3CheckpointFiles(path, hadoopConf);
      this.delegate = null;
    } else {
      this.s3 = null;
      this.delegate = sparkDefault(path, hadoopConf);
    }
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
    return delegate != null ? delegate.createAtomic(path, overwriteIfPossible)
        : new CancellablePut(s3.createAtomic(path, overwriteIfPossible));
  }

  /**
   * Opens {@code path}: one GET, or none for one of the last small files this manager wrote.
   *
   * <p>Throws {@code java.io.FileNotFoundException}, undeclared (Spark's Scala callers expect
   * it), if it does not exist.
   */
  @Override
  public FSDataInputStream open(Path path) {
    return delegate != null ? delegate.open(path) : s3.open(path);
  }

  /** The files and directories directly under {@code path} that {@code filter} accepts. */
  @Override
  public FileStatus[] list(Path path, PathFilter filter) {
    return delegate != null ? delegate.list(path, filter) : s3.list(path, filter);
  }

  /** The files and directories directly under {@code path}. */
  @Override
  public FileStatus[] list(Path path) {
    return list(path, p -> true);
  }

  /** On S3 nothing (no directories); the directory exists for this manager from now on. */
  @Override
  public void mkdirs(Path path) {
    if (delegate != null) {
      delegate.mkdirs(path);
    } else {
      s3.mkdirs(path);
    }
  }

  /** True if {@code path} is a file, or a directory with something under it (on S3). */
  @Override
  public boolean exists(Path path) {
    return delegate != null ? delegate.exists(path) : s3.exists(path);
  }

  /**
   * Deletes {@code path} and everything under it; nothing if it does not exist.
   *
   * @throws IllegalArgumentException for an S3 bucket root
   */
  @Override
  public void delete(Path path) {
    if (delegate != null) {
      delegate.delete(path);
    } else {
      s3.delete(path);
    }
  }

  @Override
  public boolean isLocal() {
    return delegate != null && delegate.isLocal();
  }

  /** The qualified checkpoint path; on S3 no request (S3 has no directories). */
  @Override
  public Path createCheckpointDirectory() {
    return delegate != null ? delegate.createCheckpointDirectory()
        : s3.createCheckpointDirectory();
  }

  /** Releases this manager's object stores; later S3 calls fail. Idempotent. */
  @Override
  public void close() {
    if (delegate != null) {
      delegate.close();
    } else {
      s3.close();
    }
  }

  @Override
  public String toString() {
    return delegate != null ? "StrataCheckpointFileManager[via " + delegate + "]"
        : s3.toString();
  }

  /** What {@code CheckpointFileManager.create} builds when no class is set. */
  private static CheckpointFileManager sparkDefault(Path path, Configuration conf) {
    try {
      return new FileContextBasedCheckpointFileManager(path, conf);
    } catch (Exception e) {
      if (e instanceof UnsupportedFileSystemException) {
        LOG.warn("No FileContext for {}; using the FileSystem API (as Spark does)", path);
        return new FileSystemBasedCheckpointFileManager(path, conf);
      }
      if (e instanceof RuntimeException re) {
        throw re;
      }
      throw Errors.sneaky(e instanceof IOException io ? io : new IOException(e));
    }
  }
}
