// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.function.Function;

/** Waiting for the tasks a store runs on its pools: the one place that unwraps their failures. */
final class Futures {
  private Futures() { }

  /**
   * Waits for every future, in list order, and returns their results in that order. On an
   * interrupt or a failed future, every future is cancelled (with interruption) first.
   *
   * @param interrupted the message of the {@link InterruptedIOException} thrown if the waiting
   *     thread is interrupted (its interrupt flag is set again)
   * @param failure what to throw for the cause of the first failed future (it may also throw a
   *     {@link RuntimeException} itself, see {@link #rethrow})
   * @throws IOException {@code failure}'s result, or the {@link InterruptedIOException}
   */
  static <T> List<T> awaitAll(List<Future<T>> futures, String interrupted,
      Function<Throwable, IOException> failure) throws IOException {
    List<T> out = new ArrayList<>(futures.size());
    try {
      for (Future<T> f : futures) {
        out.add(f.get());
      }
      return out;
    } catch (InterruptedException e) {
      futures.forEach(f -> f.cancel(true));
      Thread.currentThread().interrupt();
      throw new InterruptedIOException(interrupted);
    } catch (ExecutionException e) {
      futures.forEach(f -> f.cancel(true));
      throw failure.apply(e.getCause());
    }
  }

  /**
   * Waits for {@code future} however often the thread is interrupted (the work it waits for
   * must not be abandoned: a database must not be closed under a running ingestion), then sets
   * the interrupt flag again if it was interrupted.
   *
   * @param failure what to throw for the cause of a failed future, as in {@link #awaitAll}
   * @throws IOException {@code failure}'s result
   */
  static <T> T awaitUninterruptibly(Future<T> future, Function<Throwable, IOException> failure)
      throws IOException {
    boolean interrupted = false;
    try {
      while (true) {
        try {
          return future.get();
        } catch (InterruptedException e) {
          interrupted = true;
        } catch (ExecutionException e) {
          throw failure.apply(e.getCause());
        }
      }
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /**
   * The usual {@code failure} of {@link #awaitAll}: an {@link IOException} cause is returned as
   * it is, a {@link RuntimeException} is thrown as it is, anything else is wrapped in an {@link
   * IOException} whose message is {@code prefix} followed by the cause.
   */
  static Function<Throwable, IOException> rethrow(String prefix) {
    return c -> {
      if (c instanceof IOException io) {
        return io;
      }
      if (c instanceof RuntimeException re) {
        throw re;
      }
      return new IOException(prefix + c, c);
    };
  }
}
