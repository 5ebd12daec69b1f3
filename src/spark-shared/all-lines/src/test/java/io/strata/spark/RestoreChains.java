// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import io.strata.format.Manifest;
import io.strata.format.PublishedSnapshot;
import io.strata.format.PublishedSnapshotCodec;
import io.strata.format.Reachability;
import io.strata.format.StoreLayout;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;

/**
 * Issue 15: the delta chain a cold restore of each store's newest version replays, computed from
 * the objects alone, as S3Proxy's filesystem data directory holds them (one file per key). For
 * each store root ({@code .../state/<operator>/<partition>[/<store name>]/}): the newest
 * version's manifest (its greatest generation; every attempt in format 2), and every published
 * snapshot under {@code b/} the manifest can use ({@link PublishedSnapshot#usableBy}). The chain
 * is the number of deltas after the newest usable base: the manifest's own base, or a published
 * snapshot, whichever leaves fewer ({@link Manifest#deltaChainLength()} of {@link
 * PublishedSnapshot#rebase}). That is what a cold load restores ({@code SyncedStore}: the newest
 * usable published snapshot, else the manifest's own chain).
 */
public final class RestoreChains {
  private RestoreChains() { }

  /**
   * One store's newest version and the chain a cold restore of it replays.
   *
   * @param version the newest committed version
   * @param manifestChain deltas after the manifest's own base
   * @param restoreChain deltas after the newest base a cold load can use (&lt;= manifestChain)
   * @param publishedSnapshots published snapshot objects under the store's {@code b/}
   */
  public record Chain(long version, int manifestChain, int restoreChain,
      int publishedSnapshots) { }

  /**
   * Every store of the checkpoint at {@code bucket/prefix} in S3Proxy's {@code dataDir}, store
   * root key (relative to the bucket) to its chain; empty without a {@code state/} directory.
   *
   * @throws IOException if a file cannot be read
   * @throws IllegalStateException if a version object or published snapshot does not decode
   */
  public static Map<String, Chain> of(Path dataDir, String bucket, String prefix)
      throws IOException {
    Path root = dataDir.resolve(bucket);
    Path state = root.resolve(prefix).resolve("state");
    Map<String, Chain> out = new TreeMap<>();
    if (!Files.exists(state)) {
      return out;
    }
    Map<String, List<String>> versionObjects = new TreeMap<>();
    try (Stream<Path> files = Files.walk(state)) {
      for (Path f : files.filter(Files::isRegularFile).toList()) {
        String key = root.relativize(f).toString().replace('\\', '/');
        int v = key.lastIndexOf("/v/");
        if (v >= 0 && key.endsWith(StoreLayout.VERSION_OBJECT_SUFFIX)) {
          versionObjects.computeIfAbsent(key.substring(0, v + 1), k -> new ArrayList<>())
              .add(key.substring(v + 1));
        }
      }
    }
    for (Map.Entry<String, List<String>> e : versionObjects.entrySet()) {
      String storeRoot = e.getKey();
      long newest = e.getValue().stream().mapToLong(StoreLayout::versionOf).max().orElseThrow();
      long generation = e.getValue().stream().filter(k -> StoreLayout.versionOf(k) == newest)
          .mapToLong(StoreLayout::generationOf).max().orElse(-1);
      List<PublishedSnapshot> published = published(root, storeRoot);
      Chain worst = null;
      for (String rel : e.getValue()) {
        if (StoreLayout.versionOf(rel) != newest || StoreLayout.generationOf(rel) != generation) {
          continue;
        }
        Manifest m = CheckpointAudit.manifest(root.resolve(storeRoot + rel), storeRoot + rel);
        int chain = m.deltaChainLength();
        for (PublishedSnapshot p : published) {
          if (p.usableBy(m)) {
            chain = Math.min(chain, p.rebase(m).deltaChainLength());
          }
        }
        Chain c = new Chain(newest, m.deltaChainLength(), chain, published.size());
        if (worst == null || c.restoreChain() > worst.restoreChain()) {
          worst = c;
        }
      }
      out.put(storeRoot, worst);
    }
    return out;
  }

  /** The longest restore chain over every store of the checkpoint (0 without stores). */
  public static int longest(Path dataDir, String bucket, String prefix) throws IOException {
    return of(dataDir, bucket, prefix).values().stream().mapToInt(Chain::restoreChain).max()
        .orElse(0);
  }

  /**
   * The longest chain any committed version's manifest of the checkpoint lists (deltas after its
   * own base; every version object, every generation and attempt), 0 without stores: how far
   * past a base the commits went before adopting a newer one.
   *
   * @throws IllegalStateException if a version object does not decode
   */
  public static int longestManifestChain(Path dataDir, String bucket, String prefix)
      throws IOException {
    Path root = dataDir.resolve(bucket);
    Path state = root.resolve(prefix).resolve("state");
    if (!Files.exists(state)) {
      return 0;
    }
    int longest = 0;
    try (Stream<Path> files = Files.walk(state)) {
      for (Path f : files.filter(Files::isRegularFile).toList()) {
        String key = root.relativize(f).toString().replace('\\', '/');
        if (key.contains("/v/") && key.endsWith(StoreLayout.VERSION_OBJECT_SUFFIX)) {
          longest = Math.max(longest, CheckpointAudit.manifest(f, key).deltaChainLength());
        }
      }
    }
    return longest;
  }

  /**
   * Files a published snapshot under {@code b/} names that do not exist, as "store root: key";
   * empty when every published snapshot of the checkpoint is whole.
   */
  public static List<String> missingPublishedFiles(Path dataDir, String bucket, String prefix)
      throws IOException {
    Path root = dataDir.resolve(bucket);
    List<String> missing = new ArrayList<>();
    for (String storeRoot : of(dataDir, bucket, prefix).keySet()) {
      for (PublishedSnapshot p : published(root, storeRoot)) {
        for (String key : p.files().stream().map(f -> f.file().key()).distinct().toList()) {
          if (!Files.exists(root.resolve(storeRoot + key))) {
            missing.add(storeRoot + ": " + key);
          }
        }
      }
    }
    return missing;
  }

  private static List<PublishedSnapshot> published(Path root, String storeRoot)
      throws IOException {
    Path dir = root.resolve(storeRoot + StoreLayout.PUBLISHED_SNAPSHOTS);
    List<PublishedSnapshot> out = new ArrayList<>();
    if (!Files.isDirectory(dir)) {
      return out;
    }
    try (Stream<Path> files = Files.list(dir)) {
      for (Path f : files.filter(Files::isRegularFile).toList()) {
        String rel = StoreLayout.PUBLISHED_SNAPSHOTS + f.getFileName(); // the store's own key
        String key = storeRoot + rel;
        if (!key.endsWith(StoreLayout.PUBLISHED_SNAPSHOT_SUFFIX)) {
          continue;
        }
        try {
          out.add(PublishedSnapshotCodec.decode(Files.readAllBytes(f), rel));
        } catch (Exception ex) {
          throw new IllegalStateException("Cannot decode published snapshot " + key + ": " + ex,
              ex);
        }
      }
    }
    return out;
  }
}
