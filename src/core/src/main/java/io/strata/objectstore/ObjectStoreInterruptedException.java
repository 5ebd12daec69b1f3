// SPDX-License-Identifier: Apache-2.0
package io.strata.objectstore;

/**
 * The calling thread was interrupted during an object store request (the AWS SDK answers an
 * interrupt with {@code AbortedException}): the caller is being stopped, as when Spark stops a
 * query or kills a task. Whether the request reached S3 is unknown; a create-only write may have
 * landed. Not retryable: retrying would ignore the stop.
 */
public class ObjectStoreInterruptedException extends ObjectStoreException {
  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception.
   *
   * @param message "Cannot &lt;action&gt; &lt;location&gt;: interrupted ...", without credentials
   * @param cause the SDK's failure
   */
  public ObjectStoreInterruptedException(String message, Throwable cause) {
    super(message, false, cause);
  }
}
