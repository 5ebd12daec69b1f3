// SPDX-License-Identifier: Apache-2.0
/** Counters and per-operation statistics (commit, restore, S3 requests) of a state store. */
package io.strata.metrics;
