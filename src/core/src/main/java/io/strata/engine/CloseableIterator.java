// SPDX-License-Identifier: Apache-2.0
package io.strata.engine;

import java.util.Iterator;

/**
 * An iterator over native resources. Closes itself when exhausted; callers that stop early must
 * call {@link #close()}. Closing twice is a no-op.
 *
 * @param <T> element type
 */
public interface CloseableIterator<T> extends Iterator<T>, AutoCloseable {
  /** Releases the native iterator. Idempotent; never throws. */
  @Override
  void close();
}
