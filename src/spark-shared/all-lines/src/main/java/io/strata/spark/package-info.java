// SPDX-License-Identifier: Apache-2.0
/**
 * The Spark-facing layer (Spark 4.1): {@link io.strata.spark.StrataStateStoreProvider} and its
 * store handles, {@code UnsafeRow} &lt;-&gt; bytes, the store life cycle and task lock, Spark's
 * error conditions and custom metrics. Thin: state storage, the commit protocol and the format
 * live in {@code io.strata.sync} and below.
 */
package io.strata.spark;
