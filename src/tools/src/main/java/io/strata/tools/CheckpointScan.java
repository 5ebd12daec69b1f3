// SPDX-License-Identifier: Apache-2.0
package io.strata.tools;

import io.strata.format.Reachability;
import io.strata.format.StoreLayout;
import io.strata.objectstore.ObjectInfo;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * One listing of a checkpoint, split into what Spark wrote (its offset and commit logs) and the
 * state stores under {@code state/<operator>/<partition>[/<store>]/}: Strata's (by the shapes
 * of docs/format.md) and another provider's (Spark's HDFS-backed or RocksDB provider's files).
 * Pure: it only sorts keys.
 */
final class CheckpointScan {
  /** Strata's top-level directories in a store's location. */
  private static final Set<String> STRATA_DIRS = Set.of("v", "runs", "sst", "snap", "spill", "b",
      "holds", "_strata");
  /** Files of Spark's own providers: {@code 3.delta}, {@code 3.snapshot}, {@code 3.changelog},
   * {@code 3.zip}, {@code 3_<uuid>.zip} and RocksDB's {@code SSTs/} directory. */
  private static final Pattern FOREIGN =
      Pattern.compile("^(\\d+(_[0-9A-Za-z-]+)?\\.(delta|snapshot|changelog|zip)|SSTs/.*)$");
  private static final Pattern BATCH = Pattern.compile("^\\d+$");

  /** One store's objects, keys relative to the store's location. */
  record Store(long operator, int partition, String name, List<ObjectInfo> objects) {
    /**
     * Whether a batch with {@code partitions} state partitions loads no version of this store:
     * its partition is at or above that count (left by a repartition to fewer partitions,
     * {@code io.strata.spark.StrataRepartition}); false when the count is unknown (&lt;= 0).
     */
    boolean beyond(int partitions) {
      return partitions > 0 && partition >= partitions;
    }

    /** {@code <operator>/<partition>/<name>}, as manifests name it. */
    String id() {
      return operator + "/" + partition + "/" + name;
    }

    /** The store's location relative to the checkpoint. */
    String relativeLocation() {
      return "state/" + operator + "/" + partition + ("default".equals(name) ? "" : "/" + name);
    }

    /** True if the store holds at least one version object (or anything of Strata's shape). */
    boolean isStrata() {
      return objects.stream().anyMatch(o -> Reachability.kindOf(o.key())
          != Reachability.Kind.FOREIGN || o.key().startsWith(StoreLayout.RUNS));
    }

    /** The greatest version with a version object, or 0. */
    long newestVersion() {
      long n = 0;
      for (ObjectInfo o : objects) {
        n = Math.max(n, StoreLayout.versionOf(o.key()));
      }
      return n;
    }

    /** Version objects, in key order (so by version). */
    List<ObjectInfo> versionObjects() {
      return objects.stream().filter(o -> StoreLayout.versionOf(o.key()) >= 0)
          .sorted(Comparator.comparing(ObjectInfo::key)).toList();
    }

    long bytes() {
      return objects.stream().mapToLong(ObjectInfo::size).sum();
    }
  }

