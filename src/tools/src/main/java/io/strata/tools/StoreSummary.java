// SPDX-License-Identifier: Apache-2.0
package io.strata.tools;

import io.strata.format.BaseSnapshot;
import io.strata.format.Manifest;
import io.strata.format.StoreLayout;
import io.strata.objectstore.ObjectInfo;
import io.strata.sync.StoreInspector;
import java.io.IOException;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * What {@code describe} says of one Strata store: its newest version as a load reads it (the
 * manifest of the version object a load of the greatest version finds), the base snapshot and
 * delta chain, its objects and bytes, when it last committed, and the races its listing shows.
 *
 * @param store the store's listing
 * @param newestVersion the greatest version with a version object, 0 if none
 * @param key the version object a load of {@code newestVersion} reads, or null
 * @param manifest its manifest, or null if none or unreadable
 * @param error why the manifest could not be read, or null
 * @param attemptKeys true if the store was written under Spark's checkpoint format 2
 * @param extraAttempts format 2: version objects of attempts beyond one per version (lost
 *     races: task retries, speculative copies, zombies; the driver uses one of each version)
 * @param supersededGenerations format 1: generations a later query run's re-commit superseded
 * @param newestPublishedSnapshot the greatest version of a published snapshot, or -1
 * @param lastCommitMillis the last-modified time of {@code key}, epoch ms, or 0
 */
record StoreSummary(CheckpointScan.Store store, long newestVersion, String key,
    Manifest manifest, String error, boolean attemptKeys, int extraAttempts,
    int supersededGenerations, long newestPublishedSnapshot, long lastCommitMillis) {

  /**
   * Reads the newest manifest of {@code store} (one LIST of its prefix, one tail GET): in
   * checkpoint format 2 the attempt Spark's commit log names, else the one a load without a
   * checkpoint id reads.
   */
  static StoreSummary of(CheckpointScan.Store store, StoreInspector inspector,
      CommitLogAttempts committed) {
    long newest = store.newestVersion();
    Map<Long, Integer> attempts = new HashMap<>();
    Map<Long, Integer> generations = new HashMap<>();
    long published = -1;
    for (ObjectInfo o : store.objects()) {
      long v = StoreLayout.versionOf(o.key());
      if (v >= 0 && StoreLayout.attemptOf(o.key()) != null) {
        attempts.merge(v, 1, Integer::sum);
      } else if (v >= 0 && StoreLayout.generationOf(o.key()) > 0) {
        generations.merge(v, 1, Integer::sum);
      }
      published = Math.max(published, StoreLayout.publishedSnapshotVersionOf(o.key()));
    }
    boolean attemptKeys = attemptKeys(store);
    int extra = attempts.values().stream().mapToInt(n -> n - 1).sum();
    int superseded = generations.values().stream().mapToInt(n -> n - 1).sum();
    if (newest <= 0) {
      return new StoreSummary(store, 0, null, null, null, attemptKeys, extra, superseded,
          published, 0);
    }
    String key = null;
    try {
      key = located(store, newest, attemptKeys, inspector, committed);
      Manifest m = inspector.manifest(key);
      String k = key;
      long modified = store.objects().stream().filter(o -> o.key().equals(k))
          .mapToLong(ObjectInfo::lastModifiedMillis).findFirst().orElse(0);
      return new StoreSummary(store, newest, key, m, null, attemptKeys, extra, superseded,
          published, modified);
    } catch (IOException | RuntimeException e) {
      return new StoreSummary(store, newest, key, null, e.getMessage(), attemptKeys, extra,
          superseded, published, 0);
    }
  }

  /**
   * The version object of {@code version} a load reads: in checkpoint format 2 the attempt the
   * commit log names (Spark passes it to the load as the checkpoint id) if it names one of the
   * listed attempts, else what a load without an id finds ({@link StoreInspector#locate}).
   */
  static String located(CheckpointScan.Store store, long version, boolean attemptKeys,
      StoreInspector inspector, CommitLogAttempts committed) throws IOException {
    if (attemptKeys) {
      List<String> keys = store.versionObjects().stream().map(ObjectInfo::key)
          .filter(k -> StoreLayout.versionOf(k) == version).toList();
      Optional<String> named = committed.committed(store, version, keys);
      if (named.isPresent()) {
        return named.get();
      }
    }
    return inspector.locate(version, attemptKeys);
  }

  /**
   * True if the store's version objects are per attempt ({@code v/<version>/<attempt>.svo}:
   * Spark's checkpoint format 2), false for generations or layout-1 keys (format 1).
   */
  static boolean attemptKeys(CheckpointScan.Store store) {
    boolean attempts = false;
    for (ObjectInfo o : store.objects()) {
      if (StoreLayout.versionOf(o.key()) < 0) {
        continue;
      }
      if (StoreLayout.attemptOf(o.key()) == null) {
        return false;
      }
      attempts = true;
    }
    return attempts;
  }

  /** The JSON form. */
  Map<String, Object> json() {
    Map<String, Object> j = new LinkedHashMap<>();
    j.put("operator", store.operator());
    j.put("partition", store.partition());
    j.put("store", store.name());
    j.put("checkpointFormat", attemptKeys ? 2 : 1);
    j.put("newestVersion", newestVersion);
    j.put("versionObject", key == null ? null : store.relativeLocation() + "/" + key);
    j.put("attempt", manifest == null ? null : manifest.attempt());
    j.put("epoch", manifest == null || manifest.epoch() == 0 ? null : manifest.epoch());
    j.put("baseSnapshotVersion", manifest == null ? null
        : manifest.base().map(BaseSnapshot::version).orElse(null));
    j.put("newestPublishedSnapshotVersion", newestPublishedSnapshot < 0 ? null
        : newestPublishedSnapshot);
    j.put("deltaChainLength", manifest == null ? null : manifest.deltaChainLength());
    j.put("keys", manifest == null ? null : manifest.numKeys());
    j.put("stateBytes", manifest == null ? null : manifest.totalBytes());
    j.put("objects", store.objects().size());
    j.put("bytes", store.bytes());
    j.put("lastCommit", lastCommitMillis <= 0 ? null : Table.time(lastCommitMillis));
    j.put("lostRaces", extraAttempts);
    j.put("supersededGenerations", supersededGenerations);
    j.put("error", error);
    return j;
  }
}
