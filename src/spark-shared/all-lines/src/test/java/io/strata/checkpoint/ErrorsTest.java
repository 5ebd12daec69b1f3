// SPDX-License-Identifier: Apache-2.0
package io.strata.checkpoint;

import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.strata.objectstore.ObjectStoreException;
import io.strata.objectstore.ObjectStoreInterruptedException;
import java.io.IOException;
import java.io.InterruptedIOException;
import org.junit.jupiter.api.Test;

/**
 * The exception types Spark's checkpoint code sees: an interrupted request (a stopped query)
 * must reach Spark as {@link InterruptedIOException}, which its stream execution treats as a
 * stop, not as a query failure; other object store failures pass unchanged.
 */
class ErrorsTest {
  private static final ObjectStoreInterruptedException STOPPED =
      new ObjectStoreInterruptedException("Cannot create s3://b/offsets/5 at x: interrupted", null);

  @Test
  void anInterruptedRequestIsThrownAsInterruptedIoException() {
    InterruptedIOException viaTranslate = assertThrows(InterruptedIOException.class,
        () -> Errors.translate(() -> {
          throw STOPPED;
        }));
    assertSame(STOPPED, viaTranslate.getCause());
    Throwable viaSneaky = assertThrows(Throwable.class, () -> {
      throw Errors.sneaky(STOPPED);
    });
    assertInstanceOf(InterruptedIOException.class, viaSneaky);
    assertSame(STOPPED, viaSneaky.getCause());
  }

  @Test
  void otherFailuresPassUnchanged() {
    ObjectStoreException other = new ObjectStoreException("Cannot read x: 500", true, null);
    assertSame(other, assertThrows(IOException.class, () -> Errors.translate(() -> {
      throw other;
    })));
    assertSame(other, assertThrows(Throwable.class, () -> {
      throw Errors.sneaky(other);
    }));
  }
}
