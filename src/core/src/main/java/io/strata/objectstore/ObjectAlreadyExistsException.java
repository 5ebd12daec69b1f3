// SPDX-License-Identifier: Apache-2.0
package io.strata.objectstore;

/**
 * A create-only write ({@link ObjectStore#putIfAbsent}) found the key already taken by another
 * writer (S3 answered 412 Precondition Failed to {@code If-None-Match: *}, and the object there is
 * not this write's).
 */
public class ObjectAlreadyExistsException extends ObjectStoreException {
  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception; never retryable (retrying cannot make the key free).
   *
   * @param message "Cannot create &lt;location&gt;: ..." naming the key
   * @param cause the underlying failure (the 412 response, a FileAlreadyExistsException), or null
   */
  public ObjectAlreadyExistsException(String message, Throwable cause) {
    super(message, false, cause);
  }
}
