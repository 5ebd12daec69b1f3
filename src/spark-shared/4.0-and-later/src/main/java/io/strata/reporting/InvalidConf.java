// SPDX-License-Identifier: Apache-2.0
package io.strata.reporting;

import java.util.Map;
import scala.jdk.javaapi.CollectionConverters;

/**
 * {@code INVALID_CONF_VALUE.REQUIREMENT} (SQLSTATE 22022) as a {@link
 * org.apache.spark.SparkIllegalArgumentException} where this Spark has it (4.1 and later);
 * Spark 4.0's error-conditions.json has only {@code INVALID_CONF_VALUE.TIME_ZONE}, so there the
 * same text, rendered as Spark 4.1 renders it, in a plain {@link IllegalArgumentException}.
 */
final class InvalidConf {
  private InvalidConf() { }

  static IllegalArgumentException of(String key, String value, String requirement,
      Throwable cause) {
    Map<String, String> p = Map.of("confName", key, "confValue", value,
        "confRequirement", requirement);
    try {
      return new org.apache.spark.SparkIllegalArgumentException(
          "INVALID_CONF_VALUE.REQUIREMENT", scala.collection.immutable.Map.from(
              CollectionConverters.asScala(p)), cause);
    } catch (Exception conditionUnknownHere) { // Spark's INTERNAL_ERROR SparkException (4.0)
      return new IllegalArgumentException(InvalidConfText.render(key, value, requirement), cause);
    }
  }
}
