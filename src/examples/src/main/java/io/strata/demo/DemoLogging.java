// SPDX-License-Identifier: Apache-2.0
package io.strata.demo;

/**
 * Points Log4j 2 (Spark's logging backend) at the demo's configuration, which keeps Spark, Hadoop
 * and Parquet at WARN. Must run before anything logs: Log4j reads the property once, when it
 * starts. A {@code -Dlog4j2.configurationFile} given by the user wins.
 */
final class DemoLogging {
  static final String CONFIG = "classpath:io/strata/demo/log4j2-demo.properties";

  private DemoLogging() {}

  static void useDemoConfigUnlessSet() {
    if (System.getProperty("log4j2.configurationFile") == null) {
      System.setProperty("log4j2.configurationFile", CONFIG);
    }
  }
}
