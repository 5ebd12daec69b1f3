// SPDX-License-Identifier: Apache-2.0
package io.strata.format;

import java.util.Objects;

/**
 * The SST delta of one committed version: the version's writes as one sorted SST (removals as
 * tombstones), stored inside that version's version object or in a spill object.
 *
 * @param version the version whose writes it holds
 * @param attempt the attempt id of that version's commit
 * @param file where the SST bytes are
 */
public record Delta(long version, String attempt, FileRef file) {
  public Delta {
    Objects.requireNonNull(attempt, "attempt");
    if (!StoreLayout.isAttemptId(attempt)) {
      throw new IllegalArgumentException("invalid attempt id '" + attempt + "'");
    }
    Objects.requireNonNull(file, "file");
  }
}
