// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import io.strata.format.BaseSnapshot;
import io.strata.format.Delta;
import io.strata.format.Manifest;
import io.strata.format.PublishedSnapshot;
import io.strata.format.StoreLayout;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * What the manifests of recent version objects name, so a garbage-collection round reads only
 * the manifests it has not seen (the owner of a store caches every manifest it commits or
 * loads). Bounded: beyond the capacity the entry of the lowest version is evicted (not the
 * least recently used one: a round reads the manifests of old versions waiting out the grace
 * period after every retained one, and least-recently-used eviction let those push the oldest
 * retained manifests out, to be read again next round). Keeps only the named keys, not whole
 * manifests; manifests on the same base share one set of base keys.
 *
 * <p>A base snapshot is identified by everything it names, the set of its file keys (not by its
 * version, attempt or first file: two snapshots of one version usually share their SSTs and
 * differ only in their pack), so a manifest is only ever credited with its own snapshot's keys.
 *
 * <p>An entry is keyed by the version object's key and valid only for the object size it was
 * read with, so a key that was deleted and written again (a version older than the retention
 * re-created by a zombie attempt) is never answered from a stale entry. Thread-safe.
 */
final class ManifestCache {
  private record Entry(long objectSize, Set<String> baseKeys, List<String> deltaKeys,
      PublishedSnapshot.TipIndex tips, long epoch) { }

  private final int capacity;
  /** Ordered by version, then key: the first entry is the one evicted. */
  private final TreeMap<String, Entry> entries = new TreeMap<>(
      Comparator.comparingLong(StoreLayout::versionOf).thenComparing(Comparator.naturalOrder()));
  /** Interned base-snapshot key sets: each set is its own identity (key and value). */
  private final LinkedHashMap<Set<String>, Set<String>> bases;

  /**
   * A cache sized for one store: every retained version, plus twice the longest stretch between
   * two garbage-collection rounds or two snapshots, plus 16 (at most 10,000 version objects).
   */
  static ManifestCache forStore(GcSettings gc, long snapshotInterval) {
    return new ManifestCache((int) Math.min(10_000L, gc.versionsToRetain()
        + 2L * Math.max(gc.roundInterval(), snapshotInterval) + 16));
  }

  /** A cache of at most {@code capacity} (&gt;= 1) version objects. */
  ManifestCache(int capacity) {
    if (capacity < 1) {
      throw new IllegalArgumentException("capacity must be >= 1, was " + capacity);
    }
    this.capacity = capacity;
    this.bases = new LinkedHashMap<>(16, 0.75f, true) {
      @Override
      protected boolean removeEldestEntry(Map.Entry<Set<String>, Set<String>> eldest) {
        return size() > 32;
      }
    };
  }

  /** Records what the manifest in the version object {@code key} of {@code objectSize} names. */
  synchronized void put(String key, long objectSize, Manifest m) {
    Set<String> baseKeys = Set.of();
    if (m.base().isPresent() && !m.base().get().files().isEmpty()) {
      BaseSnapshot b = m.base().get();
      Set<String> keys = new HashSet<>();
      b.files().forEach(f -> keys.add(f.file().key()));
      baseKeys = bases.get(keys); // equal sets: the same snapshot (or one naming the same keys)
      if (baseKeys == null) {
        baseKeys = Set.copyOf(keys);
        bases.put(baseKeys, baseKeys);
      }
    }
    List<String> deltaKeys = new ArrayList<>(m.deltas().size());
    for (Delta d : m.deltas()) {
      if (!deltaKeys.contains(d.file().key())) {
        deltaKeys.add(d.file().key());
      }
    }
    entries.put(key, new Entry(objectSize, baseKeys, List.copyOf(deltaKeys),
        PublishedSnapshot.TipIndex.of(m), m.epoch()));
    while (entries.size() > capacity) {
      entries.pollFirstEntry();
    }
  }

  /**
   * The query-run epoch in the cached manifest of {@code key} (0 without one), or -1 if the
   * cache has no entry for {@code key} at {@code objectSize}.
   */
  synchronized long epoch(String key, long objectSize) {
    Entry e = entries.get(key);
    return e == null || e.objectSize() != objectSize ? -1 : e.epoch();
  }

  /**
   * Adds the keys named by the cached manifest of {@code key} to {@code out}.
   *
   * @return false if the cache has no entry for {@code key} at {@code objectSize}
   */
  synchronized boolean addNamedKeys(String key, long objectSize, Collection<String> out) {
    Entry e = entries.get(key);
    if (e == null || e.objectSize() != objectSize) {
      return false;
    }
    out.addAll(e.baseKeys());
    out.addAll(e.deltaKeys());
    return true;
  }

  /**
   * The lineage tips of the cached manifest of {@code key} ({@link
   * PublishedSnapshot.TipIndex}), or null if the cache has no entry for {@code key} at {@code
   * objectSize}.
   */
  synchronized PublishedSnapshot.TipIndex tips(String key, long objectSize) {
    Entry e = entries.get(key);
    return e == null || e.objectSize() != objectSize ? null : e.tips();
  }

  /** Forgets deleted version objects. */
  synchronized void removeAll(Collection<String> keys) {
    keys.forEach(entries::remove);
  }

  /** Number of cached version objects. */
  synchronized int size() {
    return entries.size();
  }
}
