// SPDX-License-Identifier: Apache-2.0
package io.strata.cluster;

import io.strata.format.ManifestCodec;
import io.strata.format.PublishedSnapshotCodec;
import io.strata.format.Reachability;
import io.strata.format.StoreLayout;
import io.strata.format.VersionObjectCodec;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Stream;

/**
 * Counts a checkpoint's state objects against the collection bound of docs/format.md ("The
 * bound"), reading S3Proxy's filesystem data directory directly (one file per key, its
 * modification time the object's {@code Last-Modified}), so it sends no request and sees no
 * fault. Used by the fault campaign ({@link FaultCampaignIT}) while the query runs and, with no
 * slack, after its final garbage collection.
 *
 * <p>Per store, with {@code N} its newest version, {@code R} the versions retained and {@code
 * s} the slack: an object is <em>within the bound</em> if it is a version object of a version
 * {@code >= N - R - s} (every generation), an object such a version's manifest names, a
 * published snapshot of such a version or the newest older one, with the files it names, a run
 * claim, marker or list (at most 6 after a round, 8 with slack: a new run's claim and marker
 * come before its first round; more are beyond), an object written after the oldest of those
 * version objects (in flight, not yet settled), or a base-snapshot file younger than the grace
 * period. Everything else is <em>beyond</em> the bound. The slack is the versions a store
 * commits between two rounds of its collection (Spark's {@code minVersionsToDelete}, 30 by
 * default): the bound holds after a round, and a sample may fall just before one.
 *
 * <p>Also within the bound (format 1, docs/format.md "The bound"): while claims of runs later
 * than the run that committed the newest version are listed, what an earlier run's collection
 * keeps for them: the version each claim says its load loaded ({@code loadsVersion}), the
 * newest generation of every re-committed version written after the oldest such claim (with
 * the version below), what those name, and the spills of the version after each.
 */
final class CheckpointCensus {
  /** One store's count. */
  record Store(String root, long newest, int objects, int published, int runs,
      List<String> beyond) { }

  private final Path bucketDir;
  private final String prefix;
  /** Keys each immutable object names (version objects' manifests, published snapshots). */
  private final Map<String, Set<String>> namedCache = new ConcurrentHashMap<>();
  /** Epochs of version objects' manifests (immutable while listed). */
  private final Map<String, Long> epochCache = new ConcurrentHashMap<>();

  /**
   * @param dataDir S3Proxy's data directory
   * @param bucket the checkpoint's bucket
   * @param prefix the key prefix under which query checkpoints are ({@code .../state/} below)
   */
  CheckpointCensus(Path dataDir, String bucket, String prefix) {
    this.bucketDir = dataDir.resolve(bucket);
    this.prefix = prefix;
  }

  /**
   * Counts every store under the prefix now.
   *
   * @param retain the versions retained ({@code minBatchesToRetain})
   * @param slack versions a store may be past its last round
   * @param graceMillis the grace period of base-snapshot files nothing named yet
   * @param nowMillis the clock the ages are taken against
   */
  List<Store> take(int retain, int slack, long graceMillis, long nowMillis) throws IOException {
    Map<Path, Map<String, Long>> stores = new TreeMap<>();
    Path top = bucketDir.resolve(prefix);
    if (!Files.isDirectory(top)) {
      return List.of();
    }
    try (Stream<Path> s = Files.walk(top)) {
      for (Path f : s.filter(Files::isRegularFile).toList()) {
        String rel = top.relativize(f).toString().replace('\\', '/');
        int state = rel.indexOf("/state/");
        if (state < 0 || f.getFileName().toString().startsWith(".")) {
          continue; // Spark's own files, or S3Proxy's temporary ones
        }
        Path storeRoot = storeRootOf(f, top);
        if (storeRoot == null) {
          continue;
        }
        try {
          stores.computeIfAbsent(storeRoot, x -> new TreeMap<>())
              .put(storeRoot.relativize(f).toString().replace('\\', '/'),
                  Files.getLastModifiedTime(f).toMillis());
        } catch (NoSuchFileException gone) {
          // collected while we walked
        }
      }
    }
    List<Store> out = new ArrayList<>();
    for (Map.Entry<Path, Map<String, Long>> e : stores.entrySet()) {
      out.add(count(e.getKey(), e.getValue(), retain, slack, graceMillis, nowMillis));
    }
    return out;
  }

  /** The store root holding {@code f}: the directory above its {@code v/}, {@code b/}, ... */
  private static Path storeRootOf(Path f, Path top) {
    for (Path p = f.getParent(); p != null && p.startsWith(top); p = p.getParent()) {
      String name = p.getFileName().toString();
      if (name.equals("v") || name.equals("b") || name.equals("sst") || name.equals("snap")
          || name.equals("spill") || name.equals("runs")) {
        return p.getParent();
      }
    }
    return null;
  }

