// SPDX-License-Identifier: Apache-2.0
package io.strata.testkit;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Runs the annotated test class or method once per Spark line: on the line's first Scala build,
 * and reported as skipped, with {@link #reason()}, on a second Scala build of the same line (today
 * the Scala 2.13 build of Spark 3.5, module {@code src/spark-3.5-scala2.13}, which compiles and
 * tests the same sources as the Scala 2.12 one). Every test without it runs on both builds.
 *
 * <p>The twin build is the system property {@value ScalaTwinCondition#TWIN_PROPERTY} set to
 * {@code true} by that module's Surefire and Failsafe configuration. Where the property is absent
 * (every other module, or an IDE) the test runs.
 *
 * <p>What differs between the two Scala builds of one line is the Scala library on the class
 * path, Spark's Scala 2.13 artifacts, the few conversions in the {@code scala-2.12} and
 * {@code scala-2.13} source folders, and the runtime jar built from them. A suite whose path
 * crosses none of these (its Spark calls go through the same Java code and the same
 * line-specific adapter) says so in {@link #reason()} and runs once.
 */
@Documented
@Retention(RetentionPolicy.RUNTIME)
@Target({ElementType.TYPE, ElementType.METHOD})
@ExtendWith(ScalaTwinCondition.class)
public @interface OncePerSparkLine {
  /** Why the second Scala build of the line skips it: shown in the test report. */
  String reason();
}
