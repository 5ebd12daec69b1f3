// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.strata.engine.CloseableIterator;
import io.strata.engine.KeyValue;
import io.strata.format.Reachability;
import io.strata.format.StoreLayout;
import io.strata.objectstore.ObjectInfo;
import io.strata.objectstore.ObjectStore;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;

/**
 * A deterministic workload for garbage-collection tests, with the expected state of every
 * version it wrote, and the checks those tests share.
 */
final class GcWorkload {
  private GcWorkload() { }

  static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  /**
   * Writes version {@code v} on top of {@code parent} into {@code s} (not committed): overwrites
   * one of 40 hot keys (so deltas overlap and RocksDB compacts), adds a new key, deletes the key
   * added 7 versions earlier. Returns the expected state after the commit.
   */
  static TreeMap<String, String> write(SyncedStore s, Map<String, String> parent, long v,
      String tag) throws IOException {
    TreeMap<String, String> next = new TreeMap<>(parent);
    put(s, next, "hot-" + (v % 40), tag + v);
    put(s, next, "new-" + v, tag + v);
    if (v > 7) {
      s.delete(b("new-" + (v - 7)));
      next.remove("new-" + (v - 7));
    }
    return next;
  }

  /** Writes enough junk to spill more than once with a 2 KiB threshold (never committed). */
  static void writeJunk(SyncedStore s, int n) throws IOException {
    for (int i = 0; i < n; i++) {
      s.put(b("junk-" + i), new byte[100]);
    }
  }

  private static void put(SyncedStore s, Map<String, String> state, String k, String v)
      throws IOException {
    s.put(b(k), b(v));
    state.put(k, v);
  }

  /** Asserts that the store holds exactly {@code expected}. */
  static void assertState(SyncedStore s, Map<String, String> expected, String what) {
    TreeMap<String, String> actual = new TreeMap<>();
    try (CloseableIterator<KeyValue> it = s.scan(new byte[0])) {
      while (it.hasNext()) {
        KeyValue kv = it.next();
        actual.put(new String(kv.key(), StandardCharsets.UTF_8),
            new String(kv.value(), StandardCharsets.UTF_8));
      }
    }
    assertEquals(expected, actual, what);
  }

  /**
   * What a finished garbage collection must leave: exactly the version objects of the retained
   * versions and the objects their manifests name (plus {@code alsoAllowed}), nothing else.
   *
   * @return the keys the retained manifests name
   */
  static Set<String> assertOnlyRetainedAndNamedRemain(SyncedStore reader, ObjectStore objects,
      long newest, int retain, Set<String> alsoAllowed) throws IOException {
    List<ObjectInfo> listing = objects.list("");
    Set<String> expected = new HashSet<>(alsoAllowed);
    Set<String> named = new HashSet<>();
    for (ObjectInfo o : listing) {
      long v = StoreLayout.versionOf(o.key());
      if (v >= 0 && v >= newest - retain) { // Spark's rule: [newest - retain, newest]
        expected.add(o.key());
        named.addAll(Reachability.namedKeys(reader.readManifest(v,
            Optional.ofNullable(StoreLayout.attemptOf(o.key())))));
      }
    }
    // Published snapshots a retained version can use stay, with the files they name.
    List<io.strata.format.PublishedSnapshot.TipIndex> tips = new java.util.ArrayList<>();
    List<Reachability.Listed> listed = new java.util.ArrayList<>();
    for (ObjectInfo o : listing) {
      listed.add(new Reachability.Listed(o.key(), o.size(), o.lastModifiedMillis()));
      long v = StoreLayout.versionOf(o.key());
      if (v >= 0 && v >= newest - retain) {
        tips.add(io.strata.format.PublishedSnapshot.TipIndex.of(reader.readManifest(v,
            Optional.ofNullable(StoreLayout.attemptOf(o.key())))));
      }
    }
    for (String key : Reachability.usablePublishedSnapshots(listed, tips)) {
      expected.add(key);
      try (java.io.InputStream in = objects.get(key)) {
        named.addAll(Reachability.namedKeys(
            io.strata.format.PublishedSnapshotCodec.decode(in.readAllBytes(), key), key));
      } catch (io.strata.format.ManifestFormatException e) {
        throw new IOException(e);
      }
    }
    expected.addAll(named);
    Set<String> actual = new HashSet<>();
    listing.forEach(o -> actual.add(o.key()));
    Set<String> unexpected = new HashSet<>(actual);
    unexpected.removeAll(expected);
    assertEquals(Set.of(), unexpected, "objects no retained manifest names");
    Set<String> missing = new HashSet<>(named);
    missing.removeAll(actual);
    assertEquals(Set.of(), missing, "objects retained manifests name that are gone");
    return named;
  }
}
