// SPDX-License-Identifier: Apache-2.0
package io.strata.objectstore;

import java.io.IOException;

/**
 * A failure of the object store that is not "already exists" or "not found".
 *
 * <p>{@link #retryable()} is true when the cause is transient (throttling 503 SlowDown, 5xx,
 * timeouts, connection resets) and the SDK's own retry budget was exhausted; false for permanent
 * causes (403 access denied, 404 no such bucket, invalid request). The message names the
 * location (endpoint, bucket, key) and never carries credentials.
 */
public class ObjectStoreException extends IOException {
  private static final long serialVersionUID = 1L;
  private final boolean retryable;

  /**
   * Creates the exception.
   *
   * @param message "Cannot &lt;action&gt; &lt;location&gt;: &lt;reason&gt;", without credentials
   * @param retryable true if the cause is transient (see the class comment)
   * @param cause the underlying SDK or I/O failure, or null
   */
  public ObjectStoreException(String message, boolean retryable, Throwable cause) {
    super(message, cause);
    this.retryable = retryable;
  }

  /** True if the cause was transient (throttling, 5xx, timeout, reset). */
  public boolean retryable() {
    return retryable;
  }
}
