// SPDX-License-Identifier: Apache-2.0
package io.strata.bench;

import java.util.Arrays;
import java.util.EnumMap;
import java.util.Map;

/**
 * Latency the {@link S3Gateway} adds before forwarding each request, by kind: a stand-in for a
 * real object store's time to first byte on loopback. The data transfer itself is not slowed.
 */
enum LatencyProfile {
  /** No added latency: loopback S3Proxy as is (a PUT of a few KiB costs a few ms). */
  NONE("none", 0, 0, 0, 0, 0, 0),
  /**
   * Typical S3 first-byte latencies: PUT 30 ms, GET 15 ms, HEAD 10 ms, LIST 30 ms, COPY 60 ms,
   * DELETE 10 ms.
   */
  S3_LIKE("s3-like", 30, 15, 10, 30, 60, 10);

  private final String id;
  private final Map<S3Kind, Long> millis = new EnumMap<>(S3Kind.class);

  LatencyProfile(String id, long put, long get, long head, long list, long copy, long delete) {
    this.id = id;
    millis.put(S3Kind.PUT, put);
    millis.put(S3Kind.GET, get);
    millis.put(S3Kind.HEAD, head);
    millis.put(S3Kind.LIST, list);
    millis.put(S3Kind.COPY, copy);
    millis.put(S3Kind.DELETE, delete);
  }

  /** The name used on the command line and in results. */
  String id() {
    return id;
  }

  /** Added latency in ms for a request of {@code kind}. */
  long millis(S3Kind kind) {
    return millis.get(kind);
  }

  /** Latency per kind, for the results file. */
  Map<String, Long> asMap() {
    Map<String, Long> m = new java.util.LinkedHashMap<>();
    millis.forEach((k, v) -> m.put(k.name(), v));
    return m;
  }

  /**
   * The profile named {@code id}.
   *
   * @throws IllegalArgumentException naming the allowed ids if there is none
   */
  static LatencyProfile of(String id) {
    for (LatencyProfile p : values()) {
      if (p.id.equals(id)) {
        return p;
      }
    }
    throw new IllegalArgumentException("Unknown latency profile '" + id + "'; expected one of "
        + Arrays.stream(values()).map(LatencyProfile::id).toList());
  }
}
