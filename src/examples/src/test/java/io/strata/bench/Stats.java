// SPDX-License-Identifier: Apache-2.0
package io.strata.bench;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Order statistics of a sample of times in ms: nearest-rank percentiles (p50, p95), max, mean.
 * An empty sample reports -1 everywhere.
 */
record Stats(long p50, long p95, long max, double mean, int samples) {

  static Stats of(List<Long> values) {
    if (values.isEmpty()) {
      return new Stats(-1, -1, -1, -1, 0);
    }
    List<Long> v = new ArrayList<>(values);
    Collections.sort(v);
    double sum = 0;
    for (long x : v) {
      sum += x;
    }
    return new Stats(rank(v, 0.50), rank(v, 0.95), v.get(v.size() - 1),
        Math.round(10.0 * sum / v.size()) / 10.0, v.size());
  }

  /** Nearest rank: the smallest value with at least {@code q} of the sample at or below it. */
  private static long rank(List<Long> sorted, double q) {
    int i = (int) Math.ceil(q * sorted.size()) - 1;
    return sorted.get(Math.max(0, Math.min(sorted.size() - 1, i)));
  }

  Map<String, Object> asMap() {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("p50", p50);
    m.put("p95", p95);
    m.put("max", max);
    m.put("mean", mean);
    m.put("samples", samples);
    return m;
  }
}
