// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import io.strata.format.ManifestFormatException;
import io.strata.format.RunClaim;
import io.strata.format.StoreLayout;
import io.strata.objectstore.ObjectAlreadyExistsException;
import io.strata.objectstore.ObjectBody;
import io.strata.objectstore.ObjectInfo;
import io.strata.objectstore.ObjectNotFoundException;
import io.strata.objectstore.ObjectStore;
import java.io.IOException;
import java.io.InputStream;
import java.io.InterruptedIOException;
import java.time.Clock;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The epoch of one query run in one store (checkpoint format 1): found, or claimed, once per
 * instance. Spark's run ids are random UUIDs, not ordered; the epoch is. The first instance of a
 * run to load the store lists {@code runs/} (one LIST): if its run id has a marker, that is its
 * epoch; otherwise it claims the greatest epoch + 1 with a create-only PUT of {@code
 * runs/<epoch>.run} and then writes the marker {@code runs/<epoch>-<runId>.id}. Two claimers of
 * one epoch are resolved by the create-only PUT: the loser lists again and claims the next one
 * (or finds its own run, when the winner was another executor of the same run). A claim without
 * a marker (its claimer died between the two PUTs, or is between them) is read with one GET.
 * A run about to claim reads the lists of retired runs first (one GET each, usually one, when
 * there are any, {@link RunRetirement}): a retired run is fenced, never given a new epoch.
 * Not thread-safe; the store's monitor serialises it.
 */
final class RunEpochs {
  private static final Logger LOG = LoggerFactory.getLogger(RunEpochs.class);
  private static final int MAX_TRIES = 16;

  private final StoreIdentity identity;
  private final ObjectStore objects;
  private final String runId;
  private final Clock clock;
  private final ExecutorService pool;
  /** The marker write of this instance's claim while a commit has not awaited it; or null. */
  private Future<?> marker;
  /** The epoch whose marker this instance still owes (being written, or failed), or -1. */
  private long markerOwed = -1;
  /** Read by garbage-collection rounds without the store's monitor. */
  private volatile long epoch = -1;
  private long newest = -1;
  /** Keys of the last listing of {@code runs/}. */
  private List<String> lastListed = List.of();

  /**
   * @param pool where a claim's marker is written ({@link #awaitMarker}; borrowed, not shut
   *     down here)
   */
  RunEpochs(StoreIdentity identity, ObjectStore objects, String runId, Clock clock,
      ExecutorService pool) {
    this.identity = identity;
    this.objects = objects;
    this.runId = runId;
    this.clock = clock;
    this.pool = pool;
    StoreLayout.runMarker(1, runId); // validates the run id now
  }

  /** The run this instance belongs to. */
  String runId() {
    return runId;
  }

  /** This run's epoch if already known (no request), else -1. */
  long known() {
    return epoch;
  }

  /** The greatest epoch of a committed version this instance has seen, or -1. */
  long newestSeen() {
    return newest;
  }

  /**
   * Records that a version committed under {@code otherEpoch} was seen (a load read its
   * manifest, or a commit found it in place).
   */
  void saw(long otherEpoch) {
    newest = Math.max(newest, otherEpoch);
  }

  /**
   * True once this instance has seen a version committed by a later run: it belongs to a
   * superseded run (a zombie). A later run's claim alone does not fence: every run that loads
   * the store claims an epoch, a read-only one (Spark's state data source) too, and it must
   * not stop the query that writes.
   */
  boolean fenced() {
    return epoch > 0 && newest > epoch;
  }