  /**
   * Spark's offset and commit logs: the batch ids listed, with their newest objects, and every
   * commit file ({@code commits/<batch>}, keys relative to the checkpoint), the oldest batch
   * either log still lists, and the oldest batch the commit log lists.
   */
  record SparkLogs(OptionalLong latestOffset, OptionalLong latestCommit,
      Optional<ObjectInfo> latestOffsetObject, Optional<ObjectInfo> latestCommitObject,
      boolean metadata, List<ObjectInfo> commitObjects, OptionalLong oldestBatch,
      OptionalLong oldestCommit) {
    /**
     * The state version a restart loads: the latest committed batch + 1 (the next batch loads
     * it); without a commit log the latest planned batch (a restart re-runs it, loading its own
     * number); -1 without either log.
     */
    long restartVersion() {
      if (latestCommit.isPresent()) {
        return latestCommit.getAsLong() + 1;
      }
      return latestOffset.isPresent() ? latestOffset.getAsLong() : -1;
    }

    /**
     * The retention to keep and check: at least {@code minBatchesToRetain}, and never less than
     * what reaches back to the oldest batch still in Spark's offset or commit log (Spark purges
     * its logs by the query's own {@code minBatchesToRetain}, so what it still lists, it can
     * still roll back to).
     */
    int retention(int minBatchesToRetain) {
      long n = restartVersion();
      if (n < 0 || oldestBatch.isEmpty()) {
        return minBatchesToRetain;
      }
      return (int) Math.min(Integer.MAX_VALUE, Math.max(minBatchesToRetain,
          n - oldestBatch.getAsLong()));
    }

    /**
     * The retention to verify: at most {@code minBatchesToRetain}, and no further back than the
     * oldest version a restart can still load, the oldest committed batch + 1 (older versions
     * the query's own maintenance may have collected by a smaller {@code minBatchesToRetain}
     * than the tool was given; and an {@code offsets/} file older than every commit, such as
     * the {@code offsets/N-1} a copy or savepoint of batch N keeps for Spark's restart check,
     * names no version a restart loads). Without a commit log, the oldest batch either log
     * lists.
     */
    int checkedRetention(int minBatchesToRetain) {
      long n = restartVersion();
      OptionalLong oldest = oldestCommit.isPresent() ? OptionalLong.of(
          oldestCommit.getAsLong() + 1) : oldestBatch;
      if (n < 0 || oldest.isEmpty()) {
        return minBatchesToRetain;
      }
      return (int) Math.max(0, Math.min(minBatchesToRetain, n - oldest.getAsLong()));
    }

    /** True if Spark wrote anything here (an offset or commit log, or its metadata file). */
    boolean any() {
      return metadata || latestOffset.isPresent() || latestCommit.isPresent();
    }

    /** "agree", "batch N planned, not committed", or what is wrong. */
    String agreement() {
      if (latestOffset.isEmpty() && latestCommit.isEmpty()) {
        return "no batch yet";
      }
      if (latestCommit.isEmpty()) {
        return "batch " + latestOffset.getAsLong() + " planned, none committed";
      }
      if (latestOffset.isEmpty()) {
        return "commit log without offsets (damaged checkpoint)";
      }
      long o = latestOffset.getAsLong();
      long c = latestCommit.getAsLong();
      if (o == c) {
        return "agree";
      }
      if (o == c + 1) {
        return "batch " + o + " planned, not committed (a restart re-runs it)";
      }
      return "disagree: offsets at " + o + ", commits at " + c + " (damaged checkpoint)";
    }
  }

  final List<Store> stores;
  final SparkLogs spark;
  /** Keys under {@code offsets/} and {@code commits/}, relative to the checkpoint. */
  private final List<String> sparkLogKeys;
  /** The first path segment of every key (for telling a wrong level in messages). */
  final Set<String> topLevel;
  final int objects;
  final long bytes;
  /** The writes of the recent batches, from the objects' times ({@link BatchCost}). */
  final Optional<BatchCost> cost;
  /**
   * The first path segments under which a query's checkpoint lies ({@code <dir>/offsets/<n>} or
   * {@code <dir>/commits/<n>}): a directory of several queries' checkpoints, as the flights demo
   * writes one run.
   */
  final Set<String> queriesBelow;

  private CheckpointScan(List<Store> stores, SparkLogs spark, List<String> sparkLogKeys,
      Set<String> topLevel, int objects, long bytes, Optional<BatchCost> cost,
      Set<String> queriesBelow) {
    this.stores = stores;
    this.spark = spark;
    this.sparkLogKeys = sparkLogKeys;
    this.topLevel = topLevel;
    this.objects = objects;
    this.bytes = bytes;
    this.cost = cost;
    this.queriesBelow = queriesBelow;
  }

