// SPDX-License-Identifier: Apache-2.0
package io.strata.testkit;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Runs the annotated test class or method only on the given Spark lines; on every other line it
 * is reported as skipped, with {@link #reason()}. Every test without it runs on every line.
 *
 * <p>The line under test is the system property {@code strata.test.line} (a Spark minor version
 * such as {@code "4.1"}), which each module's Surefire and Failsafe configuration sets from the
 * line it compiles against. Where the property is absent or empty (a module without Spark, or a
 * test started from an IDE without it) the test runs.
 *
 * <p>Use it for suites too heavy to repeat on each line (crash loops, the cluster test, benchmark
 * smoke tests) and for API a line does not have; say which in {@link #reason()}.
 */
@Documented
@Retention(RetentionPolicy.RUNTIME)
@Target({ElementType.TYPE, ElementType.METHOD})
@ExtendWith(SparkLineCondition.class)
public @interface OnlyOnSparkLines {
  /**
   * The reason of a test that skips Spark 4.0: 4.0's provider is the 4.x sources 4.1 runs ({@code
   * src/spark-shared/4.0-and-later} and {@code 4.0-and-4.1}, and a line class of under 100
   * lines), and its checkpoint file manager is 3.5's ({@code 3.5-and-4.0}).
   */
  String SHARED_40_41 = "Spark 4.0's provider is the 4.x sources 4.1 runs (4.0-and-later, "
      + "4.0-and-4.1) and its checkpoint file manager is 3.5's (3.5-and-4.0); 3.5, 4.1 and 4.2 "
      + "run it (CI time)";

  /** The Spark minor versions to run on, e.g. {@code {"4.1"}} or {@code {"4.0", "4.1"}}. */
  String[] value();

  /** Why the other lines skip it: shown in the test report. */
  String reason();
}
