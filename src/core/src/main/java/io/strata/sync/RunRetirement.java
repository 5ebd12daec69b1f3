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
import java.util.Set;
import java.util.TreeMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Collects the epoch claims of earlier query runs under {@code runs/} (checkpoint format 1),
 * which would otherwise grow by two objects per run forever. Only the run that holds the
 * newest claim retires, in two phases: it writes (create-only) {@code runs/<e>.retired}, a
 * {@link RetiredRuns} list of every older run's id through epoch {@code e} (the union of the
 * lists it sees and the runs it retires), and a later round, whose listing shows a list naming
 * a run, deletes that run's claim and marker, and any list the newest listed one covers. So a
 * reader whose listing lags (a store whose listings trail its writes) always sees a run's marker
 * or a list naming the run, and no run id is ever dropped from the lists. What stays: the newest
 * run's claim and marker, the previous run's until the next round, and one or two lists.
 * {@link RunEpochs} reads the lists before it claims an epoch, so a retired run's executor never
 * claims a new one. Part of a garbage-collection round, never of a commit. Not thread-safe: a
 * store runs one round at a time.
 */
final class RunRetirement {
  private static final Logger LOG = LoggerFactory.getLogger(RunRetirement.class);

  private final StoreIdentity identity;
  private final ObjectStore objects;
  private final Clock clock;
  private final Set<String> warned = new HashSet<>();

  RunRetirement(StoreIdentity identity, ObjectStore objects, Clock clock) {
    this.identity = identity;
    this.objects = objects;
    this.clock = clock;
  }

  /**
   * Retires every run older than {@code ownEpoch} if {@code ownEpoch} holds the newest claim
   * in {@code listing}, in two phases so that a reader whose listing lags never misses both a
   * run's marker and the list naming it: a run not yet in a listed list is recorded in a new
   * list (create-only PUT, the union of every listed list and those runs), and only a later
   * round, whose listing shows a list naming it, deletes its claim and marker. A listed list is
   * deleted only when the newest listed one holds every run it holds. Costs at most one GET per
   * listed list (usually one), one per older claim without a marker, one PUT and one
   * DeleteObjects. While a listed list cannot be read, nothing is retired (a WARN names it).
   *
   * @param listing the round's listing of the store's root
   * @param ownEpoch the collecting instance's epoch, or -1 (then nothing is done)
   * @return the number of objects deleted
   * @throws IOException if storage fails (nothing is deleted before the list naming it is
   *     listed)
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
      if (r > 0) {
        lists.put(r, key);
      }
      long e = Math.max(c, m);
      if (e > 0) {
        newest = Math.max(newest, e);
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
    Map<String, RetiredRuns> read = new java.util.LinkedHashMap<>();
    Set<String> listed = new HashSet<>();
    long through = 0;
    for (String key : lists.values()) {
      RetiredRuns r;
      try {
        r = read(key);
      } catch (IOException unreadable) {
        warnOnce(key, unreadable);
        return 0;
      }
      if (r != null) {
        read.put(key, r);
        listed.addAll(r.runIds());
        through = Math.max(through, r.throughEpoch());
      }
    }
    List<String> delete = new ArrayList<>();
    Set<String> toRecord = new HashSet<>();
    long recordThrough = through;
    for (Map.Entry<Long, String> e : older.entrySet()) {
      String run = e.getValue() != null ? e.getValue() : claimedBy(e.getKey());
      if (run == null) {
        continue; // unreadable claim: left alone (the tool shows it)
      }
      if (listed.contains(run)) {
        delete.addAll(keysOf.get(e.getKey())); // a listed list names it: phase two
      } else {
        toRecord.add(run);
        recordThrough = Math.max(recordThrough, e.getKey());
      }
    }
    if (!toRecord.isEmpty()) {
      toRecord.addAll(listed);
      String key = StoreLayout.retiredRuns(recordThrough);
      try {
        objects.putIfAbsent(key, ObjectBody.of(new RetiredRuns(identity.id(), recordThrough,
            new ArrayList<>(toRecord), clock.millis()).encode()));
      } catch (ObjectAlreadyExistsException raced) {
        // another instance of this run wrote it: a later round reads it
      }
    }
    if (!lists.isEmpty()) {
      RetiredRuns newestListed = read.get(lists.lastEntry().getValue());
      for (Map.Entry<String, RetiredRuns> e : read.entrySet()) {
        if (newestListed != null && e.getValue() != newestListed
            && newestListed.runIds().containsAll(e.getValue().runIds())) {
          delete.add(e.getKey());
        }
      }
    }
    if (!delete.isEmpty()) {
      objects.delete(delete);
      LOG.info("{}: retired earlier query runs' epoch claims ({} objects deleted); their run "
          + "ids are in {}", identity, delete.size(),
          objects.describe(lists.isEmpty() ? StoreLayout.RUNS : lists.lastEntry().getValue()));
    }
    return delete.size();
  }

  /**
   * True if {@code runId} is in a retired-runs list among {@code listedKeys} (one GET per list,
   * usually one). A list that cannot be read is skipped with a WARN: it never stops a load.
   *
   * @throws IOException if storage fails
   */
  static boolean isRetired(ObjectStore objects, StoreIdentity identity, List<String> listedKeys,
      String runId) throws IOException {
    RunRetirement reader = new RunRetirement(identity, objects, Clock.systemUTC());
    for (String key : listedKeys) {
      if (StoreLayout.retiredRunsEpochOf(key) < 0) {
        continue;
      }
      try {
        RetiredRuns r = reader.read(key);
        if (r != null && r.contains(runId)) {
          return true;
        }
      } catch (IOException unreadable) {
        if (unreadable instanceof java.io.InterruptedIOException) {
          throw unreadable;
        }
        LOG.warn("{}: {}; the list is ignored (a run it names is not fenced by it)", identity,
            unreadable.getMessage());
      }
    }
    return false;
  }

  /** Logs once per key and instance that a retired-runs list cannot be read. */
  private void warnOnce(String key, IOException e) {
    if (warned.add(key)) {
      LOG.warn("{}: {}; earlier runs' epoch claims are not retired while it is listed (delete "
          + "it, or see docs/operations.md)", identity, e.getMessage());
    }
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
