// SPDX-License-Identifier: Apache-2.0
/**
 * What Strata's tests and the flights demo share, outside every runtime jar: {@link
 * io.strata.testkit.S3ProxyServer} (an S3-compatible server in a child JVM on loopback), {@link
 * io.strata.testkit.S3Relay} (the tests' one HTTP relay in front of it, on Netty's HTTP codec:
 * request records, latency and faults), {@link
 * io.strata.testkit.ChildJvm} (a JVM on the test classpath) and {@link
 * io.strata.testkit.OnlyOnSparkLines} (which Spark lines a test runs on). Imports the AWS SDK (to
 * create buckets), JUnit and (provided) Netty's HTTP codec; nothing of Spark or of Strata.
 */
package io.strata.testkit;
