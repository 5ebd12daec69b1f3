// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import io.strata.format.ManifestFormatException;
import io.strata.format.Reachability;
import io.strata.format.RetiredRuns;
import io.strata.format.RunClaim;
import io.strata.format.StoreLayout;
import io.strata.objectstore.ObjectAlreadyExistsException;
import io.strata.objectstore.ObjectBody;
import io.strata.objectstore.ObjectNotFoundException;
import io.strata.objectstore.ObjectStore;
import java.io.IOException;
import java.io.InputStream;
import java.time.Clock;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Collects the epoch claims of earlier query runs under {@code runs/} (checkpoint format 1),
 * which would otherwise grow by two objects per run forever. Only the run that holds the
 * newest claim retires: it writes (create-only) {@code runs/<e>.retired}, a {@link RetiredRuns}
 * list of every older run's id through epoch {@code e}, and only then deletes those runs' claims
 * and markers and any earlier list. What stays: the newest claim and its marker, and one list.
 * {@link RunEpochs} reads the list before it claims an epoch, so a retired run's executor never
 * claims a new one. Part of a garbage-collection round, never of a commit. Not thread-safe: a
 * store runs one round at a time.
 */
final class RunRetirement {
  private static final Logger LOG = LoggerFactory.getLogger(RunRetirement.class);

  private final StoreIdentity identity;
  private final ObjectStore objects;
  private final Clock clock;

  RunRetirement(StoreIdentity identity, ObjectStore objects, Clock clock) {
    this.identity = identity;
    this.objects = objects;
    this.clock = clock;
  }

  /**
   * Retires every run older than {@code ownEpoch} if {@code ownEpoch} holds the newest claim
   * in {@code listing}: at most one GET of the current list, one GET per older claim without a
   * marker, one create-only PUT of the new list and one DeleteObjects.
   *
   * @param listing the round's listing of the store's root
   * @param ownEpoch the collecting instance's epoch, or -1 (then nothing is done)
   * @return the number of objects deleted
   * @throws IOException if storage fails (nothing is deleted before the new list is written)
   */
  int retire(List<Reachability.Listed> listing, long ownEpoch) throws IOException {
    if (ownEpoch <= 0) {
      return 0;
    }
    TreeMap<Long, String> older = new TreeMap<>(); // epoch -> run id (null: not known yet)
    Map<Long, List<String>> keysOf = new TreeMap<>();
    TreeMap<Long, String> lists = new TreeMap<>();
    long newest = -1;
    for (Reachability.Listed l : listing) {
      String key = l.key();
      long c = StoreLayout.claimEpochOf(key);
      long m = StoreLayout.markerEpochOf(key);
      long r = StoreLayout.retiredRunsEpochOf(key);
      newest = Math.max(newest, Math.max(c, m));
      if (r > 0) {
        lists.put(r, key);
      }
      long e = Math.max(c, m);
      if (e > 0) {
        keysOf.computeIfAbsent(e, x -> new ArrayList<>()).add(key);
        if (m > 0) {
          older.put(e, StoreLayout.markerRunOf(key));
        } else {
          older.putIfAbsent(e, null);
        }
      }
    }
    if (newest != ownEpoch) {
      return 0; // only the newest run retires the others
    }
    older.remove(ownEpoch);
    keysOf.remove(ownEpoch);
    if (older.isEmpty() && lists.size() <= 1) {
      return 0;
    }
    RetiredRuns current = lists.isEmpty() ? null : read(lists.lastEntry().getValue());
    Set<String> ids = new HashSet<>(current == null ? List.of() : current.runIds());
    long through = current == null ? 0 : current.throughEpoch();
    for (Map.Entry<Long, String> e : older.entrySet()) {
      String run = e.getValue() != null ? e.getValue() : claimedBy(e.getKey());
      if (run == null) {
        keysOf.remove(e.getKey()); // unreadable claim: left alone (the tool shows it)
        continue;
      }
      ids.add(run);
      through = Math.max(through, e.getKey());
    }
    String listKey = current == null ? null : lists.lastEntry().getValue();
    if (current == null || !current.runIds().containsAll(ids)
        || current.throughEpoch() < through) {
      RetiredRuns next = new RetiredRuns(identity.id(), through, new ArrayList<>(ids),
          clock.millis());
      listKey = StoreLayout.retiredRuns(through);
      try {
        objects.putIfAbsent(listKey, ObjectBody.of(next.encode()));
      } catch (ObjectAlreadyExistsException raced) {
        // another instance of this run wrote it: delete only what it lists
        RetiredRuns theirs = read(listKey);
        if (theirs == null || !theirs.runIds().containsAll(ids)) {
          return 0;
        }
      }
    }
    List<String> delete = new ArrayList<>();
    keysOf.values().forEach(delete::addAll);
    for (Map.Entry<Long, String> l : lists.entrySet()) {
      if (!l.getValue().equals(listKey)) {
        delete.add(l.getValue());
      }
    }
    if (!delete.isEmpty()) {
      objects.delete(delete);
      LOG.info("{}: retired {} earlier query runs' epoch claims ({} objects deleted); their "
          + "run ids are in {}", identity, keysOf.size(), delete.size(),
          objects.describe(listKey));
    }
    return delete.size();
  }

  /**
   * The retired runs listed in {@code listing}'s newest list, read with one GET, or empty if
   * there is none.
   *
   * @throws IOException if storage fails or the list cannot be read
   */
  static Optional<RetiredRuns> newestList(ObjectStore objects, StoreIdentity identity,
      List<String> listedKeys) throws IOException {
    String newest = null;
    long epoch = -1;
    for (String key : listedKeys) {
      long e = StoreLayout.retiredRunsEpochOf(key);
      if (e > epoch) {
        epoch = e;
        newest = key;
      }
    }
    return newest == null ? Optional.empty()
        : Optional.ofNullable(new RunRetirement(identity, objects, Clock.systemUTC())
            .read(newest));
  }

  /** The list at {@code key}, or null if it vanished. */
  private RetiredRuns read(String key) throws IOException {
    try (InputStream in = objects.get(key)) {
      return RetiredRuns.decode(in.readAllBytes());
    } catch (ObjectNotFoundException e) {
      return null;
    } catch (ManifestFormatException e) {
      throw new IOException("Cannot read the retired query runs " + objects.describe(key)
          + " of " + identity + ": " + e.getMessage(), e);
    }
  }

  /** The run id in the claim of {@code epoch}, or null if it vanished or is unreadable. */
  private String claimedBy(long epoch) throws IOException {
    String key = StoreLayout.runClaim(epoch);
    try (InputStream in = objects.get(key)) {
      return RunClaim.decode(in.readAllBytes()).runId();
    } catch (ObjectNotFoundException | ManifestFormatException e) {
      return null;
    }
  }
}
