// SPDX-License-Identifier: Apache-2.0
package io.strata.config;

/**
 * A Strata setting (or the S3A key it fell back to) whose value cannot be used. Carries the
 * parts a Spark error condition needs ({@code INVALID_CONF_VALUE.REQUIREMENT}: the key, the
 * value as shown, what is required), so the Spark layer raises Spark's condition rather than a
 * bare {@link IllegalArgumentException}; the message reads as before ("Invalid value 'x' for
 * key: requirement").
 */
public final class InvalidSettingException extends IllegalArgumentException {
  private static final long serialVersionUID = 1L;

  private final String key;
  private final String shownValue;
  private final String requirement;

  /**
   * An invalid value.
   *
   * @param key the full key read (a Strata key, or the S3A key it fell back to)
   * @param shownValue the value as it may be shown: quoted, or {@code <redacted>} for a secret
   *     or a value that may embed credentials
   * @param requirement what is allowed, a sentence fragment
   * @param cause the parser's failure, or null
   */
  InvalidSettingException(String key, String shownValue, String requirement, Throwable cause) {
    super("Invalid value " + shownValue + " for " + key + ": " + requirement, cause);
    this.key = key;
    this.shownValue = shownValue;
    this.requirement = requirement;
  }

  /**
   * An invalid combination of settings, reported against {@code key} with the whole {@code
   * message} as what is required (the message reads as given).
   *
   * @param message the full message, naming every key involved
   * @param key the setting the message is reported against
   * @param shownValue its value as it may be shown (quoted, or {@code <redacted>})
   */
  InvalidSettingException(String message, String key, String shownValue) {
    super(message);
    this.key = key;
    this.shownValue = shownValue;
    this.requirement = message;
  }

  /** The full key read. */
  public String key() {
    return key;
  }

  /** The value without quotes, or {@code <redacted>}; never a secret. */
  public String value() {
    return shownValue.startsWith("'") && shownValue.endsWith("'") && shownValue.length() >= 2
        ? shownValue.substring(1, shownValue.length() - 1) : shownValue;
  }

  /** What is allowed. */
  public String requirement() {
    return requirement;
  }
}
