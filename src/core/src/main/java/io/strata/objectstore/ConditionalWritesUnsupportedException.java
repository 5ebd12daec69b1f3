// SPDX-License-Identifier: Apache-2.0
package io.strata.objectstore;

/**
 * The S3 endpoint does not honour create-only writes ({@code If-None-Match: *}): the {@linkplain
 * ConditionalWriteProbe probe} found that a second create-only PUT of one key succeeded (or was
 * answered 412 Precondition Failed but replaced the object anyway), or that more than one of
 * several racing create-only PUTs of one fresh key won (the check and the write are not atomic).
 * Strata refuses to write to
 * such a bucket, since every guarantee it gives against zombies, task retries and two drivers on
 * one checkpoint rests on create-only writes.
 *
 * <p>Never retryable: the server, not the moment, is at fault. Deliberately not an {@link
 * ObjectAlreadyExistsException}, which callers read as "another attempt won the race".
 */
public class ConditionalWritesUnsupportedException extends ObjectStoreException {
  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception.
   *
   * @param message "Cannot use S3 endpoint &lt;endpoint&gt; bucket &lt;bucket&gt; for Strata:
   *     ..." naming the probe key and what was expected; never credentials
   * @param cause the verdict this one repeats (another thread's probe), or null
   */
  public ConditionalWritesUnsupportedException(String message, Throwable cause) {
    super(message, false, cause);
  }
}
