// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import io.strata.sync.UploadsAtExit;
import org.apache.spark.util.ShutdownHookManager;
import scala.runtime.AbstractFunction0;
import scala.runtime.BoxedUnit;

/**
 * Puts Strata's wait for running base snapshot uploads ({@link UploadsAtExit}) into Spark's
 * ordered shutdown hooks: after the {@code SparkContext} stops (priority 50) and before Spark
 * deletes its local directories (priority 25), where Strata's local databases, and the
 * checkpoints an upload reads, live by default. As a plain JVM hook it would run concurrently
 * with that deletion and the upload would fail. ({@code ShutdownHookManager} is Spark-internal;
 * its {@code addShutdownHook(int, Function0)} is the same in Spark 4.0 to 4.2.)
 */
final class SparkShutdownHooks {
  /** One above Spark's {@code TEMP_DIR_SHUTDOWN_PRIORITY} (higher runs first). */
  static final int PRIORITY = ShutdownHookManager.TEMP_DIR_SHUTDOWN_PRIORITY() + 1;

  private SparkShutdownHooks() { }

  /** Installs the wait through Spark's hooks (effective if no upload started yet). */
  static void install() {
    UploadsAtExit.installHookWith(wait -> ShutdownHookManager.addShutdownHook(PRIORITY,
        new AbstractFunction0<BoxedUnit>() {
          @Override
          public BoxedUnit apply() {
            wait.run();
            return BoxedUnit.UNIT;
          }
        }));
  }
}