  /** Splits {@code listing} (keys relative to the checkpoint root). */
  static CheckpointScan of(List<ObjectInfo> listing) {
    Map<String, List<ObjectInfo>> byStore = new TreeMap<>();
    Map<String, long[]> ids = new TreeMap<>();
    ObjectInfo lastOffset = null;
    ObjectInfo lastCommit = null;
    long offset = -1;
    long commit = -1;
    boolean metadata = false;
    List<ObjectInfo> commits = new ArrayList<>();
    List<String> logKeys = new ArrayList<>();
    long oldest = -1;
    long oldestCommit = -1;
    long bytes = 0;
    for (ObjectInfo o : listing) {
      bytes += o.size();
      String k = o.key();
      if (k.equals("metadata")) {
        metadata = true;
      }
      if (k.startsWith("offsets/") || k.startsWith("commits/")) {
        logKeys.add(k);
      }
      long b = batch(k, "offsets/");
      long c = batch(k, "commits/");
      for (long x : new long[] {b, c}) {
        if (x >= 0 && (oldest < 0 || x < oldest)) {
          oldest = x;
        }
      }
      if (b > offset) {
        offset = b;
        lastOffset = o;
      }
      b = batch(k, "commits/");
      if (b >= 0) {
        commits.add(o);
        oldestCommit = oldestCommit < 0 ? b : Math.min(oldestCommit, b);
      }
      if (b > commit) {
        commit = b;
        lastCommit = o;
      }
      Matcher m = STORE.matcher(k);
      if (!m.matches()) {
        continue;
      }
      long op = Long.parseLong(m.group(1));
      int part = Integer.parseInt(m.group(2));
      String rest = m.group(3);
      int slash = rest.indexOf('/');
      String first = slash < 0 ? null : rest.substring(0, slash);
      String name = "default";
      String relative = rest;
      if (first != null && !STRATA_DIRS.contains(first) && !first.equals("SSTs")) {
        name = first;
        relative = rest.substring(slash + 1);
      }
      String storeKey = String.format("%020d/%010d/%s", op, part, name);
      ids.put(storeKey, new long[] {op, part});
      byStore.computeIfAbsent(storeKey, x -> new ArrayList<>())
          .add(new ObjectInfo(relative, o.size(), o.lastModifiedMillis(), o.metadata()));
    }
    List<Store> stores = new ArrayList<>();
    byStore.forEach((key, objs) -> {
      long[] id = ids.get(key);
      String name = key.substring(key.lastIndexOf('/') + 1);
      stores.add(new Store(id[0], (int) id[1], name, List.copyOf(objs)));
    });
    SparkLogs logs = new SparkLogs(
        offset < 0 ? OptionalLong.empty() : OptionalLong.of(offset),
        commit < 0 ? OptionalLong.empty() : OptionalLong.of(commit),
        Optional.ofNullable(lastOffset), Optional.ofNullable(lastCommit), metadata,
        List.copyOf(commits), oldest < 0 ? OptionalLong.empty() : OptionalLong.of(oldest),
        oldestCommit < 0 ? OptionalLong.empty() : OptionalLong.of(oldestCommit));
    Set<String> top = new java.util.TreeSet<>();
    listing.forEach(o -> top.add(o.key().contains("/")
        ? o.key().substring(0, o.key().indexOf('/')) : o.key()));
    Set<String> below = new java.util.TreeSet<>();
    listing.forEach(o -> {
      Matcher q = QUERY_BELOW.matcher(o.key());
      if (q.matches()) {
        below.add(q.group(1));
      }
    });
    return new CheckpointScan(List.copyOf(stores), logs, List.copyOf(logKeys), Set.copyOf(top),
        listing.size(), bytes, BatchCost.of(listing),
        java.util.Collections.unmodifiableSet(below));
  }

  private static final Pattern STORE = Pattern.compile("^state/(\\d+)/(\\d+)/(.+)$");
  private static final Pattern QUERY_BELOW =
      Pattern.compile("^([^/]+)/(?:offsets|commits)/\\d+$");

  private static long batch(String key, String dir) {
    if (!key.startsWith(dir)) {
      return -1;
    }
    String name = key.substring(dir.length());
    return BATCH.matcher(name).matches() && name.length() < 19 ? Long.parseLong(name) : -1;
  }

  /**
   * Every key under Spark's {@code offsets/} and {@code commits/} (batch files, and a local file
   * system's {@code .<batch>.crc} checksum files), relative to the checkpoint.
   */
  List<String> sparkLogKeys() {
    return sparkLogKeys;
  }

  /**
   * True if a restart after committed batch {@code b} finds what it reads in Spark's logs:
   * {@code offsets/b} and {@code commits/b}, and for {@code b >= 1} {@code offsets/b-1}, which
   * Spark reads to check its offset log ({@code MicroBatchExecution
   * .validateOffsetLogAndGetPrevOffset}: "batch b-1 doesn't exist" otherwise).
   */
  boolean restartableAfter(long b) {
    return b >= 0 && sparkLogKeys.contains("offsets/" + b)
        && sparkLogKeys.contains("commits/" + b)
        && (b == 0 || sparkLogKeys.contains("offsets/" + (b - 1)));
  }

  /** The stores written by Strata. */
  List<Store> strataStores() {
    return stores.stream().filter(Store::isStrata).toList();
  }

  /**
   * A file of another state store provider, if a store holds one and no Strata object: the
   * provider's name and the file's key relative to the checkpoint.
   */
  Optional<String[]> foreignProvider() {
    for (Store s : stores) {
      if (s.isStrata()) {
        continue;
      }
      for (ObjectInfo o : s.objects()) {
        if (FOREIGN.matcher(o.key()).matches()) {
          String provider = o.key().endsWith(".delta") || o.key().endsWith(".snapshot")
              ? "Spark's HDFS-backed state store provider (HDFSBackedStateStoreProvider)"
              : "Spark's RocksDB state store provider (RocksDBStateStoreProvider)";
          return Optional.of(new String[] {provider, s.relativeLocation() + "/" + o.key()});
        }
      }
    }
    return Optional.empty();
  }
}
