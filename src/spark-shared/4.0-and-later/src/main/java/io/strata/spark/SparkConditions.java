// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import java.util.Map;
import org.apache.spark.SparkException;
import org.apache.spark.SparkUnsupportedOperationException;

/**
 * Spark 4.x's exceptions with an error condition of its error-conditions.json (Spark renders the
 * message from the condition's template and the parameters); see {@link SparkErrors}.
 */
final class SparkConditions {
  private SparkConditions() { }

  /** A {@link SparkException} with {@code condition} and its template's parameters. */
  static SparkException exception(String condition, Map<String, String> parameters,
      Throwable cause) {
    return new SparkException(condition, Scala.map(parameters), cause);
  }

  /** A {@link SparkUnsupportedOperationException} with {@code condition}. */
  static RuntimeException unsupported(String condition, Map<String, String> parameters) {
    return new SparkUnsupportedOperationException(condition, parameters);
  }

  /**
   * {@code INVALID_CONF_VALUE.REQUIREMENT} (SQLSTATE 22022) as a {@link
   * org.apache.spark.SparkIllegalArgumentException} where this Spark has it (4.1 and later);
   * Spark 4.0's error-conditions.json has only {@code INVALID_CONF_VALUE.TIME_ZONE}, so there the
   * same text, rendered as Spark 4.1 renders it, in a plain {@link IllegalArgumentException}.
   */
  static IllegalArgumentException invalidConf(String key, String value, String requirement,
      Throwable cause) {
    Map<String, String> p = Map.of("confName", key, "confValue", value,
        "confRequirement", requirement);
    try {
      return new org.apache.spark.SparkIllegalArgumentException(
          "INVALID_CONF_VALUE.REQUIREMENT", Scala.map(p), cause);
    } catch (Exception conditionUnknownHere) { // Spark's INTERNAL_ERROR SparkException (4.0)
      return new IllegalArgumentException(InvalidConfText.render(key, value, requirement), cause);
    }
  }
}
