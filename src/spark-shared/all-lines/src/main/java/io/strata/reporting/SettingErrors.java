// SPDX-License-Identifier: Apache-2.0
package io.strata.reporting;

import io.strata.config.InvalidSettingException;

/**
 * Spark's error for a Strata setting that cannot be used, for the state store provider and the
 * checkpoint file manager alike: {@code INVALID_CONF_VALUE.REQUIREMENT}, SQLSTATE 22022, naming
 * the key, the value (never a secret) and what is allowed.
 */
public final class SettingErrors {
  private SettingErrors() { }

  /**
   * Spark's exception for {@code e}: a {@code SparkIllegalArgumentException} on Spark 4.1 and
   * later, an {@link IllegalArgumentException} with the same text on 3.5 and 4.0 (whose
   * error-conditions.json lacks the condition).
   *
   * @param e the invalid setting
   * @return the exception to throw
   */
  public static IllegalArgumentException invalid(InvalidSettingException e) {
    return InvalidConf.of(e.key(), e.value(), e.requirement(), e);
  }
}
