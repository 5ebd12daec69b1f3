// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import io.strata.format.ManifestFormatException;
import io.strata.format.Reachability;
import io.strata.format.RunClaim;
import io.strata.format.StoreLayout;
import io.strata.objectstore.ObjectNotFoundException;
import io.strata.objectstore.ObjectStore;
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Decides what later query runs need from a store whose collecting instance belongs to an
 * earlier run (checkpoint format 1: a run claimed an epoch above the instance's). Such an
 * instance may be the live run (a zombie driver of the next run claimed late and died: waiting
 * for it would stop collection until the query restarts, issue 43's fault campaign) or a
 * zombie that goes on committing above a later run's rewind point (a later run's commit fences
 * only the attempts of the versions it committed). Both collect by their own retention, and
 * keep what a later run may need, whatever its version:
 *
 * <ul>
 *   <li>the version each later claim's load loads ({@link RunClaim#loadsVersion}: the rewind
 *       point, read before the later run's first commit), every generation listed;
 *   <li>what later runs committed over the earlier run: of every version with more than one
 *       generation, the newest if it was written no earlier than {@link
 *       Reachability#SETTLE_MARGIN_MILLIS} before the oldest later claim (the object store's
 *       clock: a run claims before it commits), and of every version below the instance's
 *       retention with one generation, that one if written then and its manifest's epoch is
 *       greater than the instance's (the later run committed into a generation the instance
 *       had freed), each with the newest generation of the version below;
 *   <li>the spill deltas of the version after each of those (a later run's batch in flight).
 * </ul>
 *
 * <p>Together with the manifests they name (they become roots, as a savepoint's holds are),
 * these are a fixed set per later claim, kept until a later run's round retires the claim.
 * Unknown: a claim whose body does not decode or lacks {@code loadsVersion} (written by a build
 * before 0.4), or a time not listed; then the round is skipped, as every round of a superseded
 * instance was before. Reads each later claim once (one GET, cached for the instance's life:
 * claims are immutable). Rounds of one store never overlap; the cache is safe for any thread.
 */
final class LaterRuns {
  /** What the later runs need: roots to keep, and versions whose spills stay. */
  record Needs(List<Reachability.Listed> roots, Set<Long> spillVersions) { }

  private final ObjectStore objects;
  /** Reads (and caches) the epoch of a single-generation version object's manifest. */
  private final VersionObjectReader reader;
  /** Claim key to its {@link RunClaim#loadsVersion}, -1 if unknown; claims are immutable. */
  private final Map<String, Long> loads = new ConcurrentHashMap<>();
  /**
   * Version object (key, size, last-modified) to its manifest's epoch, -1 if unreadable: a
   * format-1 key below the retention can be written again (a zombie attempt), so the time is
   * part of the identity.
   */
  private final Map<String, Long> epochs = new ConcurrentHashMap<>();

  /**
   * @param objects the store's object store (claims are read from its {@code runs/})
   * @param reader reads the manifests of single-generation version objects written after a
   *     later claim (their epoch), through its cache
   */
  LaterRuns(ObjectStore objects, VersionObjectReader reader) {
    this.objects = objects;
    this.reader = reader;
  }

  /**
   * What claims above {@code epoch} in {@code listing} need.
   *
   * @param listing the round's listing of the store's root
   * @param epoch the collecting instance's epoch, at least 1
   * @param floor the oldest version the collecting instance's retention keeps ({@code N - R})
   * @return the needs, or null if one is unknown (the round must not delete)
   * @throws IOException if reading a claim or a manifest fails for another reason than its
   *     absence or damage
   */
  Needs of(List<Reachability.Listed> listing, long epoch, long floor) throws IOException {
    long claimedAt = Long.MAX_VALUE;
    Set<Long> loaded = new HashSet<>();
    for (Reachability.Listed l : listing) {
      long e = StoreLayout.claimEpochOf(l.key());
      if (e <= epoch) {
        continue;
      }
      if (!l.ageKnown()) {
        return null;
      }
      claimedAt = Math.min(claimedAt, l.lastModifiedMillis());
      long v = loadsVersion(l.key());
      if (v < 0) {
        return null;
      }
      loaded.add(v);
    }
    Map<Long, Reachability.Listed> newest = new HashMap<>();
    Set<Long> regenerated = new HashSet<>();
    List<Reachability.Listed> roots = new ArrayList<>();
    for (Reachability.Listed l : listing) {
      long g = StoreLayout.generationOf(l.key());
      long v = StoreLayout.versionOf(l.key());
      if (v < 0) {
        continue;
      }
      if (loaded.contains(v)) {
        roots.add(l); // every generation or attempt of a version a later run loads
      }
      if (g < 0) {
        continue;
      }
      Reachability.Listed before = newest.putIfAbsent(v, l);
      if (before != null) {
        regenerated.add(v);
        if (StoreLayout.generationOf(before.key()) < g) {
          newest.put(v, l);
        }
      }
    }
    Set<Long> spills = new HashSet<>();
    loaded.forEach(v -> spills.add(v + 1));
    // A later run's commit is a version object whose manifest has a greater epoch. One that
    // re-committed a version the earlier run still lists has more than one generation; one
    // that committed a version whose earlier generation this instance had already collected
    // (below its floor, the later run's batch slower than the zombie's) took the freed first
    // generation: only its manifest tells (read once, usually cached: this instance's own
    // commits are). Versions at or above the floor are retained anyway.
    Set<Long> committedLater = new HashSet<>(regenerated);
    Set<String> listedIds = new HashSet<>();
    newest.values().forEach(l -> listedIds.add(idOf(l)));
    epochs.keySet().retainAll(listedIds); // only what is still listed: bounded by the listing
    for (Map.Entry<Long, Reachability.Listed> e : newest.entrySet()) {
      Reachability.Listed top = e.getValue();
      if (e.getKey() < floor && !regenerated.contains(e.getKey()) && (!top.ageKnown()
          || top.lastModifiedMillis() + Reachability.SETTLE_MARGIN_MILLIS >= claimedAt)
          && epochOf(e.getKey(), top) > epoch) {
        committedLater.add(e.getKey());
      }
    }
    for (long v : committedLater) {
      Reachability.Listed top = newest.get(v);
      if (regenerated.contains(v)) {
        if (!top.ageKnown()) {
          return null;
        }
        if (top.lastModifiedMillis() + Reachability.SETTLE_MARGIN_MILLIS < claimedAt) {
          continue; // re-committed before every later claim: not a later run's
        }
      }
      roots.add(top);
      spills.add(v + 1);
      Reachability.Listed below = newest.get(v - 1);
      if (below != null) {
        roots.add(below);
      }
    }
    Map<String, Reachability.Listed> distinct = new HashMap<>();
    roots.forEach(r -> distinct.put(r.key(), r));
    List<Reachability.Listed> out = new ArrayList<>(distinct.values());
    out.sort(Comparator.comparing(Reachability.Listed::key));
    return new Needs(out, spills);
  }

  /**
   * {@code plan} with {@code needs}' roots as roots whatever their version, as a savepoint's
   * holds are: they, every object their manifests name and the published snapshots they can use
   * stay (the settled time stays the retention's).
   */
  static Reachability.Plan keeping(Reachability.Plan plan, Needs needs) {
    List<Reachability.Listed> roots = new ArrayList<>(plan.roots());
    Set<String> held = new HashSet<>(plan.held());
    Set<String> rooted = new HashSet<>();
    roots.forEach(r -> rooted.add(r.key()));
    for (Reachability.Listed l : needs.roots()) {
      held.add(l.key());
      if (rooted.add(l.key())) {
        roots.add(l);
      }
    }
    roots.sort(Comparator.comparing(Reachability.Listed::key));
    return new Reachability.Plan(plan.newestVersion(), plan.oldestRetainedVersion(), roots,
        plan.settledBeforeMillis(), held);
  }

  /**
   * {@code protectedKeys} plus the listed spill deltas of {@code needs}' spill versions (only
   * those: the collecting instance's own orphans at other versions still go).
   */
  static Set<String> protecting(List<Reachability.Listed> listing, Needs needs,
      Set<String> protectedKeys) {
    Set<String> out = new HashSet<>(protectedKeys);
    for (Reachability.Listed l : listing) {
      if (needs.spillVersions().contains(StoreLayout.spillVersionOf(l.key()))) {
        out.add(l.key());
      }
    }
    return out;
  }

  /**
   * The epoch in the manifest of version object {@code l} of {@code version}: from the
   * manifest cache, else read once (one tail GET); -1 if it is gone or cannot be decoded (no
   * load can read it then: it is collected by the usual rules).
   *
   * @throws IOException if the object store fails
   */
  private long epochOf(long version, Reachability.Listed l) throws IOException {
    long cached = reader.cache().epoch(l.key(), l.size());
    if (cached >= 0) {
      return cached;
    }
    String id = idOf(l);
    Long known = epochs.get(id);
    if (known != null) {
      return known;
    }
    long e;
    try {
      e = reader.readAt(version, l.key(), null).epoch();
    } catch (StateLoadException failed) {
      if (failed.reason() == StateLoadException.Reason.STORAGE) {
        throw failed;
      }
      if (failed.reason() != StateLoadException.Reason.CORRUPT) {
        return -1; // gone since the listing: nothing to keep
      }
      e = -1;
    }
    epochs.put(id, e);
    return e;
  }

  private static String idOf(Reachability.Listed l) {
    return l.key() + "@" + l.size() + "@" + l.lastModifiedMillis();
  }

  /** The claim's {@link RunClaim#loadsVersion}; -1 if unknown, unreadable or gone. */
  private long loadsVersion(String key) throws IOException {
    Long known = loads.get(key);
    if (known != null) {
      return known;
    }
    long v;
    try (InputStream in = objects.get(key)) {
      v = RunClaim.decode(in.readAllBytes()).loadsVersion();
    } catch (ObjectNotFoundException gone) {
      return -1; // retired between the listing and now: the next round lists again
    } catch (ManifestFormatException e) {
      v = -1;
    }
    loads.put(key, v);
    return v;
  }
}
