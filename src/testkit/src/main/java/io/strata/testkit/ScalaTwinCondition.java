// SPDX-License-Identifier: Apache-2.0
package io.strata.testkit;

import java.lang.reflect.AnnotatedElement;
import java.util.Optional;
import org.junit.jupiter.api.extension.ConditionEvaluationResult;
import org.junit.jupiter.api.extension.ExecutionCondition;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.platform.commons.support.AnnotationSupport;

/**
 * The condition behind {@link OncePerSparkLine}: disabled when the system property
 * {@value #TWIN_PROPERTY} is {@code true} (the second Scala build of a Spark line), enabled
 * otherwise.
 */
public final class ScalaTwinCondition implements ExecutionCondition {
  /** The system property that marks a line's second Scala build: {@code "true"} there. */
  public static final String TWIN_PROPERTY = "strata.test.scalaTwin";

  /** Creates the condition (JUnit instantiates it through {@link OncePerSparkLine}). */
  public ScalaTwinCondition() {
  }

  /**
   * Whether this JVM tests a line's second Scala build.
   *
   * @return true when {@value #TWIN_PROPERTY} is {@code "true"}
   */
  public static boolean onTwin() {
    return Boolean.parseBoolean(System.getProperty(TWIN_PROPERTY, "false").trim());
  }

  @Override
  public ConditionEvaluationResult evaluateExecutionCondition(ExtensionContext context) {
    Optional<OncePerSparkLine> once = context.getElement()
        .flatMap((AnnotatedElement e) -> AnnotationSupport.findAnnotation(e, OncePerSparkLine.class));
    if (once.isEmpty() || !onTwin()) {
      return ConditionEvaluationResult.enabled("runs on every Scala build of the line");
    }
    return ConditionEvaluationResult.disabled("once per Spark line, not on its second Scala "
        + "build: " + once.get().reason());
  }
}