  private Store count(Path root, Map<String, Long> objects, int retain, int slack,
      long graceMillis, long nowMillis) throws IOException {
    long newest = -1;
    for (String k : objects.keySet()) {
      newest = Math.max(newest, StoreLayout.versionOf(k));
    }
    long from = newest - retain - slack;
    long oldestRoot = Long.MAX_VALUE;
    Set<String> allowed = new HashSet<>();
    String olderPublished = null;
    for (Map.Entry<String, Long> o : objects.entrySet()) {
      String k = o.getKey();
      long v = StoreLayout.versionOf(k);
      if (v >= 0 && v >= from) {
        allowed.add(k);
        oldestRoot = Math.min(oldestRoot, o.getValue());
        allowed.addAll(named(root, k));
      }
      long p = StoreLayout.publishedSnapshotVersionOf(k);
      if (p >= 0 && p >= from) {
        allowed.add(k);
        allowed.addAll(named(root, k));
      } else if (p >= 0 && (olderPublished == null
          || p > StoreLayout.publishedSnapshotVersionOf(olderPublished))) {
        olderPublished = k;
      }
    }
    if (olderPublished != null) {
      allowed.add(olderPublished);
      allowed.addAll(named(root, olderPublished));
    }
    allowed.addAll(keptForLaterRuns(root, objects, newest, from));
    int runs = 0;
    int published = 0;
    List<String> beyond = new ArrayList<>();
    for (Map.Entry<String, Long> o : objects.entrySet()) {
      String k = o.getKey();
      Reachability.Kind kind = Reachability.kindOf(k);
      if (kind == Reachability.Kind.PUBLISHED_SNAPSHOT) {
        published++;
      }
      if (k.startsWith(StoreLayout.RUNS)) {
        if (++runs > (slack > 0 ? 8 : 6)) {
          beyond.add(k);
        }
        continue;
      }
      boolean young = o.getValue() + Reachability.SETTLE_MARGIN_MILLIS >= oldestRoot;
      boolean graced = (kind == Reachability.Kind.SNAPSHOT_SST
          || kind == Reachability.Kind.SNAPSHOT_PACK) && nowMillis - o.getValue() < graceMillis;
      if (!allowed.contains(k) && !young && !graced) {
        beyond.add(k + " (" + (nowMillis - o.getValue()) / 1000 + " s old)");
      }
    }
    return new Store(bucketDir.relativize(root).toString(), newest, objects.size(), published,
        runs, beyond);
  }

