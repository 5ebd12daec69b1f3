// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import io.strata.config.StrataConf;

/**
 * Retention and garbage collection of one store (docs/format.md, "Retention and garbage
 * collection").
 *
 * @param enabled false to never delete anything (Strata's {@code gc.enabled})
 * @param versionsToRetain how many versions before the newest stay loadable, &gt;= 1: versions
 *     {@code [newest - versionsToRetain, newest]}, as Spark's HDFS-backed provider keeps them
 *     (Spark's {@code spark.sql.streaming.minBatchesToRetain}, {@code
 *     StateStoreConf.minVersionsToRetain}; see {@code Reachability.plan})
 * @param roundInterval versions this instance must commit after a round before the next round
 *     is due, &gt;= 1 (Spark's {@code StateStoreConf.minVersionsToDelete}, that is {@code
 *     ratioExtraSpaceAllowedInCheckpoint * minBatchesToRetain}, at least 1)
 * @param gracePeriodMillis an object no retained manifest names is deleted only once its
 *     last-modified time is at least this old, ms (&gt;= 0; Strata's {@code gc.gracePeriod})
 */
public record GcSettings(boolean enabled, int versionsToRetain, int roundInterval,
    long gracePeriodMillis) {
  /**
   * Spark's defaults (100 versions retained, a round every 30 versions) and the default of
   * {@link StrataConf#GC_GRACE_PERIOD}.
   */
  public static final GcSettings DEFAULT = new GcSettings(true, 100, 30,
      StrataConf.GC_GRACE_PERIOD.defaultValue().orElseThrow().toMillis());

  public GcSettings {
    if (versionsToRetain < 1) {
      throw new IllegalArgumentException("versionsToRetain must be >= 1, was "
          + versionsToRetain);
    }
    if (roundInterval < 1) {
      throw new IllegalArgumentException("roundInterval must be >= 1, was " + roundInterval);
    }
    if (gracePeriodMillis < 0) {
      throw new IllegalArgumentException("gracePeriodMillis must be >= 0, was "
          + gracePeriodMillis);
    }
  }
}
