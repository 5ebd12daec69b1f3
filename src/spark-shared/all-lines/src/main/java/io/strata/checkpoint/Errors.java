// SPDX-License-Identifier: Apache-2.0
package io.strata.checkpoint;

import io.strata.objectstore.ObjectAlreadyExistsException;
import io.strata.objectstore.ObjectNotFoundException;
import io.strata.objectstore.ObjectStoreInterruptedException;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.InterruptedIOException;
import org.apache.hadoop.fs.FileAlreadyExistsException;

/**
 * Turns object store failures into the exceptions Spark's checkpoint code catches by type:
 * {@link FileNotFoundException} for a missing object (Spark's metadata logs read "not found" as
 * "no such batch") and Hadoop's {@link FileAlreadyExistsException} for a create-only write that
 * lost (Spark reports it as two queries using one checkpoint), and {@link InterruptedIOException}
 * for a request interrupted by a stop (Spark's stream execution treats that type as a clean stop
 * of the query, not a failure). Other failures pass unchanged
 * ({@link io.strata.objectstore.ObjectStoreException}, an {@link IOException} naming the key and
 * endpoint).
 */
final class Errors {
  private Errors() { }

  /** An object store call. */
  @FunctionalInterface
  interface Call<T> {
    T run() throws IOException;
  }

  /** Runs {@code call}, translating its failures (see the class comment). */
  static <T> T translate(Call<T> call) throws IOException {
    try {
      return call.run();
    } catch (ObjectNotFoundException e) {
      FileNotFoundException fnf = new FileNotFoundException(e.getMessage());
      fnf.initCause(e);
      throw fnf;
    } catch (ObjectAlreadyExistsException e) {
      FileAlreadyExistsException exists = new FileAlreadyExistsException(e.getMessage());
      exists.initCause(e);
      throw exists;
    } catch (ObjectStoreInterruptedException e) {
      throw interrupted(e);
    }
  }

  private static InterruptedIOException interrupted(ObjectStoreInterruptedException e) {
    InterruptedIOException stop = new InterruptedIOException(e.getMessage());
    stop.initCause(e);
    return stop;
  }

  /**
   * Throws {@code e} from a method that declares no checked exception: unchanged, but for an
   * interrupted request, thrown as {@link InterruptedIOException} (see the class comment). Spark's {@code
   * CheckpointFileManager} is a Scala trait, whose methods declare nothing, and Spark's callers
   * catch {@link FileNotFoundException} by type, so it must propagate as itself, not wrapped.
   * Declared to return an exception so call sites read {@code throw Errors.sneaky(e)}.
   */
  static RuntimeException sneaky(IOException e) {
    Errors.<RuntimeException>throwAs(
        e instanceof ObjectStoreInterruptedException i ? interrupted(i) : e);
    return new IllegalStateException("unreachable", e);
  }

  @SuppressWarnings("unchecked")
  private static <T extends Throwable> void throwAs(Throwable t) throws T {
    throw (T) t;
  }
}
