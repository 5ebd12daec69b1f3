// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/**
 * The monitor of one {@link SyncedStore}: an instance is the lock that serialises the store's
 * version life cycle (load, commit, spill, abort, close, the checkpoint step of a snapshot) and
 * guards the state of the collaborators that life cycle changes ({@link LocalDatabase}, {@link
 * VersionBuilder}, the pending snapshot of {@link BaseSnapshotUploader}, the round state of
 * {@link GcTrigger}, {@link RunEpochs}, {@link SnapshotScheduler}, {@link LocalIntegrity}).
 * Collaborators are handed this type, never a bare {@code Object}, and the methods that must
 * run under it say so with {@link #assertHeld()} rather than in a comment.
 *
 * <p>Used with {@code synchronized (guard) { ... }}; waiting and waking go through {@link
 * #awaitUntil} and {@link #signalAll()}, the store's one wait loop.
 */
final class StoreGuard {
  /** How a {@link #awaitUntil} ended. */
  enum Wait {
    /** The condition held. */
    DONE,
    /** The timeout passed first. */
    TIMED_OUT,
    /** The waiting thread was interrupted; its interrupt flag is clear (the caller decides). */
    INTERRUPTED
  }

  /**
   * Throws unless the calling thread holds this monitor: a broken locking rule fails at once,
   * where it is broken, instead of as a race later.
   *
   * @throws IllegalStateException if the calling thread does not hold the monitor
   */
  void assertHeld() {
    if (!Thread.holdsLock(this)) {
      throw new IllegalStateException("the store's monitor is not held by thread "
          + Thread.currentThread().getName());
    }
  }

  /**
   * The value of {@code read} computed under this monitor (taken for the call; reentrant).
   *
   * @param read what to compute (it may wait in {@link #awaitUntil}, which releases the monitor)
   */
  <T> T locked(Supplier<T> read) {
    synchronized (this) {
      return read.get();
    }
  }

  /**
   * Waits on this monitor (held by the caller, and released while waiting) until {@code done}
   * is true, for up to {@code timeoutMs} ms in all. {@code done} is evaluated under the monitor,
   * before the first wait and after every wake-up ({@link #signalAll()}).
   *
   * @param done the condition, read under the monitor
   * @param timeoutMs the longest wait, ms; 0 or less tests {@code done} once
   * @return how the wait ended
   * @throws IllegalStateException if the caller does not hold the monitor
   */
  Wait awaitUntil(BooleanSupplier done, long timeoutMs) {
    assertHeld();
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
    while (!done.getAsBoolean()) {
      long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
      if (left <= 0) {
        return Wait.TIMED_OUT;
      }
      try {
        wait(left);
      } catch (InterruptedException e) {
        return Wait.INTERRUPTED;
      }
    }
    return Wait.DONE;
  }

  /**
   * Wakes every thread waiting in {@link #awaitUntil}, after the caller changed what they wait
   * for.
   *
   * @throws IllegalStateException if the caller does not hold the monitor
   */
  void signalAll() {
    assertHeld();
    notifyAll();
  }
}
