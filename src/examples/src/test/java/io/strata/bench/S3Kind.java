// SPDX-License-Identifier: Apache-2.0
package io.strata.bench;

/**
 * Kinds of S3 requests the benchmark counts (see {@link S3Gateway} for which API calls map to
 * which kind). The order is the column order of the reports.
 */
enum S3Kind {
  PUT, GET, HEAD, LIST, COPY, DELETE
}
