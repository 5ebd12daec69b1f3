// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.concurrent.atomic.AtomicLong;

/** The system clock moved forward by an adjustable offset: lets a test age things without waiting. */
final class OffsetClock extends Clock {
  private final AtomicLong offsetMillis = new AtomicLong();
  private volatile long stepMillis;

  /** Moves the clock forward by {@code d}. */
  void advance(Duration d) {
    offsetMillis.addAndGet(d.toMillis());
  }

  /** From now on every read moves the clock forward by {@code d} (zero: no more). */
  void advanceOnEveryRead(Duration d) {
    stepMillis = d.toMillis();
  }

  @Override
  public ZoneId getZone() {
    return ZoneOffset.UTC;
  }

  @Override
  public Clock withZone(ZoneId zone) {
    return this;
  }

  @Override
  public long millis() {
    return System.currentTimeMillis() + offsetMillis.getAndAdd(stepMillis);
  }

  @Override
  public Instant instant() {
    return Instant.ofEpochMilli(millis());
  }
}
