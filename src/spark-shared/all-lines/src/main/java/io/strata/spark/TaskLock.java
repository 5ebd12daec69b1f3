// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import io.strata.config.StrataConf;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.LongSupplier;
import org.apache.spark.TaskContext;
import org.apache.spark.util.TaskCompletionListener;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The task lock of one provider: one task at a time holds the provider's store. The provider
 * owns it ({@code StrataProviderBase}) and hands it to every store handle it makes ({@link
 * StrataStoreBase}), which gives it back itself; neither calls the other for locking.
 *
 * <p>The contract:
 * <ul>
 *   <li><b>Who holds it.</b> At most one {@link #holder()}: the handle (read store or write
 *       store) of one {@link #currentOwner() owner}, a Spark task attempt or, outside tasks, one
 *       thread. A load {@link #acquire}s the permit (waiting up to {@code lock.acquireTimeout}),
 *       makes its handle and {@link #publish}es it; a load that fails gives the permit back
 *       ({@link #releaseAfterFailedLoad}).
 *   <li><b>Release.</b> The holder {@link #release}s it once, when it leaves READ_ONLY or
 *       UPDATING: after its commit (once the commit is reported to Spark's coordinator), at
 *       abort, at release (a read store), or at the end of its task. A release by a handle that
 *       is not (or no longer) the holder does nothing.
 *   <li><b>Within one task.</b> A read store that becomes the task's write store (Spark 4.0's
 *       second {@code getStore}, Spark 4.1's upgrade) keeps the lock: the same handle stays the
 *       holder. A committed handle that Spark reads after its commit (Spark 3.5's Complete mode)
 *       {@link #retake}s the lock for those reads until its task ends; a later load by the same
 *       task then takes it over instead of waiting for itself ({@link
 *       #takeOverHeldPastCommit}).
 *   <li><b>Task completion.</b> Each handle loaded inside a task registers a task-completion
 *       listener that gives back whatever the task did not: a read store is released, a write
 *       store aborted, a lock retaken after commit released.
 *   <li><b>Close.</b> {@link #close} marks the lock closed for good (later loads and retakes
 *       fail with Spark's {@code CANNOT_LOAD_STATE_STORE}) and waits up to the timeout for the
 *       holder; the provider then closes its store whether or not the holder let go. The holder's
 *       own thread does not wait for itself.
 * </ul>
 *
 * <p>Generic in its holder ({@link Holder}, implemented by {@link StrataStoreBase}) so that its
 * rules can be tested without a store.
 *
 * <p>Thread-safe: the permit is a {@link Semaphore} (given back by whichever thread ends the
 * holder's use, such as a task-completion listener); the holder changes under this object's
 * monitor.
 */
final class TaskLock<H extends TaskLock.Holder> {
  private static final Logger LOG = LoggerFactory.getLogger(TaskLock.class);

  /** What the lock needs of the handle that holds it (a {@link StrataStoreBase}). */
  interface Holder {
    /**
     * Who loaded the handle.
     *
     * @return a Spark task attempt id, or a negative thread key ({@link TaskLock#currentOwner()})
     */
    long owner();

    /**
     * The version the handle loaded (named in errors).
     *
     * @return the version
     */
    long version();

    /**
     * If the handle is committed and holds the lock for reads after its commit, gives that hold
     * up (it can no longer be read) and returns true; otherwise false. Called under the lock's
     * monitor.
     *
     * @return whether the hold was given up
     */
    boolean handOverLockPastCommit();

    /** Gives back what the handle's task did not (called once, when the task ends). */
    void onTaskCompletion();

    /** Records that {@link #onTaskCompletion()} will be called when the loading task ends. */
    void releasedByTask();
  }

  /** The provider whose store this lock guards, named in errors. */
  private final Object store;
  /** {@code lock.acquireTimeout} in milliseconds; 0 before the provider's init. */
  private final LongSupplier timeoutMs;
  private final Semaphore permit = new Semaphore(1);
  private final AtomicBoolean closed = new AtomicBoolean();
  /** The handle holding the permit; null when the permit is free or between acquire and publish. */
  private volatile H holder;

  /**
   * A free, open lock.
   *
   * @param store the provider whose store it guards (its {@code toString()} names it in errors)
   * @param timeoutMs how long {@link #acquire}, {@link #retake} and {@link #close} wait, in
   *     milliseconds (the provider's {@code lock.acquireTimeout}, 0 before its init)
   */
  TaskLock(Object store, LongSupplier timeoutMs) {
    this.store = store;
    this.timeoutMs = timeoutMs;
  }

  /**
   * Who is asking: the Spark task attempt id (at least 0) inside a task, else minus one minus the
   * thread's id (a caller outside Spark's tasks, such as a test or a tool).
   *
   * @return the caller's owner key
   */
  static long currentOwner() {
    TaskContext ctx = TaskContext.get();
    return ctx != null ? ctx.taskAttemptId() : -1 - Thread.currentThread().getId();
  }

  /**
   * The handle that holds the lock, or null.
   *
   * @return the holder, or null
   */
  H holder() {
    return holder;
  }

  /**
   * Whether {@link #close} ran: no load or retake succeeds from then on.
   *
   * @return true once closed
   */
  boolean closed() {
    return closed.get();
  }

  /**
   * Takes the permit for a load of {@code version}, waiting up to the timeout. The caller then
   * {@link #publish}es its handle, or gives the permit back with {@link #releaseAfterFailedLoad}.
   *
   * @param version the version being loaded (named in the error)
   * @throws RuntimeException Spark's {@code CANNOT_LOAD_STATE_STORE} if the permit is not free
   *     within the timeout (saying whether this task or another holds it) or the wait is
   *     interrupted (the interrupt flag is set again)
   */
  void acquire(long version) {
    long waitMs = timeoutMs.getAsLong();
    try {
      if (!permit.tryAcquire(waitMs, TimeUnit.MILLISECONDS)) {
        H h = holder;
        String who = h != null && h.owner() == currentOwner() ? "this task still holds it"
            : "another task holds it";
        throw SparkErrors.cannotLoad(new IllegalStateException("Cannot load " + store
            + " version " + version + ": " + who + " (" + h + ") after waiting "
            + waitMs + " ms (" + StrataConf.LOCK_TIMEOUT.fullKey() + ")"));
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw SparkErrors.cannotLoad(new IllegalStateException("Cannot load " + store + " version "
          + version + ": interrupted while waiting for the task that holds it", e));
    }
  }

  /**
   * Makes {@code handle}, whose load holds the permit, the holder; inside a Spark task, also
   * registers the task-completion listener that gives back what the task does not ({@link
   * StrataStoreBase#onTaskCompletion()}; Spark runs it at once if the task has completed). If
   * registering throws, the handle is the holder already: the load gives the lock back with
   * {@link #releaseAfterFailedLoad}.
   *
   * @param handle the loaded handle, its owner already set
   */
  void publish(H handle) {
    synchronized (this) {
      holder = handle;
    }
    TaskContext ctx = TaskContext.get();
    if (ctx != null) {
      ctx.addTaskCompletionListener((TaskCompletionListener) t -> handle.onTaskCompletion());
      handle.releasedByTask();
    }
  }

  /**
   * Gives back the permit of a load that failed: through {@link #release} if its handle was
   * already published (its task-completion listener may have given it back already: Spark runs
   * a listener at once when the task has completed), else the permit itself.
   *
   * @param published the load's published handle, or null if it published none
   */
  void releaseAfterFailedLoad(H published) {
    if (published == null) {
      permit.release();
    } else {
      release(published);
    }
  }

  /**
   * Gives the lock back if {@code handle} holds it; nothing otherwise (a handle releases at most
   * once: later calls, and calls by a handle the lock was taken over from, find another holder
   * or none).
   *
   * @param handle the handle leaving READ_ONLY/UPDATING, or ending its hold after commit
   */
  synchronized void release(H handle) {
    if (holder == handle) {
      holder = null;
      permit.release();
    }
  }

  /**
   * Takes the lock again for {@code handle}, committed, which its task reads after the commit
   * (see {@link StrataStoreBase#readsAfterCommit()}); its task's end gives it back. Waits up to
   * the timeout.
   *
   * @param handle the committed handle
   * @throws RuntimeException Spark's {@code CANNOT_LOAD_STATE_STORE} if the lock is closed (also
   *     when {@link #close} gave up waiting for the previous holder meanwhile) or another task
   *     holds it past the timeout
   */
  void retake(H handle) {
    if (closed()) {
      throw SparkErrors.cannotLoad(new IllegalStateException(store + " is closed"));
    }
    acquire(handle.version());
    synchronized (this) {
      if (closed()) {
        permit.release();
        throw SparkErrors.cannotLoad(new IllegalStateException(store + " is closed"));
      }
      holder = handle;
    }
  }

  /**
   * If the caller's own committed handle holds the lock for reads after its commit, takes the
   * lock over from it for a new load by the same caller (the handle revokes its scans and can no
   * longer be read: {@link StrataStoreBase#handOverLockPastCommit()}). The caller then holds the
   * permit, with no holder until it {@link #publish}es its new handle.
   *
   * @return true if the caller now holds the permit; false if it must {@link #acquire} it
   */
  synchronized boolean takeOverHeldPastCommit() {
    H h = holder;
    if (h != null && h.owner() == currentOwner() && h.handOverLockPastCommit()) {
      holder = null;
      return true;
    }
    return false;
  }

  /**
   * Closes the lock for good and waits up to the timeout for the holder to give it back (not at
   * all on the holder's own thread: Spark 3.5 closes a provider it unloads on the thread of a
   * task loading another store, and that task may hold this one). Logs a warning if the holder
   * did not let go.
   *
   * @return false if the lock was closed already (nothing done); true otherwise, whether or not
   *     the holder let go: the caller closes the store either way
   */
  boolean close() {
    if (!closed.compareAndSet(false, true)) {
      return false;
    }
    try {
      H h = holder;
      long waitMs = h != null && h.owner() == currentOwner() ? 0 : timeoutMs.getAsLong();
      if (!permit.tryAcquire(waitMs, TimeUnit.MILLISECONDS)) {
        LOG.warn("{}: closing while a task still holds it ({})", store, holder);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    return true;
  }

  @Override
  public String toString() {
    return "TaskLock[" + store + ", holder " + holder + (closed() ? ", closed" : "") + "]";
  }
}
