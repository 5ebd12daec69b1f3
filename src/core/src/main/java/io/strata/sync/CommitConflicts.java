// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import io.strata.format.Manifest;
import io.strata.format.StoreLayout;
import io.strata.objectstore.ObjectAlreadyExistsException;
import io.strata.objectstore.ObjectBody;
import io.strata.objectstore.ObjectStore;
import java.io.IOException;
import java.io.InterruptedIOException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Which writer of a version wins, and what a loser does: the one owner of the commit-conflict
 * policy of a {@link SyncedStore}, beside {@link RunEpochs} (which finds and claims the query
 * run's epoch). The store asks it at three points: before a load or a write (claim the epoch,
 * refuse a fenced run), for the key of a commit's version object, and after the commit's
 * create-only PUT found the key taken (HTTP 412, {@link ObjectAlreadyExistsException}):
 *
 * <ul>
 *   <li>checkpoint format 2 (a key unique to the attempt): another writer of the same attempt;
 *       the commit fails;
 *   <li>checkpoint format 1 with a query run ({@link StoreSettings#epochKeys()}): the occupant's
 *       manifest is read (one tail GET). An earlier run's commit is superseded: the commit
 *       retries in the next generation ({@link StoreLayout#generationVersionObject}). A later
 *       run's commit fences this one (a zombie): it is lost;
 *   <li>otherwise the first attempt to commit wins (a speculative copy, a retried task, a
 *       zombie): this attempt adopts the winner as the committed version and drops its writes.
 * </ul>
 *
 * <p>A lost or adopted commit drops the local database (the next load restores the winner from
 * the object store) and records this attempt's spill deltas as orphans. Messages read "Cannot
 * &lt;action&gt; &lt;store&gt; version &lt;n&gt;: &lt;reason&gt;".
 *
 * <p>Threading: every method runs under the store's {@link StoreGuard}, and asserts it.
 */
final class CommitConflicts {
  private static final Logger LOG = LoggerFactory.getLogger(CommitConflicts.class);

  /**
   * A commit's version object at one key.
   *
   * @param key its key
   * @param manifest its manifest (which names {@code key})
   * @param body the bytes of the one PUT
   */
  record VersionObject(String key, Manifest manifest, ObjectBody body) {
  }

  /** Builds the commit's version object for a key (a later generation's, after a 412). */
  interface Encoder {
    /**
     * The version object at {@code key}.
     *
     * @throws IOException if the manifest cannot be encoded or the delta's file opened
     */
    VersionObject encode(String key) throws IOException;
  }

  /**
   * How a commit's PUT ended ({@link #publish}).
   *
   * @param object the version object last sent (the one created, unless adopted)
   * @param winner the manifest of another attempt that won the version, adopted by this one;
   *     null if this commit's PUT created {@code object}
   * @param endNanos {@link System#nanoTime()} when the PUT ended (or was lost)
   */
  record Put(VersionObject object, Manifest winner, long endNanos) {
  }

  /** What {@link #resolve} says to do after a 412 that did not fail the commit. */
  private sealed interface Resolution {
  }

  /** An earlier run's commit holds the key: retry at {@code key}, generation {@code generation}. */
  private record Supersede(long generation, String key) implements Resolution {
  }

  /** Another attempt committed first: {@code winner} is the committed version. */
  private record Adopt(Manifest winner) implements Resolution {
  }

  private final StoreIdentity identity;
  private final ObjectStore objects;
  private final VersionObjectReader reader;
  private final boolean attemptKeys;
  /** The query run and its epoch (checkpoint format 1 with a run), else null. */
  private final RunEpochs epochs;
  private final GcTrigger gc;
  private final VersionBuilder building;
  private final StoreGuard guard;
  private final Runnable dropLocal;

  /**
   * @param identity the store (in messages)
   * @param objects the store's object store (to describe keys)
   * @param reader reads the occupant's or the winner's manifest
   * @param attemptKeys true under checkpoint format 2 (a version object's key is unique to its
   *     attempt)
   * @param epochs the query run's epochs (checkpoint format 1 with a run), or null
   * @param gc told of the orphans and the adopted version a lost commit leaves
   * @param building the version being built (whether it spilled)
   * @param guard the store's monitor
   * @param dropLocal drops the live local database and what was built on it (under the monitor)
   */
  CommitConflicts(StoreIdentity identity, ObjectStore objects, VersionObjectReader reader,
      boolean attemptKeys, RunEpochs epochs, GcTrigger gc, VersionBuilder building,
      StoreGuard guard, Runnable dropLocal) {
    this.identity = identity;
    this.objects = objects;
    this.reader = reader;
    this.attemptKeys = attemptKeys;
    this.epochs = epochs;
    this.gc = gc;
    this.building = building;
    this.guard = guard;
    this.dropLocal = dropLocal;
  }

  /**
   * The store is closing: waits up to {@value #MARKER_CLOSE_WAIT_MS} ms for the epoch marker
   * still being written, if any, so that no request of this instance reaches the object store
   * after it closed. Never throws.
   */
  void closing() {
    guard.assertHeld();
    if (epochs != null) {
      epochs.settleMarker(MARKER_CLOSE_WAIT_MS);
    }
  }

  /** How long {@link #closing} waits for a marker write, ms. */
  static final long MARKER_CLOSE_WAIT_MS = 5_000;

  /** The query run's epoch this instance commits under, or -1 (no run, or format 2). */
  long epoch() {
    return epochs == null ? -1 : epochs.known();
  }

  /**
   * Before a read-only load of {@code version} (Spark's read stores, the state data source):
   * finds this run's epoch (first load: one LIST) without claiming one, and refuses to load for
   * a run a later run has superseded, as far as this instance has seen. No request without a
   * run.
   *
   * @throws StateLoadException reason {@code STORAGE} if finding fails, {@code FENCED} if the
   *     run is superseded
   */
  void beforeReadOnlyLoad(long version) throws IOException {
    claim(version, true);
  }

  /**
   * Before a load that may commit, or the first write after a read-only one, at {@code
   * version}: finds (first time: one LIST) or claims (plus two create-only PUTs) this run's
   * epoch, and refuses a run a later run has superseded. No request without a run.
   *
   * @throws StateLoadException reason {@code STORAGE} if finding or claiming fails, {@code
   *     FENCED} if the run is superseded
   */
  void beforeWrite(long version) throws IOException {
    claim(version, false);
  }

  private void claim(long version, boolean readOnly) throws IOException {
    guard.assertHeld();
    if (epochs == null) {
      return;
    }
    if (epochs.known() < 0) {
      try {
        if (readOnly) {
          epochs.find();
        } else {
          epochs.epoch(version);
        }
      } catch (StateLoadException e) {
        throw e;
      } catch (IOException e) {
        throw new StateLoadException(StateLoadException.Reason.STORAGE, "Cannot load "
            + identity + " version " + version + ": finding the epoch of query run "
            + epochs.runId() + " failed: " + e.getMessage(), e);
      }
    }
    if (epochs.fenced()) {
      throw fenced(version);
    }
  }

  /**
   * A load read {@code m}, the manifest of {@code version}: records its epoch and refuses the
   * load if a later run committed it.
   *
   * @throws StateLoadException reason {@code FENCED} if this run is superseded
   */
  void loaded(long version, Manifest m) throws StateLoadException {
    guard.assertHeld();
    if (epochs != null) {
      epochs.saw(m.epoch());
      if (epochs.fenced()) {
        throw fenced(version);
      }
    }
  }

  /**
   * Before the commit of {@code newVersion} on the loaded {@code version}: claims the run's
   * epoch if a read-only load left it unclaimed (one LIST, two create-only PUTs), and refuses a
   * fenced run.
   *
   * @return the epoch the commit is made under, 0 without a run
   * @throws StateLoadException if the epoch cannot be found or claimed
   * @throws IOException if the run is fenced (never after a successful load, which checks it)
   */
  long beforeCommit(long version, long newVersion) throws IOException {
    guard.assertHeld();
    if (epochs == null) {
      return 0;
    }
    if (epochs.known() < 0) {
      claim(version, false); // loaded read-only, then written without prepareWrite()
    }
    try {
      epochs.awaitMarker();
    } catch (InterruptedIOException e) {
      throw e;
    } catch (IOException e) {
      throw new StateLoadException(StateLoadException.Reason.STORAGE, "Cannot commit "
          + identity + " version " + newVersion + ": " + e.getMessage(), e);
    }
    if (epochs.fenced()) {
      throw new IOException("Cannot commit " + identity + " version " + newVersion
          + ": query run " + epochs.runId() + " (epoch " + epochs.known()
          + ") was superseded by epoch " + epochs.newestSeen());
    }
    return epochs.known();
  }

  /**
   * The key of the version object the commit of {@code version} first tries: its first
   * generation under a run's epoch ({@code epoch > 0}), else the attempt's (format 2) or the
   * version's key.
   */
  String firstKey(long version, String attempt, long epoch) {
    return epoch > 0 ? StoreLayout.generationVersionObject(version, 1)
        : reader.key(version, attempt);
  }

  /**
   * Sends the commit of {@code version} under {@code epoch} with create-only PUTs: {@code
   * first}, at {@link #firstKey}; after a 412, the next generation's object ({@code encoder})
   * when an earlier run holds the key; else the winner is adopted or the commit fails (see the
   * class comment). Exactly one PUT when nothing is in the way.
   *
   * @return the object created, or the winner adopted (the local database is dropped then)
   * @throws IOException if the PUT fails or this commit is lost (the local database is dropped
   *     then, but when the winner's manifest, format 1 without a run, cannot be read)
   */
  Put publish(long version, long epoch, VersionObject first, Encoder encoder)
      throws IOException {
    guard.assertHeld();
    VersionObject o = first;
    long generation = 1;
    while (true) {
      try {
        objects.putIfAbsent(o.key(), FaultPoints.during(FaultPoints.COMMIT_DURING_PUT, o.body()));
        return new Put(o, null, System.nanoTime());
      } catch (ObjectAlreadyExistsException e) {
        long lost = System.nanoTime();
        Resolution r = resolve(version, o.key(), generation, epoch, o.manifest().attempt(), e);
        if (r instanceof Supersede next) {
          generation = next.generation();
          o = encoder.encode(next.key());
          continue;
        }
        return new Put(o, ((Adopt) r).winner(), lost);
      } catch (IOException | RuntimeException e) {
        dropLocal.run();
        throw e;
      }
    }
  }

  /**
   * The commit of {@code version} under {@code epoch} found {@code key} (its generation {@code
   * generation}) taken: decides who wins (see the class comment).
   *
   * @param e the 412 of the create-only PUT
   * @param attempt this attempt's id (in messages)
   * @return {@link Supersede} to retry in the next generation, or {@link Adopt} when another
   *     attempt won (the local database is dropped then)
   * @throws IOException if this commit is lost (format 2's unique key taken, or a later run
   *     committed the version), or the occupant's manifest cannot be read; the local database
   *     is dropped then, but when the winner's manifest (format 1 without a run) cannot be read
   */
  private Resolution resolve(long version, String key, long generation, long epoch,
      String attempt, ObjectAlreadyExistsException e) throws IOException {
    if (attemptKeys) {
      dropLocal.run();
      throw new IOException("Cannot commit " + identity + " version " + version
          + ": another writer created " + objects.describe(key)
          + ", a key unique to this attempt", e);
    }
    Manifest there = epoch > 0 ? readOccupant(version, key) : null;
    if (there != null && there.epoch() < epoch) {
      // An earlier query run committed this version (Spark re-runs it after a rewind or a
      // restart): this run's commit supersedes it in the next generation.
      LOG.info("{} version {}: {} holds query run epoch {}'s commit; run {} (epoch {}) "
          + "re-commits the version as generation {}", identity, version,
          objects.describe(key), there.epoch(), epochs.runId(), epoch, generation + 1);
      return new Supersede(generation + 1,
          StoreLayout.generationVersionObject(version, generation + 1));
    }
    if (there != null && there.epoch() > epoch) {
      throw fencedCommit(version, key, there);
    }
    return new Adopt(adoptWinner(version, key, attempt, there));
  }

  /**
   * The manifest of the version object {@code key} this commit's create-only PUT found in place
   * (one tail GET). If it cannot be read, the local database is discarded and the error thrown.
   */
  private Manifest readOccupant(long version, String key) throws IOException {
    try {
      return reader.readAt(version, key, null);
    } catch (IOException | RuntimeException e) {
      dropLocal.run();
      throw e;
    }
  }

  /**
   * A later query run already committed {@code version} (its manifest {@code there} names a
   * greater epoch): this attempt belongs to a superseded run (a zombie) and its commit is lost.
   * Nothing of it is visible: the object store holds none of its version objects.
   */
  private IOException fencedCommit(long version, String key, Manifest there) {
    epochs.saw(there.epoch());
    building.orphanSpills();
    dropLocal.run();
    LOG.warn("{} version {}: attempt of query run {} (epoch {}) is fenced: {} holds the commit "
        + "of a later run (epoch {}, attempt {}); this attempt's writes are dropped", identity,
        version, epochs.runId(), epochs.known(), objects.describe(key), there.epoch(),
        there.attempt());
    return new IOException("Cannot commit " + identity + " version " + version + ": query run "
        + epochs.runId() + " (epoch " + epochs.known() + ") was superseded by a later run of the "
        + "query (epoch " + there.epoch() + "), which committed " + objects.describe(key)
        + "; this attempt (a zombie of a stopped or restarted run) is lost");
  }

  /**
   * Checkpoint format 1, after this attempt's create-only PUT of {@code v/<version>.svo} failed
   * because another attempt of the same version committed first (a speculative copy, a retry
   * after a task died past its PUT, or a zombie): the first writer wins. This attempt drops its
   * writes. Its local database is discarded and the next load restores the winner from the
   * object store.
   */
  private Manifest adoptWinner(long version, String key, String attempt, Manifest read)
      throws IOException {
    Manifest winner = read != null ? read : reader.readAt(version, key, null);
    LOG.warn("{} version {}: attempt {} lost the race for {} to attempt {}; this attempt's "
        + "writes are dropped (checkpoint format 1: the first attempt to commit wins); the next "
        + "load restores the winner from the object store (usual causes: a speculative or "
        + "retried task, or a batch whose plan ran twice, such as a foreachBatch DataFrame used "
        + "by two actions without persist())", identity, version, attempt,
        objects.describe(key), winner.attempt());
    building.orphanSpills(); // no manifest will ever name this attempt's spill deltas
    gc.committed(version);
    dropLocal.run();
    return winner;
  }

  /**
   * The error of a load for a run a later run superseded: this is a task of a stopped or
   * restarted run (a zombie).
   */
  private StateLoadException fenced(long version) {
    return new StateLoadException(StateLoadException.Reason.FENCED, "Cannot load " + identity
        + " version " + version + ": query run " + epochs.runId() + " (epoch " + epochs.known()
        + ") was superseded by a later run of the query (epoch " + epochs.newestSeen() + "); "
        + "this is a task of a stopped or restarted run (a zombie), whose state must not be "
        + "used", null);
  }
}
