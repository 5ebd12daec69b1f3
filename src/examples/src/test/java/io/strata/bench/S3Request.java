// SPDX-License-Identifier: Apache-2.0
package io.strata.bench;

/**
 * One S3 request seen by the {@link S3Gateway}.
 *
 * @param timeMs wall-clock time its head arrived, ms since the epoch
 * @param kind its kind
 * @param state whether its key (a listing's prefix) is under a checkpoint's {@code state/}
 *     directory, i.e. state store traffic rather than Spark's offset/commit/metadata logs
 * @param bytesUp payload bytes it uploaded (PUT kind only, else 0)
 * @param key its object key within the bucket (a listing's prefix; empty for none)
 */
record S3Request(long timeMs, S3Kind kind, boolean state, long bytesUp, String key) { }
