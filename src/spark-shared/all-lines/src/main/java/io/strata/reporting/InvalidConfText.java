// SPDX-License-Identifier: Apache-2.0
package io.strata.reporting;

/**
 * The text Spark 4.1 renders for {@code INVALID_CONF_VALUE.REQUIREMENT}, for the lines whose
 * error-conditions.json lacks it (3.5, 4.0).
 */
final class InvalidConfText {
  private InvalidConfText() { }

  static String render(String key, String value, String requirement) {
    return "[INVALID_CONF_VALUE.REQUIREMENT] The value '" + value + "' in the config \"" + key
        + "\" is invalid. " + requirement + " SQLSTATE: 22022";
  }
}
