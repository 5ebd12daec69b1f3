// SPDX-License-Identifier: Apache-2.0
package io.strata.objectstore;

/** A read named a key with no object (S3 404 NoSuchKey; a missing file). */
public class ObjectNotFoundException extends ObjectStoreException {
  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception; never retryable (S3 reads are strongly consistent, so a missing key
   * stays missing until someone writes it).
   *
   * @param message "Cannot read &lt;location&gt;: no such object ..." naming the key
   * @param cause the underlying failure (the 404 response, a NoSuchFileException), or null
   */
  public ObjectNotFoundException(String message, Throwable cause) {
    super(message, false, cause);
  }
}
