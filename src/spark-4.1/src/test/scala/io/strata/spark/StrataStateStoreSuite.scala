// SPDX-License-Identifier: Apache-2.0
package io.strata.spark

import java.io.File
import java.nio.file.Files

import io.strata.format.StoreLayout
import org.apache.spark.sql.execution.streaming.state.StateStoreId
import org.apache.spark.sql.execution.streaming.state.StateStoreTestsHelper.newDir

/**
 * Spark's `StateStoreSuiteBase` against Strata with checkpoints in local directories (`file:`
 * locations go through Strata's local-filesystem object store, the same commit protocol as on
 * S3). See [[StrataStateStoreSuiteBase]] and the README's "Conformance" section.
 */
class StrataStateStoreSuite extends StrataStateStoreSuiteBase {
  override protected def checkpointRoot(testRoot: String): String = testRoot

  override protected def strataSettings: Map[String, String] = Map.empty

  /**
   * A regular file where the store's `v/` directory belongs: the local object store cannot
   * create `v/<version>/`, so the version object PUT fails with an IOException. Deleting the
   * file repairs it.
   */
  override protected def storeIdWithFailingPut(): (StateStoreId, () => Unit) = {
    val id = StateStoreId(newDir(), 0, 0)
    val storeDir = new File(id.storeCheckpointLocation().toString)
    Files.createDirectories(storeDir.toPath)
    val blocker = new File(storeDir, StoreLayout.VERSIONS.stripSuffix("/")).toPath
    Files.write(blocker, "not a directory".getBytes("UTF-8"))
    (id, () => Files.delete(blocker))
  }
}
