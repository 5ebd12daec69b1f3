// SPDX-License-Identifier: Apache-2.0
package io.strata.checkpoint;

import io.strata.objectstore.ObjectNotFoundException;
import io.strata.objectstore.ObjectStoreInterruptedException;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.util.Map;
import org.apache.spark.SparkThrowable;

/**
 * A checkpoint file that Strata's checkpoint file manager could not read, list or check on S3,
 * as Spark's error condition {@code FAILED_READ_FILE.NO_HINT} (SQLSTATE {@code KD001}, the
 * condition Spark raises for a file it cannot read; issue 46). Spark meets these first at a
 * query's start ({@code StreamMetadata.read} in {@code StreamExecution}'s constructor), where
 * nothing wraps them, so without a condition a wrong endpoint or bucket reached the user as a
 * raw {@code ObjectStoreException}.
 *
 * <p>It stays an {@link IOException}, which is what Spark's callers of a checkpoint file
 * manager and Hadoop's file system contract expect. Its message is the condition's text for the
 * path, then Strata's reason (the object store's message: action, object, endpoint, what to
 * check, the settings and the credentials' origin, never a secret), then the SQLSTATE, in
 * Spark's shape: {@code [FAILED_READ_FILE.NO_HINT] Encountered error while reading file
 * s3://b/ckpt/metadata. Cannot list ... SQLSTATE: KD001}. Implements {@link SparkThrowable}
 * for every Spark line (3.5's {@code getErrorClass}, 4.x's {@code getCondition}).
 */
public final class CheckpointReadException extends IOException implements SparkThrowable {
  private static final long serialVersionUID = 1L;
  /** Spark's condition for a file that cannot be read, without a more precise hint. */
  static final String CONDITION = "FAILED_READ_FILE.NO_HINT";
  /** Its SQLSTATE, from Spark's error-conditions.json (4.0 on). */
  static final String SQL_STATE = "KD001";

  private final String path;

  private CheckpointReadException(String path, IOException cause) {
    super("[" + CONDITION + "] Encountered error while reading file " + path + ". "
        + cause.getMessage() + " SQLSTATE: " + SQL_STATE, cause);
    this.path = path;
  }

  /**
   * What a read of {@code path} that failed with {@code e} throws: {@code e} itself when Spark's
   * callers act on its type ({@link FileNotFoundException} and Strata's not-found: the file does
   * not exist; {@link InterruptedIOException} and Strata's interrupted read: the query is
   * stopping), else this exception with {@code e} as its cause.
   *
   * @param path the checkpoint file or directory, as Spark named it ({@code s3://bucket/key})
   * @param e what the read threw
   * @return the exception to throw (undeclared: Spark's callers are Scala)
   */
  static IOException of(String path, IOException e) {
    if (e instanceof FileNotFoundException || e instanceof InterruptedIOException
        || e instanceof ObjectNotFoundException || e instanceof ObjectStoreInterruptedException
        || e instanceof CheckpointReadException) {
      return e;
    }
    return new CheckpointReadException(path, e);
  }

  /**
   * The file or directory that could not be read.
   *
   * @return its path ({@code s3://bucket/key})
   */
  public String path() {
    return path;
  }

  /**
   * Spark 4.x's name for the error condition.
   *
   * @return {@code FAILED_READ_FILE.NO_HINT}
   */
  public String getCondition() {
    return CONDITION;
  }

  /**
   * Spark 3.5's name for the error condition (deprecated on 4.x in favour of {@link
   * #getCondition()}).
   *
   * @return {@code FAILED_READ_FILE.NO_HINT}
   */
  public String getErrorClass() {
    return CONDITION;
  }

  /**
   * The condition's SQLSTATE.
   *
   * @return {@code KD001}
   */
  public String getSqlState() {
    return SQL_STATE;
  }

  /**
   * The condition's parameters.
   *
   * @return {@code {path: s3://bucket/key}}
   */
  public Map<String, String> getMessageParameters() {
    return Map.of("path", path);
  }
}
