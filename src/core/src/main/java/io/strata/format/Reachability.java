// SPDX-License-Identifier: Apache-2.0
package io.strata.format;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * The garbage-collection rule as pure code: given one listing of a store's objects and the
 * manifests of the versions it retains, which objects are garbage. No I/O; the caller lists,
 * reads the manifests of {@link Plan#roots()} and deletes what {@link #garbage} returns
 * (docs/format.md, "Retention and garbage collection").
 *
 * <p>The rule, for a store whose newest version is {@code N} and that retains {@code R} versions
 * (Spark's {@code minBatchesToRetain}):
 *
 * <ol>
 *   <li>Only keys of Strata's own shapes are ever garbage: version objects ({@code v/...svo}),
 *       spill deltas ({@code spill/...sst}), base-snapshot SSTs ({@code sst/<32 hex>.sst}) and
 *       packs ({@code snap/...pack}). Any other key under the store's root is left alone.
 *   <li>Every version object of a version in {@code [N - R, N]}, all attempts, is retained:
 *       these are the <em>roots</em>. That is Spark's own rule: {@code
 *       HDFSBackedStateStoreProvider.cleanup} (Spark 4.1) computes {@code earliestVersionToRetain
 *       = files.last.version - storeConf.minVersionsToRetain} and deletes only files older than
 *       what that version needs, so version {@code N - R} stays loadable: {@code R} versions
 *       before the newest, {@code R + 1} in all.
 *   <li>Every object a root's manifest names (base files and deltas, by key) is retained, however
 *       old its version.
 *   <li>A spill delta of a version {@code >= N} is retained: it belongs to a batch that may still
 *       be running (its commit has not happened yet, or is the newest).
 *   <li>A published snapshot ({@code b/...bsm}) that a root can use ({@link
 *       #usablePublishedSnapshots}: its version lies after the root's base and not after the
 *       root, and the root's lineage tip there equals the snapshot's) is retained. Every file
 *       that any listed published snapshot names is retained (the caller adds these keys to the
 *       named ones), usable or not: a published snapshot no root can use is garbage once older
 *       than the grace period, and the files it named become unnamed only once it is gone, so
 *       they go in a later round than the object naming them (a load that listed it finds its
 *       files, or falls back to its manifest's own chain). A published snapshot that cannot be
 *       decoded is usable by no load and names nothing that can be read: the caller leaves it
 *       out of both, whatever its key says, so it is garbage once older than the grace period
 *       and never keeps a round from deciding; while one is listed, the caller keeps every
 *       base-snapshot file ({@link #baseSnapshotFiles}: it might name any), so those it named
 *       go in a later round, once it is gone, like those of a readable one.
 *   <li>A version object a savepoint holds ({@code holds/<savepoint>/<key>.hold}, {@link
 *       StoreLayout#hold}) is a root too, however old, and is itself retained (a version without
 *       writes has no delta its manifest would name); hold objects are never garbage (they are
 *       {@link Kind#FOREIGN} here: the tool that wrote them deletes them).
 *   <li>Keys the caller protects (its own pending base snapshot, its in-flight spills) are
 *       retained.
 *   <li>Anything else is garbage once it is at least the grace period old by its last-modified
 *       time; younger objects are kept (an in-flight commit or snapshot may be about to name
 *       them). Two kinds of unreferenced object are garbage sooner, because nothing in flight
 *       can be about to name them: a version object below the retention, a spill delta below
 *       {@code N} or a published snapshot no root can use that was written before every root
 *       ({@link Plan#settledBeforeMillis()}, by the object store's own clock, with {@link
 *       #SETTLE_MARGIN_MILLIS} for whole-second times); and a <em>retired</em> file, one the
 *       caller saw named by a published snapshot or version object an earlier round deleted
 *       (whole when it was named, and never written again: keys are unique), unless it is a
 *       published snapshot (format 2: old manifests name files inside it; it goes by its own
 *       rule above). An object whose
 *       last-modified time is unknown ({@code <= 0}: a server that returned none) is never old
 *       enough, and never settled. Age only ever protects; it never makes a named object
 *       garbage.
 * </ol>
 *
 * {@code N} is the greatest version in the listing or the one the caller knows, whichever is
 * greater, so an instance that is behind the store's real owner computes the same roots as the
 * owner and never deletes what the owner's newer versions need.
 */
public final class Reachability {

  /**
   * How much earlier than every root an object's last-modified time must be for it to count as
   * written before them, ms: S3 gives whole seconds.
   */
  public static final long SETTLE_MARGIN_MILLIS = 1_000;

  private Reachability() { }

  /** What a key is, by its shape ({@link StoreLayout}). */
  public enum Kind {
    /**
     * {@code v/<version>.svo}, {@code v/<version>/g<generation>.svo} (format 1) or {@code
     * v/<version>/<attempt>.svo} (format 2).
     */
    VERSION_OBJECT,
    /** {@code spill/<version>-<attempt>-<n>.sst}. */
    SPILL,
    /** {@code sst/<32 hex>.sst}. */
    SNAPSHOT_SST,
    /** {@code snap/<version>-<attempt>-<32 hex>.pack}. */
    SNAPSHOT_PACK,
    /** {@code b/<version>-<tip>-<32 hex>.bsm}: a published snapshot ({@link PublishedSnapshot}). */
    PUBLISHED_SNAPSHOT,
    /** Anything else: never touched by garbage collection. */
    FOREIGN
  }

  /**
   * One listed object.
   *
   * @param key key relative to the store's root
   * @param size size in bytes
   * @param lastModifiedMillis the object store's last-modified time, epoch ms (only ever used to
   *     keep young objects); {@code <= 0} if unknown, which counts as too young to delete
   */
  public record Listed(String key, long size, long lastModifiedMillis) {
    /** Checks the key. */
    public Listed {
      Objects.requireNonNull(key, "key");
    }

    /** True if the object store gave a last-modified time ({@code > 0}, after the epoch). */
    public boolean ageKnown() {
      return lastModifiedMillis > 0;
    }
  }

  /**
   * The retention decision of one round, made from the listing alone.
   *
   * @param newestVersion the newest version: the greatest in the listing or known to the caller,
   *     -1 if none
   * @param oldestRetainedVersion the oldest retained version, {@code newestVersion - R} (may be
   *     &lt;= 0 when the store has at most R versions)
   * @param roots the version objects of retained versions (every attempt), in key order; the
   *     caller reads their manifests
   * @param settledBeforeMillis the object store's last-modified time of the oldest root of the
   *     retention (held ones aside), epoch ms: an unreferenced version object, spill or
   *     published snapshot written a {@link #SETTLE_MARGIN_MILLIS} or more before it predates
   *     every retained version; -1 when there is no root or a root's time is unknown (then
   *     only the grace period applies)
   * @param held keys of the listed version objects savepoints hold (also in {@code roots})
   */
  public record Plan(long newestVersion, long oldestRetainedVersion, List<Listed> roots,
      long settledBeforeMillis, Set<String> held) {
    public Plan {
      roots = List.copyOf(roots);
      held = Set.copyOf(held);
    }

    /** A plan without holds. */
    public Plan(long newestVersion, long oldestRetainedVersion, List<Listed> roots,
        long settledBeforeMillis) {
      this(newestVersion, oldestRetainedVersion, roots, settledBeforeMillis, Set.of());
    }

    /** A plan without a settled time (only the grace period applies) or holds. */
    public Plan(long newestVersion, long oldestRetainedVersion, List<Listed> roots) {
      this(newestVersion, oldestRetainedVersion, roots, -1);
    }
  }

  /**
   * The outcome of one round.
   *
   * @param garbage objects to delete: version objects first (so a failure part-way never leaves
   *     a version object whose files are gone but itself remains, among old versions), then the
   *     rest, each group in key order
   * @param retainedVersionObjects version objects of retained versions (the roots)
   * @param named objects kept because a root's manifest names them
   * @param pinnedOldVersionObjects of {@code named}, version objects of versions older than the
   *     retention, kept because a retained manifest names a delta inside them (an SST RocksDB
   *     has not compacted away, reused by a base snapshot)
   * @param inFlightSpills spill deltas of a version &gt;= the newest, kept
   * @param protectedByCaller objects kept because the caller protected them
   * @param young unreferenced objects kept because they are younger than the grace period
   * @param foreign keys of other shapes, never touched
   * @param publishedSnapshots of {@code garbage}, the published snapshots no root can use
   */
  public record Verdict(List<Listed> garbage, int retainedVersionObjects, int named,
      int pinnedOldVersionObjects, int inFlightSpills, int protectedByCaller, int young,
      int foreign, int publishedSnapshots) {
    public Verdict {
      garbage = List.copyOf(garbage);
    }

    /** Total bytes of {@link #garbage()}. */
    public long garbageBytes() {
      long sum = 0;
      for (Listed l : garbage) {
        sum += l.size();
      }
      return sum;
    }
  }

  /** The kind of {@code key} by its shape. */
  public static Kind kindOf(String key) {
    if (StoreLayout.versionOf(key) >= 0) {
      return Kind.VERSION_OBJECT;
    }
    if (StoreLayout.spillVersionOf(key) >= 0) {
      return Kind.SPILL;
    }
    if (StoreLayout.isSnapshotSst(key)) {
      return Kind.SNAPSHOT_SST;
    }
    if (StoreLayout.snapshotPackVersionOf(key) >= 0) {
      return Kind.SNAPSHOT_PACK;
    }
    if (StoreLayout.publishedSnapshotVersionOf(key) >= 0) {
      return Kind.PUBLISHED_SNAPSHOT;
    }
    return Kind.FOREIGN;
  }

  /**
   * Decides the newest version, the retention floor and the roots from one listing. The roots
   * are the version objects of the retained versions that a load can read: every format-2
   * attempt, and of checkpoint format 1 only the object of the greatest query-run epoch of each
   * version ({@link #superseded}). A superseded object of a retained version is itself kept
   * ({@link #garbage}), but what only its manifest names is not.
   *
   * @param listing every object under the store's root (one LIST)
   * @param knownNewestVersion the newest version the caller itself committed or loaded: N when
   *     it is &gt;= 0; -1 (a caller with no version, such as a tool) takes N from the listing
   * @param versionsToRetain R (&gt;= 1; Spark's {@code spark.sql.streaming.minBatchesToRetain}):
   *     versions {@code [N - R, N]} stay loadable, as with Spark's own providers
   * @throws IllegalArgumentException if {@code versionsToRetain < 1}
   */
  public static Plan plan(List<Listed> listing, long knownNewestVersion, int versionsToRetain) {
    if (versionsToRetain < 1) {
      throw new IllegalArgumentException("versionsToRetain must be >= 1, was "
          + versionsToRetain);
    }
    // The caller's own version, when it has one: versions listed above it are either another
    // instance's of the same run that got ahead (a lower N only keeps more) or an earlier query
    // run's left above a rewind point (docs/format.md, "Query runs, epochs and generations"),
    // which must not lift the retention window over the versions the current run needs.
    long newest = knownNewestVersion;
    if (newest < 0) {
      for (Listed l : listing) {
        newest = Math.max(newest, StoreLayout.versionOf(l.key()));
      }
    }
    // Spark 4.1, HDFSBackedStateStoreProvider.cleanup():
    //   val earliestVersionToRetain = files.last.version - storeConf.minVersionsToRetain
    //   ... filesToDelete = files.filter(_.version < earliestFileToRetain.version)
    // where earliestFileToRetain is the first file version earliestVersionToRetain needs: the
    // version N - R stays loadable. (RocksDBFileManager.deleteOldVersions keeps from the
    // newest snapshot <= maxSnapshotVersion - R + 1, which depends on where its snapshots fall:
    // at least R versions, usually more.) Strata keeps the HDFS provider's fixed set: the
    // floor is N - R, not N - R + 1.
    long floor = newest - versionsToRetain;
    Set<String> superseded = superseded(listing);
    List<Listed> roots = new ArrayList<>();
    for (Listed l : listing) {
      long v = StoreLayout.versionOf(l.key());
      if (v >= 0 && v >= floor && !superseded.contains(l.key())) {
        roots.add(l);
      }
    }
    long settled = roots.isEmpty() ? -1 : Long.MAX_VALUE;
    for (Listed r : roots) {
      settled = r.ageKnown() ? Math.min(settled, r.lastModifiedMillis()) : -1;
      if (settled < 0) {
        break;
      }
    }
    // Savepoints' holds: their version objects are roots whatever their version (the settled
    // time stays the retention's: what a hold keeps was written before the hold, not in flight).
    Set<String> holds = new HashSet<>();
    for (Listed l : listing) {
      String held = StoreLayout.heldVersionObjectOf(l.key());
      if (held != null) {
        holds.add(held);
      }
    }
    Set<String> held = new HashSet<>();
    Set<String> rooted = new HashSet<>();
    roots.forEach(r -> rooted.add(r.key()));
    for (Listed l : listing) {
      if (holds.contains(l.key())) {
        held.add(l.key());
        if (rooted.add(l.key())) {
          roots.add(l);
        }
      }
    }
    roots.sort(Comparator.comparing(Listed::key));
    return new Plan(newest, floor, roots, settled, held);
  }

  /**
   * The checkpoint-format-1 version objects in {@code listing} that a later query run's object of
   * the same version supersedes: every {@code v/<version>/g<generation>.svo} (and layout-1
   * {@code v/<version>.svo}, generation 0) with a greater generation listed for its version. No
   * load reads them.
   */
  public static Set<String> superseded(List<Listed> listing) {
    java.util.Map<Long, Long> newest = new java.util.HashMap<>();
    for (Listed l : listing) {
      long e = StoreLayout.generationOf(l.key());
      if (e >= 0) {
        newest.merge(StoreLayout.versionOf(l.key()), e, Math::max);
      }
    }
    Set<String> out = new HashSet<>();
    for (Listed l : listing) {
      long e = StoreLayout.generationOf(l.key());
      if (e >= 0 && e < newest.get(StoreLayout.versionOf(l.key()))) {
        out.add(l.key());
      }
    }
    return out;
  }

  /**
   * Applies the rule (see the class comment).
   *
   * @param listing the same listing {@code plan} was made from
   * @param plan the plan of this round
   * @param named every key the manifests of {@code plan.roots()} name ({@link #namedKeys})
   * @param protectedKeys keys the caller keeps regardless (its pending base snapshot, its
   *     in-flight spills)
   * @param nowMillis the caller's wall-clock time, epoch ms, taken before the listing
   * @param graceMillis the grace period, ms (&gt;= 0): an unreferenced object younger than this
   *     is kept
   */
  public static Verdict garbage(List<Listed> listing, Plan plan, Set<String> named,
      Set<String> protectedKeys, long nowMillis, long graceMillis) {
    return garbage(listing, plan, named, protectedKeys, Set.of(), nowMillis, graceMillis);
  }

  /**
   * Applies the rule (see the class comment), with retired files.
   *
   * @param listing the same listing {@code plan} was made from
   * @param plan the plan of this round
   * @param named every key the manifests of {@code plan.roots()} name ({@link #namedKeys})
   * @param protectedKeys keys the caller keeps regardless (its pending base snapshot, its
   *     in-flight spills)
   * @param retired keys the caller saw named by an object an earlier round deleted: garbage
   *     whatever their age once nothing else names or protects them
   * @param nowMillis the caller's wall-clock time, epoch ms, taken before the listing
   * @param graceMillis the grace period, ms (&gt;= 0): an unreferenced object younger than this
   *     is kept, unless settled or retired
   */
  public static Verdict garbage(List<Listed> listing, Plan plan, Set<String> named,
      Set<String> protectedKeys, Set<String> retired, long nowMillis, long graceMillis) {
    if (graceMillis < 0) {
      throw new IllegalArgumentException("graceMillis must be >= 0, was " + graceMillis);
    }
    List<Listed> versionObjects = new ArrayList<>();
    List<Listed> published = new ArrayList<>();
    List<Listed> others = new ArrayList<>();
    int retained = 0;
    int keptNamed = 0;
    int pinned = 0;
    int inFlight = 0;
    int keptProtected = 0;
    int young = 0;
    int foreign = 0;
    for (Listed l : listing) {
      Kind kind = kindOf(l.key());
      if (kind == Kind.FOREIGN) {
        foreign++;
        continue;
      }
      // Every version object of a retained version stays, a superseded one too (not a root:
      // the files only it names are garbage): its generation must not become free while Spark
      // may still run an attempt of that version, so that a zombie's commit always finds it
      // taken and is reported lost (docs/format.md, "Query runs, epochs and generations").
      if (kind == Kind.VERSION_OBJECT
          && (StoreLayout.versionOf(l.key()) >= plan.oldestRetainedVersion()
              || plan.held().contains(l.key()))) {
        retained++;
        continue;
      }
      if (kind == Kind.SPILL && StoreLayout.spillVersionOf(l.key()) >= plan.newestVersion()) {
        inFlight++;
        continue;
      }
      if (named.contains(l.key())) {
        keptNamed++;
        if (kind == Kind.VERSION_OBJECT) {
          pinned++;
        }
        continue;
      }
      if (protectedKeys.contains(l.key())) {
        keptProtected++;
        continue;
      }
      // A published snapshot is never retired (format 2: old manifests name files inside it):
      // it goes by its own rule, unusable and old or settled, decided before any retiring.
      boolean isRetired = retired.contains(l.key()) && kind != Kind.PUBLISHED_SNAPSHOT;
      if (!settled(l, kind, plan) && !isRetired
          && (!l.ageKnown() || nowMillis - l.lastModifiedMillis() < graceMillis)) {
        young++;
        continue;
      }
      (kind == Kind.VERSION_OBJECT ? versionObjects
          : kind == Kind.PUBLISHED_SNAPSHOT ? published : others).add(l);
    }
    // The generations of a format-1 version go together or not at all: were a lower one freed
    // while a higher one stays, a later run's re-commit would take the freed slot below it and
    // never be read (and were a higher one freed alone, loads would fall back to the lower).
    Set<Long> keptVersions = new HashSet<>();
    Set<String> candidates = new HashSet<>();
    versionObjects.forEach(l -> candidates.add(l.key()));
    for (Listed l : listing) {
      if (StoreLayout.generationOf(l.key()) >= 0 && !candidates.contains(l.key())) {
        keptVersions.add(StoreLayout.versionOf(l.key()));
      }
    }
    int withKeptGeneration = 0;
    for (java.util.Iterator<Listed> it = versionObjects.iterator(); it.hasNext(); ) {
      Listed l = it.next();
      if (StoreLayout.generationOf(l.key()) >= 0
          && keptVersions.contains(StoreLayout.versionOf(l.key()))) {
        it.remove();
        withKeptGeneration++;
      }
    }
    pinned += withKeptGeneration;
    versionObjects.sort(Comparator.comparing(Listed::key));
    published.sort(Comparator.comparing(Listed::key));
    others.sort(Comparator.comparing(Listed::key));
    List<Listed> garbage = new ArrayList<>(versionObjects);
    garbage.addAll(published);
    garbage.addAll(others);
    return new Verdict(garbage, retained, keptNamed, pinned, inFlight, keptProtected, young,
        foreign, published.size());
  }

  /**
   * True if unreferenced {@code l} is a version object, spill delta or published snapshot
   * written before every root: no commit or snapshot in flight can be about to name it.
   */
  private static boolean settled(Listed l, Kind kind, Plan plan) {
    return plan.settledBeforeMillis() > 0 && l.ageKnown()
        && (kind == Kind.VERSION_OBJECT || kind == Kind.SPILL
            || kind == Kind.PUBLISHED_SNAPSHOT)
        && l.lastModifiedMillis() + SETTLE_MARGIN_MILLIS <= plan.settledBeforeMillis();
  }

  /**
   * The published snapshots in {@code listing} that a root can use: a key {@code
   * b/<s>-<tip>-<uuid>.bsm} is usable if some root's {@link PublishedSnapshot.TipIndex} has the
   * tip hash {@code tip} at version {@code s} (decided from the key alone; a hash collision only
   * keeps more). The caller keeps these and every file they name.
   *
   * @param listing the round's listing
   * @param roots the lineage tips of every root's manifest
   */
  public static Set<String> usablePublishedSnapshots(List<Listed> listing,
      java.util.Collection<PublishedSnapshot.TipIndex> roots) {
    Set<String> out = new HashSet<>();
    for (Listed l : listing) {
      long s = StoreLayout.publishedSnapshotVersionOf(l.key());
      if (s < 0) {
        continue;
      }
      long tip = StoreLayout.publishedSnapshotTipOf(l.key());
      for (PublishedSnapshot.TipIndex root : roots) {
        java.util.OptionalLong h = root.hashAt(s);
        if (h.isPresent() && h.getAsLong() == tip) {
          out.add(l.key());
          break;
        }
      }
    }
    return out;
  }

  /**
   * The base-snapshot files ({@link Kind#SNAPSHOT_SST}, {@link Kind#SNAPSHOT_PACK}) in {@code
   * listing}: what a published snapshot that cannot be decoded might name. The caller keeps them
   * while such an object is listed.
   */
  public static Set<String> baseSnapshotFiles(List<Listed> listing) {
    Set<String> keys = new HashSet<>();
    for (Listed l : listing) {
      Kind k = kindOf(l.key());
      if (k == Kind.SNAPSHOT_SST || k == Kind.SNAPSHOT_PACK) {
        keys.add(l.key());
      }
    }
    return keys;
  }

  /**
   * Every object key published snapshot {@code p}, stored as {@code ownKey}, names besides its
   * own: the objects holding its files that are not inline (format 2). A published snapshot never
   * keeps itself.
   */
  public static Set<String> namedKeys(PublishedSnapshot p, String ownKey) {
    Set<String> keys = new HashSet<>();
    p.files().forEach(f -> keys.add(f.file().key()));
    keys.remove(ownKey);
    return keys;
  }

  /** Every object key {@code m} names: its base snapshot's files and its deltas. */
  public static Set<String> namedKeys(Manifest m) {
    Set<String> keys = new HashSet<>();
    m.base().ifPresent(b -> b.files().forEach(f -> keys.add(f.file().key())));
    for (Delta d : m.deltas()) {
      keys.add(d.file().key());
    }
    return keys;
  }
}