  /**
   * This run's epoch in the store: known after the first call; the first costs one LIST, plus
   * two create-only PUTs if the run claims its epoch (the second awaited by {@link
   * #awaitMarker}). It always lists afresh, even right after a {@link #find()}: a claim from an
   * older listing could take an epoch a retirement freed since, which another instance of a
   * retired run still holds.
   *
   * @param loadsVersion the version the load that asks loads, recorded in the claim ({@link
   *     RunClaim#loadsVersion}: an earlier run's collection keeps it while the claim is listed)
   * @throws IOException if storage fails or the claim keeps losing races
   */
  long epoch(long loadsVersion) throws IOException {
    if (epoch > 0) {
      return epoch;
    }
    for (int tries = 0; tries < MAX_TRIES; tries++) {
      long[] mineAndMax = lookUp(true);
      if (mineAndMax[0] > 0) {
        return found(mineAndMax[0], mineAndMax[1]);
      }
      refuseIfRetired();
      long next = mineAndMax[1] + 1;
      RunClaim claim = new RunClaim(identity.id(), next, runId, clock.millis(),
          Math.max(-1, loadsVersion));
      try {
        objects.putIfAbsent(StoreLayout.runClaim(next), ObjectBody.of(claim.encode()));
      } catch (ObjectAlreadyExistsException e) {
        LOG.debug("{}: run {} lost the claim of epoch {}; listing again", identity, runId, next);
        continue;
      }
      writeMarkerAhead(next);
      LOG.info("{}: query run {} claimed epoch {} (checkpoint format 1: its versions supersede "
          + "those of earlier runs)", identity, runId, next);
      return found(next, next);
    }
    throw new IOException("Cannot claim an epoch for " + identity + " run " + runId + ": "
        + MAX_TRIES + " claims in a row lost races under " + objects.describe(StoreLayout.RUNS));
  }

  /**
   * For a read-only load: this run's epoch if it claimed one (one LIST the first time), else
   * -1, and nothing is written: a run that only reads (Spark's state data source gives every
   * scan a new run id) needs no epoch, no write permission and leaves nothing behind. A later
   * {@link #epoch()} claims one if the run then writes.
   *
   * @throws IOException if storage fails
   */
  long find() throws IOException {
    if (epoch > 0) {
      return epoch;
    }
    long[] mineAndMax = lookUp(false);
    if (mineAndMax[0] > 0) {
      return found(mineAndMax[0], mineAndMax[1]);
    }
    return -1;
  }

  /**
   * One LIST of {@code runs/}: {this run's epoch or -1, the greatest claimed epoch or 0}. With
   * {@code complete}, a claim of this run without its marker gets the marker (its claimer died
   * between its PUTs; a read-only caller leaves that to a writing one).
   */
  private long[] lookUp(boolean complete) throws IOException {
    List<ObjectInfo> listed = objects.list(StoreLayout.RUNS);
    lastListed = listed.stream().map(ObjectInfo::key).toList();
    TreeSet<Long> claims = new TreeSet<>();
    Map<Long, String> runs = new HashMap<>();
    for (ObjectInfo o : listed) {
      long c = StoreLayout.claimEpochOf(o.key());
      if (c > 0) {
        claims.add(c);
      }
      long m = StoreLayout.markerEpochOf(o.key());
      if (m > 0) {
        runs.put(m, StoreLayout.markerRunOf(o.key()));
      }
    }
    long mine = -1;
    for (long c : claims.descendingSet()) {
      String run = runs.containsKey(c) ? runs.get(c) : readClaim(c);
      if (runId.equals(run)) {
        mine = c;
        if (complete && !runs.containsKey(c)) {
          writeMarker(c); // the claimer died between its two PUTs: complete its claim
        }
        break;
      }
    }
    return new long[] {mine, claims.isEmpty() ? 0 : claims.last()};
  }

  /**
   * Refuses to claim an epoch for a run that garbage collection retired ({@link RunRetirement}):
   * its marker is gone, and a new claim would let a zombie of an earlier run supersede the
   * runs after it. One GET of the newest retired-runs list, if the last listing had one.
   *
   * @throws StateLoadException ({@link StateLoadException.Reason#FENCED}) if this run is retired
   */
  private void refuseIfRetired() throws IOException {
    if (RunRetirement.isRetired(objects, identity, lastListed, runId)) {
      throw new StateLoadException(StateLoadException.Reason.FENCED, identity + ": query run "
          + runId + " was superseded by a later run of the query (its epoch claim was retired "
          + "into " + objects.describe(StoreLayout.RUNS) + "); this executor belongs to a "
          + "stopped or restarted query and must not load or commit (checkpoint format 1)",
          null);
    }
  }

