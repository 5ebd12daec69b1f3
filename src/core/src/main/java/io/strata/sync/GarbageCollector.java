// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import io.strata.format.Manifest;
import io.strata.format.PublishedSnapshot;
import io.strata.format.Reachability;
import io.strata.format.StoreLayout;
import io.strata.metrics.GcStats;
import io.strata.objectstore.ObjectInfo;
import io.strata.objectstore.ObjectStore;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One store's garbage collection: one round lists the store's root once, decides the roots
 * ({@link Reachability#plan}), reads the manifests of the roots it has not cached (one tail GET
 * each, in parallel), applies {@link Reachability#garbage} and deletes the garbage with batched
 * DeleteObjects. Optionally aborts incomplete multipart uploads older than the grace period.
 *
 * <p>Nothing is deleted unless every root's manifest was read: a round that cannot read one
 * fails without deleting. A round with no candidate at all (nothing old enough, nothing below
 * the retention) reads no manifest. Knows nothing of Spark; {@link GcTrigger} decides when a
 * round is due, and the store which keys it protects.
 */
final class GarbageCollector {
  private static final Logger LOG = LoggerFactory.getLogger(GarbageCollector.class);
  /** Keys per LIST page and per DeleteObjects request on S3. */
  static final int S3_BATCH = 1000;
  /** Most manifests of version objects a round deletes that it reads (those not cached). */
  static final int GOING_READS = 64;

  private final StoreIdentity identity;
  private final ObjectStore objects;
  private final VersionObjectReader reader;
  private final ManifestCache cache;
  private final ExecutorService readers;
  private final GcSettings settings;
  private final LongSupplier ownEpoch;
  private volatile long supersededBy = -1;
  /**
   * This instance's newest version when a round first found {@link #supersededBy}'s claim. Past
   * it, the instance collects again, keeping what later runs need ({@link LaterRuns}): its run went on committing after the later claim, as the live run does
   * after a zombie run's late claim (and even its re-commit of a batch before it died). It does
   * not prove the later run dead: a later run's commit fences only the attempts of the versions
   * it committed, so an earlier run's instance (a zombie driver) goes on committing above a
   * later run's rewind point, and the later run's versions must stay.
   */
  private volatile long supersededAtVersion = -1;
  /**
   * {@link #supersededAtVersion} if the last round skipped because this instance had not yet
   * committed past it, else -1 ({@link #collectsAgainPast()}).
   */
  private volatile long lastRoundWaitedFor = -1;
  /** The {@link #supersededBy} for which a round last logged that it collects again. */
  private volatile long resumedFor = -1;
  private final LaterRuns laterRuns;
  private final PublishedSnapshots published;
  private final RunRetirement runs;
  /**
   * Files named by a version object or published snapshot an earlier round of this collector
   * deleted ({@link Reachability#garbage}'s retired keys); replaced whole by each round.
   */
  private volatile Set<String> retired = Set.of();
  /** Unreadable published snapshots already logged (rounds of one store never overlap). */
  private final Set<String> reported = java.util.concurrent.ConcurrentHashMap.newKeySet();

  /**
   * @param objects the store's object store (for the listing and the deletes)
   * @param reader reads the manifests of the roots (and owns the cache of what they name)
   * @param readers the pool the manifest reads run on (borrowed, not shut down here)
   * @param ownEpoch the caller's query-run epoch in checkpoint format 1, or -1 for none (then
   *     or while unknown, rounds do not look at run claims)
   * @param published reads the published snapshots a root can use (for the files they name)
   */
  GarbageCollector(StoreIdentity identity, ObjectStore objects, VersionObjectReader reader,
      ExecutorService readers, GcSettings settings, LongSupplier ownEpoch,
      PublishedSnapshots published) {
    this.published = published;
    this.identity = identity;
    this.objects = objects;
    this.reader = reader;
    this.cache = reader.cache();
    this.readers = readers;
    this.settings = settings;
    this.ownEpoch = ownEpoch;
    this.runs = new RunRetirement(identity, objects, java.time.Clock.systemUTC());
    this.laterRuns = new LaterRuns(objects, reader);
  }

  /** The store this collector works for (for messages). */
  StoreIdentity identity() {
    return identity;
  }

  /**
   * Runs one round.
   *
   * @param round this round's sequence number (for the stats)
   * @param knownNewestVersion the newest version the caller committed or loaded, or -1
   * @param protectedKeys keys never deleted by this round (the caller's pending base snapshot,
   *     in-flight spills, loaded manifest)
   * @param nowMillis the caller's wall-clock time, taken before the listing
   * @param abortUploads also abort incomplete multipart uploads older than the grace period
   * @return what the round did
   * @throws IOException if listing, reading a root's manifest or deleting fails (nothing is
   *     deleted when listing or reading fails; after a failed delete batch, earlier batches stay
   *     deleted)
   */
  GcStats collect(long round, long knownNewestVersion, Set<String> protectedKeys,
      long nowMillis, boolean abortUploads) throws IOException {
    return apply(decide(round, knownNewestVersion, protectedKeys, nowMillis), abortUploads);
  }

  /**
   * The version this instance must commit past before it collects again, if its last round
   * skipped for a later run's claim that had just appeared, else -1. The caller makes the next
   * round due at the next commit past it ({@link GcTrigger}), not a whole round interval later:
   * a round interval of waiting on top of the skip put 58 objects beyond the collection bound in
   * fault campaign run 6 (a zombie's claim at version 201, the next round at 232).
   */
  long collectsAgainPast() {
    return lastRoundWaitedFor;
  }

  /**
   * Decides one round without deleting anything: one LIST of the store's root, then (only if
   * something could be garbage) the roots' manifests and the listed published snapshots.
   *
   * @param round this round's sequence number (for the stats)
   * @param knownNewestVersion the newest version the caller committed or loaded, or -1
   * @param protectedKeys keys never deleted by this round
   * @param nowMillis the caller's wall-clock time, taken before the listing
   * @return the decision; {@link GcDecision#skippedForEpoch()} &gt; 0 when a later query run
   *     claimed the store and this instance (of an earlier run) leaves collecting to it
   * @throws IOException if listing or reading a root's manifest or a published snapshot fails
   */
  GcDecision decide(long round, long knownNewestVersion, Set<String> protectedKeys,
      long nowMillis) throws IOException {
    long start = System.nanoTime();
    List<ObjectInfo> infos = objects.list("");
    List<Reachability.Listed> listing = new ArrayList<>(infos.size());
    for (ObjectInfo o : infos) {
      listing.add(new Reachability.Listed(o.key(), o.size(), o.lastModifiedMillis()));
    }
    long listRequests = Math.max(1, (listing.size() + S3_BATCH - 1) / S3_BATCH);
    long epoch = ownEpoch.getAsLong();
    lastRoundWaitedFor = -1;
    long newestClaim = -1;
    for (Reachability.Listed l : listing) {
      newestClaim = Math.max(newestClaim, StoreLayout.claimEpochOf(l.key()));
    }
    LaterRuns.Needs later = null;
    if (epoch > 0 && newestClaim > epoch) {
      // A later query run claimed this store (only runs that write claim): this instance may
      // belong to a superseded run, whose idea of the newest version may be versions the later
      // run rewound past. Collecting is the later run's job, unless this instance's run has
      // committed since the claim appeared (a zombie run that claimed late and died: waiting for
      // it would stop collection until the query restarts, issue 43, fault campaign run 3). Even
      // then the later run may be alive below this instance's versions (a rewind, this instance
      // a zombie that goes on committing above it, unfenced there): the version its claim says
      // it loaded, what it committed, the versions it built them on and its in-flight spills
      // stay (LaterRuns).
      if (supersededBy != newestClaim) {
        supersededBy = newestClaim;
        supersededAtVersion = knownNewestVersion;
        LOG.info("{} garbage collection round {}: skipped; this instance's query run has "
            + "epoch {} and a later run claimed epoch {}, which collects instead (unless this "
            + "run commits past version {}: then this instance collects again, keeping what "
            + "later runs loaded and committed)", identity, round, epoch, newestClaim, knownNewestVersion);
      }
      boolean waits = knownNewestVersion <= supersededAtVersion;
      later = waits ? null
          : laterRuns.of(listing, epoch, knownNewestVersion - settings.versionsToRetain());
      if (waits) {
        lastRoundWaitedFor = supersededAtVersion;
      }
      if (later == null) {
        return new GcDecision(round, knownNewestVersion, listing, null, null, Set.of(),
            Set.of(), 0, listRequests, newestClaim, start, nowMillis, List.of());
      }
      if (resumedFor != newestClaim) {
        resumedFor = newestClaim;
        LOG.info("{} garbage collection round {}: collects again at version {} (past version "
            + "{}, where it saw the claim of epoch {}), keeping {} version objects later runs "
            + "loaded, committed or built on: {}", identity, round, knownNewestVersion,
            supersededAtVersion, newestClaim, later.roots().size(),
            later.roots().stream().map(Reachability.Listed::key).toList());
      }
    }
    Reachability.Plan plan = Reachability.plan(listing, knownNewestVersion,
        settings.versionsToRetain());
    if (later != null) {
      plan = LaterRuns.keeping(plan, later);
      protectedKeys = LaterRuns.protecting(listing, later, protectedKeys);
    }
    long grace = settings.gracePeriodMillis();

    // Without any root named, everything old would be garbage: if even that is nothing, no
    // manifest needs reading.
    Set<String> retiredNow = retired;
    Reachability.Verdict upperBound = Reachability.garbage(listing, plan, Set.of(),
        protectedKeys, retiredNow, nowMillis, grace);
    Reachability.Verdict verdict = upperBound;
    int reads = 0;
    Set<String> named = new HashSet<>();
    Set<String> usable = Set.of();
    List<String> unreadable = new ArrayList<>();
    if (!upperBound.garbage().isEmpty()) {
      List<PublishedSnapshot.TipIndex> tips = new ArrayList<>();
      reads = readNamedKeys(plan, named, tips);
      // A published snapshot a root can use stays; every file a listed one that stays names
      // stays too; the files only those this round deletes name go with them, after them.
      usable = new HashSet<>(Reachability.usablePublishedSnapshots(listing, tips));
      java.util.Map<String, Set<String>> publishedFiles = new java.util.HashMap<>();
      for (Reachability.Listed l : listing) {
        if (Reachability.kindOf(l.key()) != Reachability.Kind.PUBLISHED_SNAPSHOT) {
          continue;
        }
        try {
          publishedFiles.put(l.key(),
              Reachability.namedKeys(published.read(l.key(), l.size()), l.key()));
        } catch (StateLoadException e) {
          if (e.reason() == StateLoadException.Reason.CORRUPT) {
            // Undecodable: no load can use it (loads skip it) and it names nothing we can
            // read: it goes once older than the grace period, like any object nothing names,
            // and never stops the round.
            unreadable.add(l.key());
            usable.remove(l.key());
            reportUnreadable(l.key(), e);
            continue;
          }
          if (e.reason() != StateLoadException.Reason.MISSING_FILE || usable.contains(l.key())) {
            throw new IOException("Cannot collect garbage of " + identity + ": a published "
                + "snapshot cannot be read, so nothing is deleted this round: "
                + e.getMessage(), e);
          }
          // deleted by a concurrent round since the listing: it names nothing any more
        }
      }
      named.addAll(usable);
      Set<String> byRoots = Set.copyOf(named);
      publishedFiles.values().forEach(named::addAll);
      Set<String> keep = new HashSet<>(protectedKeys);
      if (!unreadable.isEmpty()) {
        // Which files an unreadable one names is unknown: while one is listed, every base
        // snapshot file stays (a load may have restored from it before it was damaged, and its
        // commit adopt its files). They go by the usual rules in a later round, once it is gone,
        // as the files of a readable published snapshot do.
        keep.addAll(Reachability.baseSnapshotFiles(listing));
      }
      verdict = Reachability.garbage(listing, plan, named, keep, retiredNow, nowMillis, grace);
      // What only the version objects and published snapshots this round deletes name goes
      // with them, after them (issue 43): whole files that nothing in flight can name.
      Set<String> going = new HashSet<>();
      verdict.garbage().forEach(l -> going.add(l.key()));
      Set<String> retiring = new HashSet<>(retiredNow);
      int protectedBefore = keep.size();
      reads += namesOfOldVersionObjects(listing, plan, going, retiring, keep);
      Set<String> kept = new HashSet<>(byRoots);
      for (java.util.Map.Entry<String, Set<String>> e : publishedFiles.entrySet()) {
        (going.contains(e.getKey()) ? retiring : kept).addAll(e.getValue());
      }
      if (retiring.size() > retiredNow.size() || keep.size() > protectedBefore) {
        named = kept;
        verdict = Reachability.garbage(listing, plan, named, keep, retiring, nowMillis, grace);
      }
    } else {
      // Nothing could be garbage, the unreadable published snapshots included: still count them
      // (from the cache of those already found; no GET).
      for (Reachability.Listed l : listing) {
        if (published.knownUnreadable(l.key())) {
          unreadable.add(l.key());
        }
      }
    }
    reported.retainAll(unreadable);
    unreadable.sort(null);
    return new GcDecision(round, knownNewestVersion, listing, plan, verdict, named, usable,
        reads, listRequests, -1, start, nowMillis, unreadable);
  }

  /**
   * Logs at WARN, once per key for as long as it stays listed, a published snapshot that cannot
   * be decoded.
   */
  private void reportUnreadable(String key, StateLoadException e) {
    if (reported.add(key)) {
      LOG.warn("{} garbage collection: published snapshot {} cannot be read, so no load can use "
          + "it (loads restore from an older one or the manifest's own chain); it is deleted "
          + "once older than the grace period ({} ms), and base snapshot files no readable "
          + "object names wait until it is gone: {}", identity, objects.describe(key),
          settings.gracePeriodMillis(), e.getMessage());
    }
  }

  /**
   * Deletes what {@code d} found to be garbage (batched DeleteObjects, version objects first)
   * and optionally aborts incomplete multipart uploads older than the grace period.
   *
   * @param d a decision of this collector's {@link #decide}
   * @return what the round did
   * @throws IOException if a delete fails (earlier batches stay deleted)
   */
  GcStats apply(GcDecision d, boolean abortUploads) throws IOException {
    if (d.skippedForEpoch() > 0) {
      return new GcStats(d.round(), d.knownNewestVersion(), -1, d.listing().size(), 0, 0,
          d.listRequests(), 0, 0, 0,
          TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - d.startNanos()));
    }
    Reachability.Plan plan = d.plan();
    Reachability.Verdict verdict = d.verdict();
    long listRequests = d.listRequests();
    int reads = d.manifestReads();
    long nowMillis = d.nowMillis();
    long grace = settings.gracePeriodMillis();
    List<String> keys = new ArrayList<>(verdict.garbage().size());
    verdict.garbage().forEach(l -> keys.add(l.key()));
    Set<String> nextRetired = retiredAfter(d, keys);
    long deleteRequests = (keys.size() + S3_BATCH - 1) / S3_BATCH;
    if (!keys.isEmpty()) {
      FaultPoints.pass(FaultPoints.GC_BEFORE_DELETE);
      try {
        objects.delete(keys);
        retired = nextRetired;
      } finally {
        cache.removeAll(keys);
        published.removeAll(keys);
      }
      FaultPoints.pass(FaultPoints.GC_AFTER_DELETE);
    }
    if (runsRetirable(d)) {
      deleteRequests += runs.retire(d.listing(), ownEpoch.getAsLong()) > 0 ? 1 : 0;
    }
    int aborted = 0;
    if (abortUploads) {
      aborted = objects.abortIncompleteUploads("", nowMillis - grace);
      listRequests++;
      deleteRequests += aborted;
    }
    long round = d.round();
    long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - d.startNanos());
    GcStats stats = new GcStats(round, plan.newestVersion(), plan.oldestRetainedVersion(),
        d.listing().size(), keys.size(), verdict.garbageBytes(), listRequests, reads,
        deleteRequests, aborted, ms, verdict.publishedSnapshots(),
        d.unreadablePublishedSnapshots().size());
    if (!keys.isEmpty() || aborted > 0) {
      LOG.info("{} garbage collection round {} at version {}: deleted {} objects ({} bytes), "
          + "aborted {} uploads; kept {} retained version objects (versions >= {}), {} named "
          + "({} older version objects), {} in-flight spills, {} protected, {} younger than the "
          + "grace period; {} of the deleted were published snapshots no retained version can "
          + "use; {} manifest reads, {} ms", identity, round, plan.newestVersion(),
          keys.size(), verdict.garbageBytes(), aborted, verdict.retainedVersionObjects(),
          plan.oldestRetainedVersion(), verdict.named(), verdict.pinnedOldVersionObjects(),
          verdict.inFlightSpills(), verdict.protectedByCaller(), verdict.young(),
          verdict.publishedSnapshots(), reads, ms);
    } else {
      LOG.debug("{} garbage collection round {} at version {}: nothing to delete ({} objects, "
          + "{} manifest reads, {} ms)", identity, round, plan.newestVersion(),
          d.listing().size(), reads, ms);
    }
    return stats;
  }

  /**
   * Adds to {@code retiring} every key the version objects below the retention name, those
   * this round deletes and those it keeps because a retained manifest names a delta inside them
   * alike (no load of a retained version reads their manifests): from the cache, else read (one
   * tail GET each, in parallel, at most {@link #GOING_READS} a round, then cached). A deleted
   * one beyond that is added to {@code keep} and goes in a later round, so that what it names is
   * never forgotten. A manifest that cannot be read names nothing known: its files wait for the
   * grace period.
   *
   * @param going the keys this round deletes so far
   * @return the number of manifests read
   * @throws IOException if interrupted
   */
  private int namesOfOldVersionObjects(List<Reachability.Listed> listing,
      Reachability.Plan plan, Set<String> going, Set<String> retiring, Set<String> keep)
      throws IOException {
    List<Future<Manifest>> futures = new ArrayList<>();
    List<Reachability.Listed> reading = new ArrayList<>();
    for (Reachability.Listed l : listing) {
      long version = StoreLayout.versionOf(l.key());
      if (version < 0 || version >= plan.oldestRetainedVersion()
          || plan.held().contains(l.key())
          || cache.addNamedKeys(l.key(), l.size(), retiring)) {
        continue;
      }
      if (futures.size() >= GOING_READS) {
        if (going.contains(l.key())) {
          keep.add(l.key());
        }
        continue;
      }
      String attempt = StoreLayout.attemptOf(l.key());
      reading.add(l);
      futures.add(readers.submit(() -> reader.readAt(version, l.key(), attempt)));
    }
    for (int i = 0; i < futures.size(); i++) {
      try {
        Manifest m = futures.get(i).get();
        cache.put(reading.get(i).key(), reading.get(i).size(), m);
        retiring.addAll(Reachability.namedKeys(m));
      } catch (java.util.concurrent.ExecutionException unreadable) {
        LOG.debug("{}: an old version object's manifest cannot be read; its files wait for the "
            + "grace period", identity, unreadable.getCause());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        futures.forEach(x -> x.cancel(true));
        throw new java.io.InterruptedIOException("Interrupted while reading the manifests of "
            + identity + "'s old versions for garbage collection");
      }
    }
    return futures.size();
  }

  /**
   * The retired keys after deleting {@code deleted}: those still listed and not deleted, plus
   * every key a deleted version object (if its manifest is cached) or published snapshot (if
   * cached, as every listed one is after {@link #decide}) named.
   */
  private Set<String> retiredAfter(GcDecision d, List<String> deleted) {
    Set<String> next = new HashSet<>();
    for (Reachability.Listed l : d.verdict().garbage()) {
      Reachability.Kind kind = Reachability.kindOf(l.key());
      if (kind == Reachability.Kind.VERSION_OBJECT) {
        cache.addNamedKeys(l.key(), l.size(), next);
      } else if (kind == Reachability.Kind.PUBLISHED_SNAPSHOT) {
        next.addAll(published.cachedNames(l.key()));
      }
    }
    Set<String> old = retired;
    for (Reachability.Listed l : d.listing()) {
      if (old.contains(l.key())) {
        next.add(l.key());
      }
    }
    deleted.forEach(next::remove);
    return Set.copyOf(next);
  }

  /**
   * True if the round may retire earlier runs' claims: it was not skipped, found some, and this
   * instance's newest version is at least every version listed. An earlier run with versions
   * above it may still be committing: the live run, when the instance with the newest claim is
   * a zombie run's that claimed late and re-committed a batch below the live run's versions (its
   * retirement would fence the live run's next instance of the store); or a zombie of an earlier
   * run above a rewind point, which a later commit fences anyway. The newest run retires them
   * once it has passed them.
   */
  private static boolean runsRetirable(GcDecision d) {
    int runKeys = 0;
    long listedNewest = -1;
    for (Reachability.Listed l : d.listing()) {
      if (l.key().startsWith(StoreLayout.RUNS)) {
        runKeys++;
      }
      listedNewest = Math.max(listedNewest, StoreLayout.versionOf(l.key()));
    }
    return runKeys > 2 && d.knownNewestVersion() >= listedNewest;
  }

  /**
   * Adds every key the roots' manifests name to {@code named} and their lineage tips to {@code
   * tips}, reading (in parallel) those not cached.
   *
   * @return the number of manifests read from the object store
   * @throws IOException if any root cannot be read
   */
  private int readNamedKeys(Reachability.Plan plan, Set<String> named,
      List<PublishedSnapshot.TipIndex> tips) throws IOException {
    List<Future<Manifest>> futures = new ArrayList<>();
    List<Reachability.Listed> reading = new ArrayList<>();
    for (Reachability.Listed root : plan.roots()) {
      PublishedSnapshot.TipIndex cached = cache.tips(root.key(), root.size());
      if (cached != null && cache.addNamedKeys(root.key(), root.size(), named)) {
        tips.add(cached);
        continue;
      }
      long version = StoreLayout.versionOf(root.key());
      String attempt = StoreLayout.attemptOf(root.key());
      reading.add(root);
      futures.add(readers.submit(() -> reader.readAt(version, root.key(), attempt)));
    }
    List<Manifest> read = Futures.awaitAll(futures, "Interrupted while reading the retained "
        + "manifests of " + identity + " for garbage collection",
        c -> new IOException("Cannot collect garbage of " + identity + ": a retained manifest "
            + "cannot be read, so nothing is deleted this round: " + c.getMessage(), c));
    for (int i = 0; i < read.size(); i++) {
      Manifest m = read.get(i);
      cache.put(reading.get(i).key(), reading.get(i).size(), m);
      named.addAll(Reachability.namedKeys(m));
      tips.add(PublishedSnapshot.TipIndex.of(m));
    }
    return futures.size();
  }
}
