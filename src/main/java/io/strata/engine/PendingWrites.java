package io.strata.engine;

import java.util.Arrays;
import java.util.Map;
import java.util.NavigableMap;
import java.util.concurrent.ConcurrentSkipListMap;

/**
 * The writes of the version being built, sorted by key in unsigned byte order (RocksDB's default
 * bytewise comparator). A removal is kept as a tombstone so it shadows the committed value.
 *
 * <p>Backed by a {@link ConcurrentSkipListMap}, so iterators are weakly consistent: a scan may
 * run while the same task puts and removes keys (Spark's contract allows either view).
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

  NavigableMap<byte[], byte[]> from(byte[] fromKey) {
    return map.tailMap(fromKey, true);
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
