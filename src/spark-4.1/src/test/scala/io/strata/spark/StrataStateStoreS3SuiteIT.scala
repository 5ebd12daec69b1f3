// SPDX-License-Identifier: Apache-2.0
package io.strata.spark

import java.io.File
import java.nio.file.Files
import java.util.UUID

import io.strata.config.StrataConf
import io.strata.testkit.S3ProxyServer
import org.apache.spark.sql.execution.streaming.state.StateStoreId
import org.apache.spark.sql.execution.streaming.state.StateStoreTestsHelper.newDir
import org.scalactic.source.Position
import org.scalatest.Tag

/**
 * A subset of Spark's `StateStoreSuiteBase` against Strata with checkpoints in S3: a real
 * S3Proxy server in a child JVM on loopback (one per suite), reached through the AWS SDK like
 * any S3 endpoint. The local suite ([[StrataStateStoreSuite]]) runs every test; this one runs
 * those whose outcome depends on the object store (commit, reload from a fresh provider,
 * missing versions, prefix scan, a failing PUT), once each (`colFamiliesEnabled=false`).
 */
class StrataStateStoreS3SuiteIT extends StrataStateStoreSuiteBase {
  import StrataStateStoreS3SuiteIT._

  @volatile private var server: S3ProxyServer = _
  private lazy val work = Files.createTempDirectory("strata-conformance-s3")

  override def beforeAll(): Unit = {
    super.beforeAll()
    server = S3ProxyServer.start(work.resolve("s3"), java.util.Map.of())
    server.createBucket(Bucket)
  }

  override def afterAll(): Unit = {
    try {
      if (server != null) server.close()
      org.apache.commons.io.FileUtils.deleteQuietly(work.toFile)
    } finally {
      super.afterAll()
    }
  }

  /** `s3a://<bucket>/<name of the test's temp dir>`: unique per test, like the temp dir. */
  override protected def checkpointRoot(testRoot: String): String =
    if (testRoot.startsWith("s3a://")) testRoot
    else s"s3a://$Bucket/" + new File(testRoot).getName

  override protected def strataSettings: Map[String, String] = {
    val p = StrataConf.PREFIX
    Map(
      p + "s3.endpoint" -> server.endpoint().toString,
      p + "s3.region" -> "us-east-1",
      p + "s3.pathStyleAccess" -> "true",
      p + "s3.accessKeyId" -> S3ProxyServer.ACCESS_KEY,
      p + "s3.secretAccessKey" -> S3ProxyServer.SECRET_KEY,
      p + "s3.maxAttempts" -> "2")
  }

  /**
   * A bucket that does not exist yet: S3 answers every request with 404 NoSuchBucket. Creating
   * the bucket repairs it. (Not in [[StrataStateStoreS3SuiteIT.Subset]]: see there.)
   */
  override protected def storeIdWithFailingPut(): (StateStoreId, () => Unit) = {
    val bucket = s"strata-missing-${UUID.randomUUID()}"
    (StateStoreId(s"s3a://$bucket/ckpt", 0, 0), () => server.createBucket(bucket))
  }

  override protected def codecMatrix: Seq[Boolean] = Seq(false)

  /** Registers only the tests in [[StrataStateStoreS3SuiteIT.Subset]]. */
  override protected def test(testName: String, testTags: Tag*)(testBody: => Any)(
      implicit pos: Position): Unit = {
    if (Subset.exists(s => testName.startsWith(s))) {
      super.test(testName, testTags: _*)(testBody)
    }
  }
}

object StrataStateStoreS3SuiteIT {
  val Bucket = "strata-conformance"

  /** Tests (name prefixes) run on S3. */
  val Subset: Seq[String] = Seq(
    "get, put, remove, commit, and all data iterator",
    "prefix scan",
    "numKeys metrics",
    "getStore with invalid versions",
    "two concurrent StateStores - one for read-only and one for read-write -",
    "Strata: SPARK-38320",
    "reports memory usage",
    // Not "Strata: SPARK-18342": its missing bucket now fails the first load already (a query
    // run finds or claims its epoch under runs/ before it loads, docs/format.md), not only the
    // version object's PUT; the file-system suite runs it, and SparkS3FaultsIT fails S3 PUTs.
    "Strata: StateStore.get")
}
