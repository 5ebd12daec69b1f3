// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import io.strata.metrics.GcStats;
import java.io.IOException;
import java.time.Clock;
import java.util.Set;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * When one store runs a garbage-collection round, and what came of the rounds: owns the
 * schedule and the clock, while the {@link GarbageCollector} does a round for a "now" it is
 * given.
 *
 * <p>A round is due after this instance committed {@link GcSettings#roundInterval()} versions
 * since the last round started (or, after a round that skipped because a later query run's
 * claim had just appeared, once it commits past the version it had then: {@link
 * GarbageCollector#collectsAgainPast()}), or once an object
 * this instance left unreferenced (an aborted batch's spills, a failed base snapshot upload, a lost
 * race: an <em>orphan</em>) is older than the grace period, then at most one failed try per grace
 * period. Only instances that commit collect: nothing new can have become garbage otherwise.
 * The first round follows the instance's first commit at once, in the background (not at the
 * next maintenance, which a one-batch run never reaches), and a JVM that exits waits for it
 * within {@link UploadsAtExit}'s budget: so every rhythm collects, a scheduled job of one batch
 * per run too.
 *
 * <p>A round that fails never stops collection silently: it is counted ({@link
 * #failedRounds()}, Strata's {@code strataGcFailedRounds} metric), and after {@link
 * #WARN_AFTER_FAILURES} failures in a row a WARN names the store and the cause, then at most
 * once per {@link #WARN_INTERVAL_MILLIS} while the rounds keep failing.
 *
 * <p>Threading: the store's {@link StoreGuard} guards this object's state; the methods that
 * change or read it assert that the caller holds it. {@link #run} runs the round outside it and
 * takes it to record the outcome; {@link #last()} and {@link #failedRounds()} are read from any
 * thread.
 */
final class GcTrigger {
  private static final Logger LOG = LoggerFactory.getLogger(GcTrigger.class);
  /** Consecutive failed rounds before the first WARN. */
  static final int WARN_AFTER_FAILURES = 3;
  /** Least time between two such WARNs while rounds keep failing, ms (10 min). */
  static final long WARN_INTERVAL_MILLIS = 10 * 60_000L;

  /**
   * A round started by {@link #start}: its inputs, fixed under the store's monitor.
   *
   * @param number the round's sequence number in this instance, from 1
   * @param knownNewest the newest version this instance loaded or committed, or -1
   * @param protectedKeys keys the round must not delete (see {@link GarbageCollector#collect})
   * @param nowMillis the wall time the round started, ms
   * @param checkUploads whether the round also aborts old incomplete multipart uploads
   */
  record Round(long number, long knownNewest, Set<String> protectedKeys, long nowMillis,
      boolean checkUploads) { }

  private final GcSettings settings;
  private final Clock clock;
  private final GarbageCollector collector;
  private final StoreGuard guard;
  private final java.util.concurrent.Executor background;
  private final Runnable roundIfDue;
  private boolean firstRoundStarted;
  /** Completes when the first round, started after the first commit, has ended. */
  /** The thread running the first round, while it runs. */
  private volatile Thread firstRoundThread;
  private final java.util.concurrent.CompletableFuture<Void> firstRound =
      new java.util.concurrent.CompletableFuture<>();

  /** Newest version this instance committed (or adopted), -1 if none: only committers collect. */
  private long committedVersion = -1;
  /** {@link #committedVersion} when the last round started, -1 before the first round. */
  private long lastRoundVersion = -1;
  /**
   * The version past which a round is due again after the last round skipped for a later run's
   * claim ({@link GarbageCollector#collectsAgainPast()}), or -1.
   */
  private long resumesAfterVersion = -1;
  /** Wall time of the oldest (and newest) orphan this instance left that no round covered yet. */
  private long orphansSinceMillis = -1;
  private long orphansUntilMillis = -1;
  /** Wall time the last failed round started, or -1. */
  private long lastFailedRoundMillis = -1;
  /** Wall time incomplete uploads were last checked, or -1. */
  private long lastUploadsCheckMillis = -1;
  private long rounds;
  private boolean running;
  private volatile GcStats last = GcStats.NONE;
  /** Rounds of this instance that failed, in all (read by any thread). */
  private volatile long failedRounds;
  /** Rounds that failed since the last successful one. */
  private long consecutiveFailures;
  /** Wall time of the last WARN about failing rounds, or -1. */
  private long lastFailureWarnMillis = -1;

  /**
   * @param clock the wall clock of the grace period (tests move it forward)
   * @param guard the store's monitor, which guards this object's state
   * @param background where the first round runs after the first commit (borrowed)
   * @param roundIfDue runs a round if one is due, outside the monitor, never throwing
   */
  GcTrigger(GcSettings settings, Clock clock, GarbageCollector collector, StoreGuard guard,
      java.util.concurrent.Executor background, Runnable roundIfDue) {
    this.settings = settings;
    this.clock = clock;
    this.collector = collector;
    this.guard = guard;
    this.background = background;
    this.roundIfDue = roundIfDue;
  }

  /**
   * Records that this instance committed (or adopted) {@code version}; after its first commit,
   * starts the first round in the background.
   */
  void committed(long version) {
    guard.assertHeld();
    committedVersion = Math.max(committedVersion, version);
    if (!firstRoundStarted && rounds == 0 && settings.enabled() && version >= 1) {
      firstRoundStarted = true;
      Object token = new Object();
      UploadsAtExit.started(token);
      try {
        background.execute(() -> {
          firstRoundThread = Thread.currentThread();
          try {
            roundIfDue.run();
          } finally {
            firstRoundThread = null;
            UploadsAtExit.finished(token);
            firstRound.complete(null);
          }
        });
      } catch (java.util.concurrent.RejectedExecutionException closing) {
        UploadsAtExit.finished(token); // the pools are shutting down: maintenance may run it
        firstRound.complete(null);
      }
    }
  }

  /**
   * Waits until the first round started after the first commit, if any, has ended (an explicit
   * round follows it; tests). Returns at once on the thread running it.
   */
  void awaitFirstRound() {
    if (Thread.currentThread() == firstRoundThread) {
      return; // the first round itself
    }
    boolean started;
    synchronized (guard) {
      started = firstRoundStarted;
    }
    if (started) {
      firstRound.join();
    }
  }

  /**
   * Records that this instance just left objects no manifest will name (they become garbage
   * once older than the grace period).
   */
  void orphansLeft() {
    guard.assertHeld();
    long now = clock.millis();
    if (orphansSinceMillis < 0) {
      orphansSinceMillis = now;
    }
    orphansUntilMillis = Math.max(orphansUntilMillis, now);
  }

  /** True if a round is due (see the class comment) and none is running. */
  boolean due() {
    guard.assertHeld();
    if (!settings.enabled() || running || committedVersion < 1) {
      return false;
    }
    if (lastRoundVersion < 0 || committedVersion - lastRoundVersion >= settings.roundInterval()
        || (resumesAfterVersion >= 0 && committedVersion > resumesAfterVersion)) {
      return true;
    }
    long now = clock.millis();
    long grace = settings.gracePeriodMillis();
    return orphansSinceMillis >= 0 && now - orphansSinceMillis >= grace
        && (lastFailedRoundMillis < 0 || now - lastFailedRoundMillis >= grace);
  }

  /**
   * Starts a round, whether due or not.
   *
   * @param loadedVersion the version the store holds, or -1
   * @param protectedKeys the keys the store needs that no retained manifest may name yet (asked
   *     only if a round starts)
   * @return the round to {@link #run}, or null if GC is disabled or a round is running
   */
  Round start(long loadedVersion, Supplier<Set<String>> protectedKeys) {
    guard.assertHeld();
    if (!settings.enabled() || running) {
      return null;
    }
    running = true;
    long now = clock.millis();
    Round r = new Round(++rounds, Math.max(loadedVersion, committedVersion), protectedKeys.get(),
        now, lastUploadsCheckMillis < 0
            || now - lastUploadsCheckMillis >= settings.gracePeriodMillis());
    lastRoundVersion = committedVersion;
    if (resumesAfterVersion >= 0 && committedVersion > resumesAfterVersion) {
      // This round is the one the skip waited for: if it fails, failed rounds' pacing applies
      // (not a round at every maintenance); if it skips again, finished() sets it anew.
      resumesAfterVersion = -1;
    }
    return r;
  }

  /**
   * Runs a started round (outside the store's monitor), then records its outcome under it.
   *
   * @return what the round did
   * @throws IOException as {@link GarbageCollector#collect}; the round counts as failed
   */
  GcStats run(Round r) throws IOException {
    Throwable failure = new IllegalStateException("the round did not finish");
    try {
      GcStats stats = collector.collect(r.number(), r.knownNewest(), r.protectedKeys(),
          r.nowMillis(), r.checkUploads());
      last = stats;
      failure = null;
      if (stats.publishedSnapshotsDeleted() > 0) {
        // The files a deleted published snapshot named are unnamed now: a round once they are
        // older than the grace period deletes them.
        synchronized (guard) {
          orphansLeft();
        }
      }
      return stats;
    } catch (IOException | RuntimeException | Error e) {
      failure = e;
      throw e;
    } finally {
      String warning;
      synchronized (guard) {
        warning = finished(r, failure);
      }
      if (warning != null) {
        LOG.warn(warning);
      }
    }
  }

  /**
   * Records the outcome of a round.
   *
   * @param failure why the round failed, or null if it succeeded
   * @return a WARN to log (outside the monitor), or null
   */
  private String finished(Round r, Throwable failure) {
    guard.assertHeld();
    running = false;
    long now = r.nowMillis();
    if (failure != null) {
      lastFailedRoundMillis = now;
      failedRounds++;
      consecutiveFailures++;
      if (consecutiveFailures < WARN_AFTER_FAILURES || (lastFailureWarnMillis >= 0
          && now - lastFailureWarnMillis < WARN_INTERVAL_MILLIS)) {
        return null;
      }
      lastFailureWarnMillis = now;
      // The message of a storage error names the action, the object and the endpoint, never
      // credentials (S3Errors).
      return collector.identity() + " garbage collection failed " + consecutiveFailures
          + " rounds in a row (" + failedRounds + " in all, round " + r.number() + "): "
          + "nothing is deleted until a round succeeds and the checkpoint location keeps "
          + "growing; cause: " + failure.getClass().getSimpleName() + ": "
          + failure.getMessage() + " (see docs/operations.md, \"Garbage collection\")";
    }
    String recovered = consecutiveFailures >= WARN_AFTER_FAILURES
        ? collector.identity() + " garbage collection round " + r.number() + " succeeded after "
            + consecutiveFailures + " failed rounds" : null;
    consecutiveFailures = 0;
    lastFailureWarnMillis = -1;
    // Skipped for a later run's claim: due again at this instance's next commit past it.
    resumesAfterVersion = collector.collectsAgainPast();
    long grace = settings.gracePeriodMillis();
    lastFailedRoundMillis = -1;
    if (r.checkUploads()) {
      lastUploadsCheckMillis = now;
    }
    if (orphansUntilMillis >= 0 && orphansUntilMillis <= now - grace) {
      orphansSinceMillis = -1; // every orphan recorded so far was old enough for this round
      orphansUntilMillis = -1;
    } else if (orphansSinceMillis >= 0 && orphansSinceMillis <= now - grace) {
      orphansSinceMillis = orphansUntilMillis; // the older ones were collected
    }
    if (recovered != null) {
      LOG.info(recovered);
    }
    return null;
  }

  /** Rounds of this instance that failed, in all. Any thread. */
  long failedRounds() {
    return failedRounds;
  }

  /** What the last completed round did, or {@link GcStats#NONE}. Any thread. */
  GcStats last() {
    return last;
  }
}
