// SPDX-License-Identifier: Apache-2.0
/**
 * The flights demo: README command 1 of Strata.
 *
 * <p>{@link io.strata.demo.FlightsDemo} replays three million real U.S. flights (2001, from the
 * U.S. Bureau of Transportation Statistics, as shipped in the vega-datasets npm package 3.2.1,
 * BSD-3-Clause) as a file stream of micro-batches into three stateful streaming queries whose
 * state is checkpointed through a state store provider (Strata's by default) to S3, a local
 * S3Proxy or a local directory. Halfway through it stops the queries, wipes every local state
 * directory, restarts from the checkpoint in a new SparkSession, finishes the stream and checks
 * the answer against a plain batch job over the same data.
 *
 * <p>Owns: the demo's command line, data fetch and verification, its query definitions and its
 * progress report. Its local S3-compatible server is {@link io.strata.testkit.S3ProxyServer}
 * (module strata-testkit, shared with the tests). Imports Spark; part of the module
 * strata-examples, which no runtime jar contains and nothing in the product depends on.
 */
package io.strata.demo;
