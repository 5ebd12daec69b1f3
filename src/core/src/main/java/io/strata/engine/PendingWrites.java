// SPDX-License-Identifier: Apache-2.0
package io.strata.engine;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentSkipListMap;

/**
 * The writes of the version being built, sorted by key in unsigned byte order (RocksDB's default
 * bytewise comparator). A removal is kept as a tombstone so it shadows the committed value.
 *
 * <p>Backed by a {@link ConcurrentSkipListMap}, so the same task may put and remove keys while a
 * scan runs; a scan works on a {@link #snapshot} taken when it starts.
 */
final class PendingWrites {
  /** Marker value of a removal; compared by identity. */
  static final byte[] TOMBSTONE = new byte[0];
  private static final long ENTRY_OVERHEAD = 64;

  private final ConcurrentSkipListMap<byte[], byte[]> map =
      new ConcurrentSkipListMap<>(Arrays::compareUnsigned);
  private long approxBytes;

  void put(byte[] key, byte[] value) {
    byte[] prev = map.put(key, value);
    approxBytes += key.length + value.length + ENTRY_OVERHEAD;
    if (prev != null) {
      approxBytes -= key.length + prev.length + ENTRY_OVERHEAD;
    }
  }

  void delete(byte[] key) {
    put(key, TOMBSTONE);
  }

  /** The pending value, {@link #TOMBSTONE} for a pending removal, or null if untouched. */
  byte[] lookup(byte[] key) {
    return map.get(key);
  }

  /**
   * The pending writes whose keys start with {@code prefix} and lie in {@code [from, until)}, in
   * key order, as they are now: later writes do not change the returned list (entries of the
   * skip list are immutable snapshots).
   *
   * @param prefix every key returned starts with it
   * @param from first key, inclusive; must itself start with {@code prefix}
   * @param until end key, exclusive; null for no end but the prefix's
   */
  List<Map.Entry<byte[], byte[]>> snapshot(byte[] prefix, byte[] from, byte[] until) {
    List<Map.Entry<byte[], byte[]>> out = new ArrayList<>();
    if (until != null && Arrays.compareUnsigned(from, until) >= 0) {
      return out;
    }
    var range = until == null ? map.tailMap(from, true) : map.subMap(from, true, until, false);
    for (Map.Entry<byte[], byte[]> e : range.entrySet()) {
      byte[] k = e.getKey();
      if (k.length < prefix.length
          || !Arrays.equals(k, 0, prefix.length, prefix, 0, prefix.length)) {
        break;
      }
      out.add(e);
    }
    return out;
  }

  Iterable<Map.Entry<byte[], byte[]>> entries() {
    return map.entrySet();
  }

  boolean isEmpty() {
    return map.isEmpty();
  }

  int size() {
    return map.size();
  }

  long approxBytes() {
    return approxBytes;
  }

  void clear() {
    map.clear();
    approxBytes = 0;
  }

  static boolean isTombstone(byte[] v) {
    return v == TOMBSTONE;
  }
}
