// SPDX-License-Identifier: Apache-2.0
package io.strata.checkpoint;

import io.strata.objectstore.ObjectNotFoundException;
import io.strata.objectstore.ObjectStoreInterruptedException;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.net.SocketTimeoutException;
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
 * for every Spark line (3.5's {@code getErrorClass}, 4.x's {@code getCondition}). The
 * condition's only parameter is the path: a client that renders the error from the condition
 * and its parameters rather than the message ({@code spark.sql.error.messageFormat} MINIMAL or
 * STANDARD, PySpark's {@code getMessage()}) shows the path without Strata's reason, which stays
 * in the message and in the cause.
 */
public final class CheckpointReadException extends IOException implements SparkThrowable {
  private static final long serialVersionUID = 1L;
  /**
   * Whether this Spark has the condition: its error-conditions.json holds {@code
   * FAILED_READ_FILE} from 4.0 on, the first line whose {@link SparkThrowable} has {@code
   * getCondition}. Spark 3.5 has neither; there this exception has no condition (Spark then
   * treats it as a legacy error and renders it by its message, as it does Strata's other errors
   * on 3.5) rather than one Spark cannot find.
   */
  private static final boolean SPARK_HAS_CONDITION = java.util.Arrays.stream(
      SparkThrowable.class.getMethods()).anyMatch(m -> m.getName().equals("getCondition"));
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
   * stopping), else this exception with {@code e} as its cause; a {@link SocketTimeoutException}
   * too, which Spark would otherwise take for a stop.
   *
   * @param path the checkpoint file or directory, as Spark named it ({@code s3://bucket/key})
   * @param e what the read threw
   * @return the exception to throw (undeclared: Spark's callers are Scala)
   */
  static IOException of(String path, IOException e) {
    if (e instanceof FileNotFoundException
        || (e instanceof InterruptedIOException && !(e instanceof SocketTimeoutException))
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
   * @return {@code FAILED_READ_FILE.NO_HINT}; null on Spark 3.5, which lacks it
   */
  public String getCondition() {
    return SPARK_HAS_CONDITION ? CONDITION : null;
  }

  /**
   * Spark 3.5's name for the error condition (deprecated on 4.x in favour of {@link
   * #getCondition()}).
   *
   * @return as {@link #getCondition()}
   */
  public String getErrorClass() {
    return getCondition();
  }

  /**
   * The condition's SQLSTATE.
   *
   * @return {@code KD001}; null on Spark 3.5
   */
  public String getSqlState() {
    return SPARK_HAS_CONDITION ? SQL_STATE : null;
  }

  /**
   * The condition's parameters.
   *
   * @return {@code {path: s3://bucket/key}}; empty on Spark 3.5
   */
  public Map<String, String> getMessageParameters() {
    return SPARK_HAS_CONDITION ? Map.of("path", path) : Map.of();
  }
}
