// SPDX-License-Identifier: Apache-2.0
package io.strata.tools;

import io.strata.objectstore.ObjectInfo;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The writes a query's recent batches cost, read from the checkpoint's listing alone (issue 46):
 * every object the batches after {@code L - N} up to {@code L} (the newest committed) wrote was
 * one PUT, so the PUTs per batch are their count over {@code N}, for the state ({@code state/})
 * and for Spark's checkpoint files (the rest), with {@code N} up to {@value #WINDOW} batches.
 * Objects whose key holds their batch or version (version objects; offsets, commits and source
 * log entries) are assigned by that number; the others (SSTs and packs of base snapshots,
 * spills) by time, between the commit-log entries of batches {@code L - N} and {@code L} (S3
 * lists times to the second, so only those are rough over a few fast batches). Objects garbage collection already deleted are not counted, nor the
 * reads a restore makes, nor garbage collection's LISTs and DeleteObjects (2 LISTs and at most
 * one DeleteObjects per store per round): an estimate from below of the requests, and of their
 * list price.
 *
 * @param batches the window {@code N} in batches (&gt;= 1)
 * @param statePuts objects written under {@code state/} in the window
 * @param checkpointPuts other objects written in the window (offsets, commits, source logs)
 */
record BatchCost(long batches, long statePuts, long checkpointPuts) {
  /** A version object's key: its version in group 1. */
  private static final Pattern VERSION_OBJECT =
      Pattern.compile("^state/\\d+/\\d+/(?:[^/]+/)?v/(\\d{20})(?:\\.svo|/[^/]+)$");
  /** An entry of Spark's offset, commit or source log: its batch in group 1. */
  private static final Pattern BATCH_LOG =
      Pattern.compile("^(?:offsets|commits|sources/[^/]+)/(\\d+)(?:\\.compact)?$");
  /** Batches the estimate looks back over at most. */
  static final int WINDOW = 100;
  /** S3 Standard's list price of PUT, COPY, POST and LIST requests, USD per 1,000 (us-east-1). */
  static final double PUT_PRICE_PER_1000 = 0.005;

  /**
   * The estimate from {@code listing} (keys relative to the checkpoint), or empty without at
   * least two commit-log entries.
   */
  static Optional<BatchCost> of(List<ObjectInfo> listing) {
    TreeMap<Long, Long> commitTimes = new TreeMap<>();
    for (ObjectInfo o : listing) {
      String k = o.key();
      if (k.startsWith("commits/") && k.substring("commits/".length()).matches("\\d+")) {
        commitTimes.put(Long.parseLong(k.substring("commits/".length())),
            o.lastModifiedMillis());
      }
    }
    if (commitTimes.size() < 2) {
      return Optional.empty();
    }
    long last = commitTimes.lastKey();
    Map.Entry<Long, Long> from = commitTimes.ceilingEntry(last - WINDOW);
    long batches = last - from.getKey();
    long t0 = from.getValue();
    long t1 = commitTimes.get(last);
    if (batches < 1) {
      return Optional.empty();
    }
    long first = last - batches; // the window is batches first+1 .. last
    long state = 0;
    long checkpoint = 0;
    for (ObjectInfo o : listing) {
      String k = o.key();
      long t = o.lastModifiedMillis();
      Matcher version = VERSION_OBJECT.matcher(k);
      Matcher log = BATCH_LOG.matcher(k);
      if (version.matches()) { // batch b commits version b + 1
        long v = Long.parseLong(version.group(1));
        state += v > first + 1 && v <= last + 1 ? 1 : 0;
      } else if (log.matches()) {
        long b = Long.parseLong(log.group(1));
        checkpoint += b > first && b <= last ? 1 : 0;
      } else if (t > t0 && t <= t1) { // no number in the key: by time
        if (k.startsWith("state/")) {
          state++;
        } else {
          checkpoint++;
        }
      }
    }
    return Optional.of(new BatchCost(batches, state, checkpoint));
  }

  /** State PUTs per batch. */
  double statePerBatch() {
    return (double) statePuts / batches;
  }

  /** Checkpoint-file PUTs per batch. */
  double checkpointPerBatch() {
    return (double) checkpointPuts / batches;
  }

  /** The PUTs' list price per 1,000 batches, USD. */
  double usdPer1000Batches() {
    return (statePerBatch() + checkpointPerBatch()) * PUT_PRICE_PER_1000;
  }

  /** One line for {@code describe}. */
  String line() {
    return String.format(java.util.Locale.ROOT, "Writes per batch (the last %d batches, from "
        + "the listing): %.2f state PUTs, %.2f checkpoint-file PUTs; about $%.4f per 1,000 "
        + "batches at S3 Standard's list price ($%.3f per 1,000 PUTs), not counting restores' "
        + "GETs or garbage collection's LISTs and deletes", batches, statePerBatch(),
        checkpointPerBatch(), usdPer1000Batches(), PUT_PRICE_PER_1000);
  }

  /** The JSON form. */
  Map<String, Object> json() {
    Map<String, Object> j = new java.util.LinkedHashMap<>();
    j.put("batches", batches);
    j.put("statePutsPerBatch", statePerBatch());
    j.put("checkpointPutsPerBatch", checkpointPerBatch());
    j.put("usdPer1000Batches", usdPer1000Batches());
    return j;
  }
}
