// SPDX-License-Identifier: Apache-2.0
package io.strata.testkit;

import java.lang.reflect.AnnotatedElement;
import java.util.Arrays;
import java.util.Optional;
import org.junit.jupiter.api.extension.ConditionEvaluationResult;
import org.junit.jupiter.api.extension.ExecutionCondition;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.platform.commons.support.AnnotationSupport;

/**
 * The condition behind {@link OnlyOnSparkLines}: enabled when the system property
 * {@code strata.test.line} is unset, empty, or one of the annotation's lines.
 */
public final class SparkLineCondition implements ExecutionCondition {
  /** The system property naming the Spark line under test, e.g. {@code "4.2"}. */
  public static final String LINE_PROPERTY = "strata.test.line";

  /** Creates the condition (JUnit instantiates it through {@link OnlyOnSparkLines}). */
  public SparkLineCondition() {
  }

  /**
   * The Spark line under test, or empty when the property is unset or empty.
   *
   * @return the line, e.g. {@code "4.1"}
   */
  public static Optional<String> currentLine() {
    String line = System.getProperty(LINE_PROPERTY, "").trim();
    return line.isEmpty() ? Optional.empty() : Optional.of(line);
  }

  @Override
  public ConditionEvaluationResult evaluateExecutionCondition(ExtensionContext context) {
    Optional<AnnotatedElement> element = context.getElement();
    Optional<OnlyOnSparkLines> only = element.flatMap(
        e -> AnnotationSupport.findAnnotation(e, OnlyOnSparkLines.class));
    Optional<String> line = currentLine();
    if (only.isEmpty() || line.isEmpty()) {
      return ConditionEvaluationResult.enabled("runs on every Spark line");
    }
    if (Arrays.asList(only.get().value()).contains(line.get())) {
      return ConditionEvaluationResult.enabled("runs on Spark " + line.get());
    }
    return ConditionEvaluationResult.disabled("not on Spark " + line.get() + " (only on "
        + String.join(", ", only.get().value()) + "): " + only.get().reason());
  }
}
