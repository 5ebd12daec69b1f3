// SPDX-License-Identifier: Apache-2.0
package io.strata.checkpoint;

import org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager;

/**
 * Spark 4.1+'s cancellable stream over an {@link AtomicPutOutputStream}: {@code close()} sends
 * the one PUT (through the wrapped stream's close), {@code cancel()} drops the bytes.
 */
final class CancellablePut extends CheckpointFileManager.CancellableFSDataOutputStream {
  private final AtomicPutOutputStream put;

  CancellablePut(AtomicPutOutputStream put) {
    super(put);
    this.put = put;
  }

  /** Drops the bytes; no request is sent and nothing appears. */
  @Override
  public void cancel() {
    put.cancel();
  }
}
