// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Lets base snapshot uploads that are running when the JVM shuts down finish and publish, for up
 * to {@value #BUDGET_MS} ms in all. Spark never closes its state store providers when a driver
 * or executor JVM exits ({@code StateStore.stop()} is not called on shutdown, Spark 4.0 to
 * 4.2), so without this a one-batch run ({@code Trigger.AvailableNow} or {@code Once} in a
 * driver that then exits) would lose the snapshot its cold load scheduled whenever the upload
 * outlasts the rest of the batch, and the next run would replay the same long chain. One JVM
 * shutdown hook, registered when the first upload starts, waits for the uploads running then;
 * an exit with none running is not delayed, and a halted JVM (SIGKILL, {@link Runtime#halt})
 * runs no hook: the upload's objects then stay unreferenced until garbage collection.
 *
 * <p>JVM shutdown hooks run concurrently, and Spark's own hook deletes its local directories
 * (where Strata's local databases and their checkpoints live by default) at exit: the Spark layer
 * therefore installs the wait through Spark's ordered hooks ({@link #installHookWith}), to run
 * before that deletion. Without it (no Spark), a plain JVM hook is used.
 */
public final class UploadsAtExit {
  private static final Logger LOG = LoggerFactory.getLogger(UploadsAtExit.class);
  /** Longest the shutdown hook waits for running uploads, ms. */
  static final long BUDGET_MS = 30_000;

  private static final Object LOCK = new Object();
  private static final Set<Object> RUNNING = Collections.newSetFromMap(new IdentityHashMap<>());
  private static boolean hooked;
  private static Consumer<Runnable> installer = wait -> Runtime.getRuntime().addShutdownHook(
      new Thread(wait, "strata-snapshot-uploads-at-exit"));

  private UploadsAtExit() { }

  /**
   * Sets how the shutdown wait is installed when the first upload starts (once per class
   * loader); a call after that has no effect. The Spark layer passes one that adds it to Spark's
   * ordered shutdown hooks ahead of the deletion of Spark's local directories.
   *
   * @param hookInstaller registers the given wait to run at JVM shutdown; it may throw {@link
   *     IllegalStateException} if shutdown has begun (then nothing waits)
   */
  public static void installHookWith(Consumer<Runnable> hookInstaller) {
    synchronized (LOCK) {
      if (!hooked) {
        installer = java.util.Objects.requireNonNull(hookInstaller, "hookInstaller");
      }
    }
  }

  /** Records that {@code upload} runs (one entry per uploader at a time). */
  static void started(Object upload) {
    synchronized (LOCK) {
      if (!hooked) {
        hooked = true;
        try {
          installer.accept(UploadsAtExit::awaitRunning);
        } catch (IllegalStateException shuttingDown) {
          // the JVM is already shutting down: nothing will wait
        }
      }
      RUNNING.add(upload);
    }
  }

  /** Records that {@code upload} stopped (finished, failed or abandoned). */
  static void finished(Object upload) {
    synchronized (LOCK) {
      if (RUNNING.remove(upload)) {
        LOCK.notifyAll();
      }
    }
  }

  /** Number of uploads running now (for tests). */
  static int running() {
    synchronized (LOCK) {
      return RUNNING.size();
    }
  }

  /** The shutdown hook: waits up to {@link #BUDGET_MS} for the running uploads to stop. */
  static void awaitRunning() {
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(BUDGET_MS);
    synchronized (LOCK) {
      if (RUNNING.isEmpty()) {
        return;
      }
      LOG.info("JVM shutting down: waiting up to {} ms for {} base snapshot upload(s) to "
          + "finish and publish", BUDGET_MS, RUNNING.size());
      while (!RUNNING.isEmpty()) {
        long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
        if (left <= 0) {
          LOG.warn("JVM shutting down: {} base snapshot upload(s) still running after {} ms; "
              + "their objects stay unreferenced until garbage collection", RUNNING.size(),
              BUDGET_MS);
          return;
        }
        try {
          LOCK.wait(left);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return;
        }
      }
    }
  }
}
