// SPDX-License-Identifier: Apache-2.0
package io.strata.reporting;

/**
 * {@code INVALID_CONF_VALUE.REQUIREMENT}, which Spark 3.5 does not have: a plain {@link
 * IllegalArgumentException} with the text Spark 4.1 renders for it.
 */
final class InvalidConf {
  private InvalidConf() { }

  static IllegalArgumentException of(String key, String value, String requirement,
      Throwable cause) {
    return new IllegalArgumentException(InvalidConfText.render(key, value, requirement), cause);
  }
}