  private long found(long mine, long max) {
    epoch = mine;
    if (max > mine) {
      LOG.info("{}: query run {} holds epoch {}; a later run claimed epoch {} (if that run "
          + "commits a version, this run's attempts of it and later are fenced)", identity, runId,
          mine, max);
    }
    return mine;
  }

  /**
   * Starts writing the marker of this run's claim of {@code e} on the pool, for the commit to
   * await ({@link #awaitMarker}) rather than the load: until it exists, a reader that meets the
   * claim reads the claim instead (one GET), as it does for a claimer that died between its two
   * PUTs. Written on this thread if the pool is shut down.
   */
  private void writeMarkerAhead(long e) throws IOException {
    markerOwed = e;
    try {
      marker = pool.submit(() -> {
        writeMarker(e);
        return null;
      });
    } catch (RejectedExecutionException closing) {
      marker = null;
      writeMarker(e);
      markerOwed = -1;
    }
  }

  /**
   * Makes sure the marker of this instance's claim exists before a commit: waits for its write
   * if it is still running, and writes it on this thread if that write failed (one PUT). No
   * request once it is written.
   *
   * @throws InterruptedIOException if the thread is interrupted while it waits (the flag is
   *     set again; the write goes on, and the marker is still owed)
   * @throws IOException if writing the marker failed again: still owed, so the next commit of
   *     this instance tries once more
   */
  void awaitMarker() throws IOException {
    if (markerOwed < 0) {
      return;
    }
    Future<?> m = marker;
    if (m != null) {
      try {
        m.get();
        marker = null;
        markerOwed = -1;
        return;
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new InterruptedIOException("Interrupted while writing the epoch marker of run "
            + runId + " in " + identity);
      } catch (ExecutionException e) {
        marker = null;
        LOG.debug("{}: writing the marker of epoch {} failed ({}); writing it again", identity,
            markerOwed, e.getCause().toString());
      }
    }
    writeMarker(markerOwed);
    markerOwed = -1;
  }

  /**
   * Waits up to {@code timeoutMillis} for a marker write still running, so that none reaches
   * the object store after the store closed it; a marker left unwritten is the state of a
   * claimer that died between its two PUTs, which every reader handles. Never throws.
   */
  void settleMarker(long timeoutMillis) {
    Future<?> m = marker;
    if (m == null) {
      return;
    }
    boolean interrupted = false;
    long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.MILLISECONDS.toNanos(
        timeoutMillis);
    while (true) {
      try {
        m.get(Math.max(0, deadline - System.nanoTime()),
            java.util.concurrent.TimeUnit.NANOSECONDS);
        break;
      } catch (InterruptedException e) {
        interrupted = true;
      } catch (ExecutionException | java.util.concurrent.TimeoutException
          | java.util.concurrent.CancellationException e) {
        break;
      }
    }
    marker = null;
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }

  private void writeMarker(long e) throws IOException {
    try {
      objects.putIfAbsent(StoreLayout.runMarker(e, runId), ObjectBody.of(new byte[0]));
    } catch (ObjectAlreadyExistsException ignored) {
      // another executor of this run wrote it
    }
  }

  /**
   * The run id in the claim of {@code e}, or null if it vanished or cannot be decoded. An
   * undecodable claim (damaged bytes, a newer format) is another run's as far as this run can
   * tell, and a WARN names it: failing instead would stop every later load of the store, the
   * read-only ones included, for as long as it stays (garbage collection leaves a claim it
   * cannot read alone). Its epoch still counts as taken.
   *
   * @throws IOException if storage fails
   */
  private String readClaim(long e) throws IOException {
    String key = StoreLayout.runClaim(e);
    try (InputStream in = objects.get(key)) {
      return RunClaim.decode(in.readAllBytes()).runId();
    } catch (ObjectNotFoundException ex) {
      return null;
    } catch (ManifestFormatException ex) {
      LOG.warn("{}: cannot read the run claim {} ({}); taking it for another query run's "
          + "(delete it if no run holds epoch {}; see docs/operations.md, \"Re-running batches\")", identity,
          objects.describe(key), ex.getMessage(), e);
      return null;
    }
  }
}
