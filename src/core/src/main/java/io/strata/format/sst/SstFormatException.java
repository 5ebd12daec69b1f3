// SPDX-License-Identifier: Apache-2.0
package io.strata.format.sst;

import java.io.IOException;

/**
 * The bytes of an SST delta are not an SST that {@link SstReader} reads: corrupt, truncated, or
 * written with table options SST deltas never use. The message says which part and what was
 * expected; callers add the store, version and object.
 */
public final class SstFormatException extends IOException {
  private static final long serialVersionUID = 1L;

  /**
   * @param message what is wrong, and where in the file
   */
  public SstFormatException(String message) {
    super(message);
  }
}