  /**
   * What an earlier run's collection keeps for claims of later runs (see the class comment),
   * mirroring strata-core's {@code LaterRuns}: the epoch of the newest version's newest
   * generation is the live run's; claims above it are later runs'.
   */
  private Set<String> keptForLaterRuns(Path root, Map<String, Long> objects, long newest,
      long from) throws IOException {
    String top = null;
    Map<Long, String> newestGen = new TreeMap<>();
    Set<Long> regenerated = new HashSet<>();
    for (String k : objects.keySet()) {
      long v = StoreLayout.versionOf(k);
      long g = StoreLayout.generationOf(k);
      if (v < 0 || g < 0) {
        continue;
      }
      String before = newestGen.putIfAbsent(v, k);
      if (before != null) {
        regenerated.add(v);
        if (StoreLayout.generationOf(before) < g) {
          newestGen.put(v, k);
        }
      }
    }
    top = newestGen.get(newest);
    if (top == null) {
      return Set.of(); // format 2, or nothing committed
    }
    long liveEpoch;
    try {
      byte[] all = Files.readAllBytes(root.resolve(top));
      liveEpoch = ManifestCodec.decode(VersionObjectCodec.manifestFromTail(all,
          VersionObjectCodec.footer(all, all.length))).epoch();
    } catch (Exception e) {
      return Set.of();
    }
    long claimedAt = Long.MAX_VALUE;
    Set<Long> loaded = new HashSet<>();
    for (Map.Entry<String, Long> o : objects.entrySet()) {
      if (StoreLayout.claimEpochOf(o.getKey()) > liveEpoch) {
        claimedAt = Math.min(claimedAt, o.getValue());
        try {
          long v = io.strata.format.RunClaim.decode(Files.readAllBytes(root.resolve(
              o.getKey()))).loadsVersion();
          if (v >= 0) {
            loaded.add(v);
          }
        } catch (Exception gone) {
          // retired meanwhile, or undecodable: the collector skips then
        }
      }
    }
    if (claimedAt == Long.MAX_VALUE) {
      return Set.of();
    }
    Set<String> keys = new HashSet<>();
    Set<Long> spillOf = new HashSet<>();
    for (long v : loaded) {
      spillOf.add(v + 1);
      for (String k : objects.keySet()) {
        if (StoreLayout.versionOf(k) == v) {
          keys.add(k);
        }
      }
    }
    Set<Long> committedLater = new HashSet<>(regenerated);
    for (Map.Entry<Long, String> e : newestGen.entrySet()) {
      // a later run's commit into a generation the collector had freed (one generation): told
      // by its manifest's epoch (only below the bound's versions: those are allowed anyway)
      if (e.getKey() < from && !regenerated.contains(e.getKey())
          && objects.get(e.getValue()) + Reachability.SETTLE_MARGIN_MILLIS >= claimedAt
          && epochOf(root, e.getValue()) > liveEpoch) {
        committedLater.add(e.getKey());
      }
    }
    for (long v : committedLater) {
      String k = newestGen.get(v);
      if (!regenerated.contains(v)
          || objects.get(k) + Reachability.SETTLE_MARGIN_MILLIS >= claimedAt) {
        keys.add(k);
        spillOf.add(v + 1);
        if (newestGen.containsKey(v - 1)) {
          keys.add(newestGen.get(v - 1));
        }
      }
    }
    Set<String> out = new HashSet<>(keys);
    // a format-1 version's generations are kept together (Reachability.garbage): the earlier
    // run's superseded generation of a kept re-commit stays too (not a root: only the object)
    Set<Long> keptVersions = new HashSet<>();
    keys.forEach(k -> keptVersions.add(StoreLayout.versionOf(k)));
    for (String k : objects.keySet()) {
      if (StoreLayout.generationOf(k) >= 0 && keptVersions.contains(StoreLayout.versionOf(k))) {
        out.add(k);
      }
    }
    List<io.strata.format.PublishedSnapshot.TipIndex> tips = new ArrayList<>();
    for (String k : keys) {
      out.addAll(named(root, k));
      io.strata.format.Manifest m = manifestOf(root, k);
      if (m != null) {
        tips.add(io.strata.format.PublishedSnapshot.TipIndex.of(m));
      }
    }
    // the published snapshots those roots can use, and their files (the collector keeps them)
    List<Reachability.Listed> listing = new ArrayList<>();
    objects.forEach((k, t) -> listing.add(new Reachability.Listed(k, 0, t)));
    for (String p : Reachability.usablePublishedSnapshots(listing, tips)) {
      out.add(p);
      out.addAll(named(root, p));
    }
    for (String k : objects.keySet()) {
      if (spillOf.contains(StoreLayout.spillVersionOf(k))) {
        out.add(k);
      }
    }
    return out;
  }

  /** The manifest in version object {@code key}, or null if gone or damaged. */
  private static io.strata.format.Manifest manifestOf(Path root, String key) {
    try {
      byte[] all = Files.readAllBytes(root.resolve(key));
      return ManifestCodec.decode(VersionObjectCodec.manifestFromTail(all,
          VersionObjectCodec.footer(all, all.length)));
    } catch (Exception e) {
      return null;
    }
  }

  /** The epoch in version object {@code key}'s manifest, or -1 if gone or damaged; cached. */
  private long epochOf(Path root, String key) {
    String id = root.resolve(key).toString();
    Long known = epochCache.get(id);
    if (known != null) {
      return known;
    }
    io.strata.format.Manifest m = manifestOf(root, key);
    if (m == null) {
      return -1;
    }
    epochCache.put(id, m.epoch());
    return m.epoch();
  }

  /** The keys (relative to the store root) the object {@code key} names; cached. */
  private Set<String> named(Path root, String key) throws IOException {
    Path f = root.resolve(key);
    String id = f.toString();
    Set<String> known = namedCache.get(id);
    if (known != null) {
      return known;
    }
    byte[] all;
    try {
      all = Files.readAllBytes(f);
    } catch (NoSuchFileException gone) {
      return Set.of();
    }
    Set<String> names;
    try {
      if (StoreLayout.publishedSnapshotVersionOf(key) >= 0) {
        names = Reachability.namedKeys(PublishedSnapshotCodec.decode(all, key), key);
      } else {
        VersionObjectCodec.Footer footer = VersionObjectCodec.footer(all, all.length);
        names = Reachability.namedKeys(ManifestCodec.decode(
            VersionObjectCodec.manifestFromTail(all, footer)));
      }
    } catch (Exception e) {
      // a damaged or half-written object names nothing (not cached: it may be whole later)
      return Set.of();
    }
    namedCache.put(id, names);
    return names;
  }
}
