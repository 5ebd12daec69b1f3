// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** The commit report that runs beside a commit's PUT ({@link CommitReports}). */
class CommitReportsTest {

  @Test
  void aReportRunsOnItsOwnThreadAndIsAwaitedToItsEnd() throws Exception {
    CountDownLatch release = new CountDownLatch(1);
    AtomicReference<String> ranOn = new AtomicReference<>();
    Future<?> report = CommitReports.start(() -> {
      ranOn.set(Thread.currentThread().getName());
      try {
        release.await(10, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    });
    assertNotNull(report);
    assertFalse(report.isDone(), "the report runs beside the caller, which goes on");
    release.countDown();
    assertTrue(CommitReports.await(report));
    assertTrue(report.isDone());
    assertTrue(ranOn.get().startsWith("strata-commit-report-"), ranOn.get());
    assertNotEquals(Thread.currentThread().getName(), ranOn.get());
  }

  @Test
  void aReportThatFailedIsNotCountedAsDone() {
    Future<?> report = CommitReports.start(() -> {
      throw new IllegalStateException("the coordinator is gone");
    });
    assertFalse(CommitReports.await(report), "the caller must report again");
  }

  @Test
  void anInterruptWhileWaitingIsKeptAndTheReportStillAwaited() throws Exception {
    CountDownLatch started = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    Future<?> report = CommitReports.start(() -> {
      started.countDown();
      try {
        release.await(10, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    });
    assertTrue(started.await(10, TimeUnit.SECONDS));
    AtomicReference<Boolean> result = new AtomicReference<>();
    AtomicReference<Boolean> interruptKept = new AtomicReference<>();
    Thread waiter = new Thread(() -> {
      result.set(CommitReports.await(report));
      interruptKept.set(Thread.currentThread().isInterrupted());
    });
    waiter.start();
    waiter.interrupt();
    Thread.sleep(50);
    assertTrue(waiter.isAlive(), "an interrupt does not end the wait before the report ends");
    release.countDown();
    waiter.join(10_000);
    assertEquals(Boolean.TRUE, result.get());
    assertEquals(Boolean.TRUE, interruptKept.get());
  }
}
