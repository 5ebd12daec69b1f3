// SPDX-License-Identifier: Apache-2.0
/**
 * What Strata's tests and the flights demo share, outside every runtime jar: {@link
 * io.strata.testkit.S3ProxyServer} (an S3-compatible server in a child JVM on loopback), {@link
 * io.strata.testkit.FaultProxy} (a fault-injecting HTTP proxy in front of it), {@link
 * io.strata.testkit.ChildJvm} (a JVM on the test classpath) and {@link
 * io.strata.testkit.OnlyOnSparkLines} (which Spark lines a test runs on). Imports the AWS SDK (to
 * create buckets) and JUnit; nothing of Spark or of Strata.
 */
package io.strata.testkit;
