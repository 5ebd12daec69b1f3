// SPDX-License-Identifier: Apache-2.0
package io.strata.tools;

import com.fasterxml.jackson.databind.JsonNode;
import io.strata.objectstore.ObjectInfo;
import io.strata.objectstore.ObjectStore;
import io.strata.format.StoreLayout;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;

/**
 * The state checkpoint ids Spark's commit log recorded under checkpoint format 2 ({@code
 * spark.sql.streaming.stateStore.checkpointFormatVersion=2}): the file {@code commits/<b>} of
 * batch {@code b} holds, after its version line, JSON with {@code stateUniqueIds}: per operator,
 * per partition, the ids of its stores' version {@code b + 1} (Spark's {@code CommitMetadata}).
 * A Strata store's id is the attempt of its version object ({@code v/<version>/<attempt>.svo}),
 * so these say which attempt a load by the driver reads, where the listing alone shows several.
 * Matching is by membership (ids are unique), so the order of a partition's stores does not
 * matter. Commit files without ids (format 1) or unreadable ones are skipped: the caller then
 * falls back to the newest attempt, as a load without an id finds it.
 */
final class CommitLogAttempts {
  /** Ids per "operator/partition" per version. */
  private final Map<Long, Map<String, Set<String>>> byVersion;

  private CommitLogAttempts(Map<Long, Map<String, Set<String>>> byVersion) {
    this.byVersion = byVersion;
  }

  /** None: every lookup is empty. */
  static CommitLogAttempts none() {
    return new CommitLogAttempts(Map.of());
  }

  /**
   * Reads the commit files of the batches whose versions the stores with per-attempt keys hold
   * (one GET each, in parallel on {@code requests}); reads nothing if no store has such keys.
   *
   * @param root the checkpoint's object store (keys relative to the checkpoint)
   */
  static CommitLogAttempts read(CheckpointScan scan, ObjectStore root, ExecutorService requests)
      throws InterruptedException {
    Set<Long> versions = new HashSet<>();
    for (CheckpointScan.Store s : scan.strataStores()) {
      if (StoreSummary.attemptKeys(s)) {
        s.versionObjects().forEach(o -> versions.add(StoreLayout.versionOf(o.key())));
      }
    }
    if (versions.isEmpty()) {
      return none();
    }
    List<Long> batches = new ArrayList<>();
    List<Future<Map<String, Set<String>>>> reads = new ArrayList<>();
    for (ObjectInfo o : scan.spark.commitObjects()) {
      long batch = Long.parseLong(o.key().substring("commits/".length()));
      if (versions.contains(batch + 1)) {
        batches.add(batch);
        reads.add(requests.submit(() -> parse(root, o.key())));
      }
    }
    Map<Long, Map<String, Set<String>>> out = new HashMap<>();
    for (int i = 0; i < reads.size(); i++) {
      try {
        Map<String, Set<String>> ids = reads.get(i).get();
        if (!ids.isEmpty()) {
          out.put(batches.get(i) + 1, ids);
        }
      } catch (java.util.concurrent.ExecutionException e) {
        // An unreadable commit file: that version falls back to the newest attempt.
      }
    }
    return new CommitLogAttempts(out);
  }

  /** The ids in one commit file, per "operator/partition"; empty if it has none. */
  static Map<String, Set<String>> parse(ObjectStore root, String key) throws Exception {
    String text;
    try (InputStream in = root.get(key)) {
      text = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
    return parse(text);
  }

  /** {@link #parse(ObjectStore, String)} of a commit file's text. */
  static Map<String, Set<String>> parse(String text) throws Exception {
    int nl = text.indexOf('\n');
    if (nl < 0) {
      return Map.of();
    }
    JsonNode ids = ToolContext.JSON.readTree(text.substring(nl + 1)).get("stateUniqueIds");
    Map<String, Set<String>> out = new HashMap<>();
    if (ids == null || !ids.isObject()) {
      return out;
    }
    ids.fields().forEachRemaining(op -> {
      JsonNode partitions = op.getValue();
      for (int p = 0; p < partitions.size(); p++) {
        Set<String> set = new HashSet<>();
        partitions.get(p).forEach(id -> {
          if (id.isTextual()) {
            set.add(id.asText());
          }
        });
        out.put(op.getKey() + "/" + p, set);
      }
    });
    return out;
  }

  /**
   * The ids {@code commits/<version - 1>} names for {@code store}'s operator and partition (one
   * per store of the partition), if that file was read and names any: Spark passes the store's
   * one to the load of {@code version}, which then reads exactly that attempt.
   */
  Optional<Set<String>> named(CheckpointScan.Store store, long version) {
    Set<String> ids = byVersion.getOrDefault(version, Map.of())
        .get(store.operator() + "/" + store.partition());
    return ids == null || ids.isEmpty() ? Optional.empty() : Optional.of(ids);
  }

  /**
   * Of {@code store}'s version objects of {@code version}, the one whose attempt the commit log
   * names, if it names one.
   *
   * @param keys version object keys of that version, relative to the store
   */
  Optional<String> committed(CheckpointScan.Store store, long version, List<String> keys) {
    Set<String> ids = byVersion.getOrDefault(version, Map.of())
        .get(store.operator() + "/" + store.partition());
    if (ids == null) {
      return Optional.empty();
    }
    return keys.stream().filter(k -> ids.contains(StoreLayout.attemptOf(k))).findFirst();
  }
}
