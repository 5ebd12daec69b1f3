// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/**
 * {@link TaskLock}'s contract, outside Spark tasks (the caller's owner key is its thread's): one
 * holder at a time, release only by the holder, the take-over of a hold kept past commit by the
 * same caller, and close.
 */
class TaskLockTest {
  private static final long TIMEOUT_MS = 200;

  /** A holder with a fixed owner whose hold past commit can be given up once. */
  static final class Handle implements TaskLock.Holder {
    final long owner;
    boolean heldPastCommit;

    Handle(long owner) {
      this.owner = owner;
    }

    @Override
    public long owner() {
      return owner;
    }

    @Override
    public long version() {
      return 7;
    }

    @Override
    public boolean handOverLockPastCommit() {
      boolean had = heldPastCommit;
      heldPastCommit = false;
      return had;
    }

    @Override
    public void onTaskCompletion() { }

    @Override
    public void releasedByTask() { }

    @Override
    public String toString() {
      return "Handle[" + owner + "]";
    }
  }

  private final TaskLock<Handle> lock = new TaskLock<>("store", () -> TIMEOUT_MS);

  @Test
  void onlyTheHolderGivesItBack() {
    Handle mine = new Handle(TaskLock.currentOwner());
    lock.acquire(7);
    lock.publish(mine);
    assertSame(mine, lock.holder());
    lock.release(new Handle(TaskLock.currentOwner()));
    assertSame(mine, lock.holder(), "a handle that is not the holder releases nothing");
    lock.release(mine);
    assertNull(lock.holder());
    lock.release(mine); // a second release is a no-op: the permit is not given back twice
    lock.acquire(8);
    Exception e = assertThrows(Exception.class, () -> lock.acquire(9));
    assertTrue(e.getCause().getMessage().contains("Cannot load store version 9"),
        e.getCause().getMessage());
  }

  @Test
  void aSecondLoadWaitsForTheTimeoutAndSaysWhoHoldsIt() {
    lock.acquire(7);
    lock.publish(new Handle(12345));
    long start = System.nanoTime();
    Exception e = assertThrows(Exception.class, () -> lock.acquire(7));
    assertTrue((System.nanoTime() - start) / 1_000_000 >= TIMEOUT_MS - 20, "waited the timeout");
    String why = e.getCause().getMessage();
    assertTrue(why.contains("another task holds it (Handle[12345]) after waiting 200 ms"), why);
    assertTrue(e.getMessage().contains("CANNOT_LOAD_STATE_STORE"), e.getMessage());
  }

  @Test
  void theSameCallerTakesOverAHoldKeptPastCommit() {
    Handle committed = new Handle(TaskLock.currentOwner());
    lock.acquire(7);
    lock.publish(committed);
    assertFalse(lock.takeOverHeldPastCommit(), "no hold past commit to take over");
    committed.heldPastCommit = true;
    assertTrue(lock.takeOverHeldPastCommit());
    assertNull(lock.holder(), "no holder until the new handle is published");
    Handle next = new Handle(TaskLock.currentOwner());
    lock.publish(next);
    lock.release(committed);
    assertSame(next, lock.holder(), "the old handle no longer releases the lock");
  }

  @Test
  void anotherOwnersHoldPastCommitIsNotTakenOver() {
    Handle other = new Handle(12345);
    other.heldPastCommit = true;
    lock.acquire(7);
    lock.publish(other);
    assertFalse(lock.takeOverHeldPastCommit());
    assertSame(other, lock.holder());
  }

  @Test
  void aFailedLoadGivesThePermitBack() {
    lock.acquire(7);
    lock.releaseAfterFailedLoad(null);
    lock.acquire(7);
    Handle published = new Handle(TaskLock.currentOwner());
    lock.publish(published);
    lock.releaseAfterFailedLoad(published);
    assertNull(lock.holder());
    lock.acquire(7);
  }

  @Test
  void closeWaitsForAnotherHolderAndRefusesRetakes() {
    lock.acquire(7);
    lock.publish(new Handle(12345));
    long start = System.nanoTime();
    assertTrue(lock.close());
    assertTrue((System.nanoTime() - start) / 1_000_000 >= TIMEOUT_MS - 20, "waited the timeout");
    assertTrue(lock.closed());
    assertFalse(lock.close(), "idempotent");
    Exception e = assertThrows(Exception.class,
        () -> lock.retake(new Handle(TaskLock.currentOwner())));
    assertEquals("store is closed", e.getCause().getMessage());
  }

  @Test
  void closeDoesNotWaitForItsOwnThreadsHold() {
    lock.acquire(7);
    lock.publish(new Handle(TaskLock.currentOwner()));
    long start = System.nanoTime();
    assertTrue(lock.close());
    assertTrue((System.nanoTime() - start) / 1_000_000 < TIMEOUT_MS, "did not wait for itself");
  }

  @Test
  void aRetakeHoldsTheLockForTheCommittedHandle() {
    Handle committed = new Handle(TaskLock.currentOwner());
    lock.retake(committed);
    assertSame(committed, lock.holder());
    lock.release(committed);
    assertNull(lock.holder());
  }
}
