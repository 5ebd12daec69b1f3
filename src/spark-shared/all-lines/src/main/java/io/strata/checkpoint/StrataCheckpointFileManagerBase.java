// SPDX-License-Identifier: Apache-2.0
package io.strata.checkpoint;

import io.strata.config.InvalidSettingException;
import io.strata.reporting.SettingErrors;
import io.strata.reporting.StrataMetricsSource;
import java.io.IOException;
import java.util.function.BiFunction;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.PathFilter;
import org.apache.hadoop.fs.UnsupportedFileSystemException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The body of {@code StrataCheckpointFileManager}, written once for every Spark line: S3 paths
 * ({@code s3://}, {@code s3a://}, {@code s3n://}, or scheme-less on an S3 {@code fs.defaultFS})
 * go to {@link S3CheckpointFiles}, which says what each call costs in requests; any other scheme
 * goes to Spark's default manager (FileContext-based, else FileSystem-based), so the setting can
 * be global.
 *
 * <p>Spark 4.1 moved the {@code CheckpointFileManager} trait to another package, so the class
 * Spark instantiates is one per package: {@code StrataCheckpointFileManager} in
 * src/spark-shared/3.5-and-4.0 and in src/spark-shared/4.1-and-later. Each extends this class,
 * implements its Spark's trait, and adds only what names the trait's types: {@code createAtomic}
 * (its return type is nested in the trait) and the {@link SparkDefault} view of Spark's default
 * manager. Thread-safe.
 *
 * @param <D> the line's view of Spark's default manager
 */
abstract class StrataCheckpointFileManagerBase<
    D extends StrataCheckpointFileManagerBase.SparkDefault> {
  // The name users know from the manager's log lines.
  private static final Logger LOG =
      LoggerFactory.getLogger("io.strata.checkpoint.StrataCheckpointFileManager");

  /**
   * The calls passed on to Spark's default manager for a path not on S3: the methods of Spark's
   * {@code CheckpointFileManager} trait whose signatures name only Hadoop types. Each line
   * implements it over its own Spark's manager, one method call each.
   */
  interface SparkDefault {
    FSDataInputStream open(Path path);

    FileStatus[] list(Path path, PathFilter filter);

    void mkdirs(Path path);

    boolean exists(Path path);

    void delete(Path path);

    boolean isLocal();

    Path createCheckpointDirectory();

    /** Closes the manager where its Spark has {@code close()} (4.1 on); nothing before. */
    void close();
  }

  /** Spark's default manager for non-S3 paths; null when this manager serves S3. */
  private final D delegate;
  /** The S3 files; null when {@link #delegate} serves the path or the settings are bad. */
  private final S3CheckpointFiles s3;
  /**
   * A bad Strata setting, reported by every call as Spark's {@code
   * INVALID_CONF_VALUE.REQUIREMENT} (a new exception each time) instead of from the constructor:
   * Spark reports a constructor's failure as {@code
   * CANNOT_LOAD_CHECKPOINT_FILE_MANAGER.ERROR_LOADING_CLASS}, which reads like a class-path
   * problem (issue 46). Null when the settings are good.
   */
  private final InvalidSettingException badSetting;

  /**
   * Chooses S3 or Spark's default manager for {@code path}. Does no network I/O.
   *
   * @param path a path of the checkpoint (its root, a log directory or a file's parent)
   * @param hadoopConf the session's Hadoop configuration (with its SQL settings)
   * @param sparkDefault builds the line's view of Spark's default manager (called only for a
   *     path not on S3)
   * @throws IllegalArgumentException for an S3 path without bucket or with credentials in it
   *     (Spark reports it as a failure to load the checkpoint file manager); an invalid Strata
   *     setting fails every call instead, with Spark's {@code INVALID_CONF_VALUE.REQUIREMENT}
   */
  StrataCheckpointFileManagerBase(Path path, Configuration hadoopConf,
      BiFunction<Path, Configuration, D> sparkDefault) {
    S3CheckpointFiles files = null;
    InvalidSettingException bad = null;
    if (S3CheckpointFiles.serves(path, hadoopConf)) {
      try {
        files = new S3CheckpointFiles(path, hadoopConf);
        StrataMetricsSource.registerOnce();
      } catch (InvalidSettingException e) {
        bad = e;
      }
      this.delegate = null;
    } else {
      this.delegate = sparkDefault.apply(path, hadoopConf);
    }
    this.s3 = files;
    this.badSetting = bad;
  }

  /**
   * Spark's default manager, or null when this manager serves S3.
   *
   * @return the line's view, or null
   */
  final D sparkDefault() {
    return delegate;
  }

  /**
   * The S3 files, or null when Spark's default manager serves the path.
   *
   * @return the S3 files, or null
   */
  final S3CheckpointFiles s3() {
    if (badSetting != null) {
      throw SettingErrors.invalid(badSetting);
    }
    return s3;
  }

  /**
   * Opens {@code path}: one GET, or none for one of the last small files this manager wrote.
   *
   * <p>Throws {@code java.io.FileNotFoundException}, undeclared (Spark's Scala callers expect
   * it), if it does not exist, and {@link CheckpointReadException} (undeclared) if S3 fails.
   *
   * @param path the file
   * @return its bytes as a stream
   */
  public FSDataInputStream open(Path path) {
    return delegate != null ? delegate.open(path) : read(path, () -> s3().open(path));
  }

  /**
   * The files and directories directly under {@code path} that {@code filter} accepts.
   *
   * <p>Throws {@link CheckpointReadException}, undeclared, if S3 fails.
   *
   * @param path the directory
   * @param filter which entries to return
   * @return their statuses (none for a directory that does not exist)
   */
  public FileStatus[] list(Path path, PathFilter filter) {
    return delegate != null ? delegate.list(path, filter)
        : read(path, () -> s3().list(path, filter));
  }

  /**
   * The files and directories directly under {@code path}.
   *
   * @param path the directory
   * @return their statuses
   */
  public FileStatus[] list(Path path) {
    return list(path, p -> true);
  }

  /**
   * On S3 nothing (no directories); the directory exists for this manager from now on.
   *
   * @param path the directory
   */
  public void mkdirs(Path path) {
    if (delegate != null) {
      delegate.mkdirs(path);
    } else {
      s3().mkdirs(path);
    }
  }

  /**
   * True if {@code path} is a file, or a directory with something under it (on S3).
   *
   * <p>Throws {@link CheckpointReadException}, undeclared, if S3 fails.
   *
   * @param path a file or directory
   * @return whether it exists
   */
  public boolean exists(Path path) {
    return delegate != null ? delegate.exists(path) : read(path, () -> s3().exists(path));
  }

  /**
   * Deletes {@code path} and everything under it; nothing if it does not exist.
   *
   * @param path a file or directory
   * @throws IllegalArgumentException for an S3 bucket root
   */
  public void delete(Path path) {
    if (delegate != null) {
      delegate.delete(path);
    } else {
      s3().delete(path);
    }
  }

  /**
   * Runs a read of {@code path} on S3; an I/O failure becomes Spark's {@code
   * FAILED_READ_FILE.NO_HINT} ({@link CheckpointReadException#of}), thrown undeclared as
   * Spark's Scala callers expect.
   */
  private static <T> T read(Path path, java.util.concurrent.Callable<T> call) {
    try {
      return call.call();
    } catch (IOException e) {
      throw Errors.sneaky(CheckpointReadException.of(path.toString(), e));
    } catch (RuntimeException e) {
      throw e;
    } catch (Exception e) {
      throw new IllegalStateException("unexpected checked exception reading " + path, e);
    }
  }

  /**
   * Whether Spark's default manager serves the path and says it is local; never for S3.
   *
   * @return true for a local path
   */
  public boolean isLocal() {
    return delegate != null && delegate.isLocal();
  }

  /**
   * The qualified checkpoint path; on S3 no request (S3 has no directories).
   *
   * @return the checkpoint's root
   */
  public Path createCheckpointDirectory() {
    return delegate != null ? delegate.createCheckpointDirectory()
        : s3().createCheckpointDirectory();
  }

  /**
   * Releases this manager's object stores; later S3 calls fail. Idempotent. Spark 3.5 and 4.0
   * never call it (their trait has no {@code close()}); the stores are then released when the
   * manager becomes unreachable. On a non-S3 path it closes Spark's default manager where that
   * has {@code close()} (4.1 on).
   */
  public void close() {
    if (delegate != null) {
      delegate.close();
    } else if (s3 != null) {
      s3.close();
    }
  }

  @Override
  public String toString() {
    return delegate != null ? "StrataCheckpointFileManager[via " + delegate + "]"
        : s3 != null ? s3.toString() : "StrataCheckpointFileManager[" + badSetting.getMessage()
            + "]";
  }

  /**
   * What Spark's {@code CheckpointFileManager.create} builds when no class is set: the
   * FileContext-based manager, else (no FileContext for the scheme) the FileSystem-based one.
   *
   * @param <M> the line's {@code CheckpointFileManager} trait
   * @param path the checkpoint path
   * @param conf the Hadoop configuration
   * @param fileContextBased the line's {@code FileContextBasedCheckpointFileManager} constructor
   * @param fileSystemBased the line's {@code FileSystemBasedCheckpointFileManager} constructor
   * @return the manager
   * @throws RuntimeException what the constructor threw; a checked exception is rethrown
   *     undeclared, as Spark's Scala code would
   */
  static <M> M sparkDefault(Path path, Configuration conf,
      BiFunction<Path, Configuration, M> fileContextBased,
      BiFunction<Path, Configuration, M> fileSystemBased) {
    try {
      return fileContextBased.apply(path, conf);
    } catch (Exception e) {
      if (e instanceof UnsupportedFileSystemException) {
        LOG.warn("No FileContext for {}; using the FileSystem API (as Spark does)", path);
        return fileSystemBased.apply(path, conf);
      }
      if (e instanceof RuntimeException re) {
        throw re;
      }
      throw Errors.sneaky(e instanceof IOException io ? io : new IOException(e));
    }
  }
}
