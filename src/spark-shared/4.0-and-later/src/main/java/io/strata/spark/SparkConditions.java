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
}
