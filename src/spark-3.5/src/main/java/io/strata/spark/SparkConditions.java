// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import java.util.Map;
import org.apache.spark.SparkException;

/**
 * Spark 3.5's exceptions for {@link SparkErrors}: Spark 3.5's error-classes.json has none of the
 * state store conditions Spark 4 added, and a {@code SparkException} built with an unknown
 * condition fails itself. So the exceptions are plain ones, with the message Spark 4 renders for
 * the condition, prefixed by the condition's name in brackets as Spark prints it. Spark 3.5's
 * own providers throw plain exceptions here too.
 */
final class SparkConditions {
  /** Spark 4.1's message templates of the conditions {@link SparkErrors} uses. */
  private static final Map<String, String> TEMPLATES = Map.of(
      "CANNOT_LOAD_STATE_STORE.UNEXPECTED_VERSION",
      "An error occurred during loading state. Version cannot be <version> because it is less "
          + "than 0.",
      "CANNOT_LOAD_STATE_STORE.CANNOT_READ_STREAMING_STATE_FILE",
      "An error occurred during loading state. Error reading streaming state file of "
          + "<fileToRead> does not exist. If the stream job is restarted with a new or updated "
          + "state operation, please create a new checkpoint location or clear the existing "
          + "checkpoint location.",
      "CANNOT_LOAD_STATE_STORE.UNCATEGORIZED", "An error occurred during loading state.",
      "CANNOT_WRITE_STATE_STORE.CANNOT_COMMIT",
      "Error writing state store files for provider <providerClass>. Cannot perform commit "
          + "during state checkpoint.",
      "STATE_STORE_OPERATION_OUT_OF_ORDER",
      "Streaming stateful operator attempted to access state store out of order. This is a "
          + "bug, please retry. error_msg=<errorMsg>",
      "STATE_STORE_UNSUPPORTED_OPERATION", "<operationType> operation not supported with "
          + "<entity>",
      "STATE_STORE_UNSUPPORTED_OPERATION_ON_MISSING_COLUMN_FAMILY",
      "State store operation=<operationType> not supported on missing column "
          + "family=<colFamilyName>.",
      "STATE_STORE_CANNOT_USE_COLUMN_FAMILY_WITH_INVALID_NAME",
      "Failed to perform column family operation=<operationName> with invalid "
          + "name=<colFamilyName>.",
      "STATE_STORE_CANNOT_CREATE_COLUMN_FAMILY_WITH_RESERVED_CHARS",
      "Failed to create column family with unsupported starting character and "
          + "name=<colFamilyName>.");

  private SparkConditions() { }

  /** A {@link SparkException} whose message is the condition's, rendered. */
  static SparkException exception(String condition, Map<String, String> parameters,
      Throwable cause) {
    return new SparkException(message(condition, parameters), cause);
  }

  /** An {@link UnsupportedOperationException} whose message is the condition's, rendered. */
  static RuntimeException unsupported(String condition, Map<String, String> parameters) {
    return new UnsupportedOperationException(message(condition, parameters));
  }

  /** {@code [CONDITION] message}, each {@code <name>} replaced by its parameter. */
  static String message(String condition, Map<String, String> parameters) {
    String text = TEMPLATES.getOrDefault(condition, "");
    for (Map.Entry<String, String> p : parameters.entrySet()) {
      text = text.replace("<" + p.getKey() + ">", p.getValue());
    }
    return "[" + condition + "] " + text;
  }
}
