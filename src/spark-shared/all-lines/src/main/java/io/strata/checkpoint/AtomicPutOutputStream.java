// SPDX-License-Identifier: Apache-2.0
package io.strata.checkpoint;

import io.strata.objectstore.ObjectBody;
import java.io.BufferedOutputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The stream behind {@link StrataCheckpointFileManager#createAtomic} (each Spark version's adapter
 * wraps it in that version's {@code CancellableFSDataOutputStream}): the bytes are kept (in
 * memory, or in a local temporary file beyond {@link #MEMORY_LIMIT} bytes) and sent in one PUT
 * when the stream is closed, so the object appears whole at close or not at all (S3 applies a
 * PUT atomically). {@link #cancel()} drops the bytes and writes nothing.
 *
 * <p>Close and cancel are idempotent and exclusive: the first wins, later calls do nothing (Spark
 * cancels after a failed close). A failed close leaves no object (a create-only PUT that lost, a
 * network failure after the SDK's retries) and reports the failure once.
 */
final class AtomicPutOutputStream extends OutputStream {
  private static final Logger LOG = LoggerFactory.getLogger(AtomicPutOutputStream.class);

  /** Bytes kept in memory before spilling to a temporary file (metadata files are far smaller). */
  static final int MEMORY_LIMIT = 8 << 20;

  /** Sends the finished body; called at most once, on close. */
  @FunctionalInterface
  interface Upload {
    void send(ObjectBody body) throws IOException;
  }

  private final Buffer buffer;
  private final Upload upload;
  private final String location;
  private boolean terminated;

  /**
   * @param location the object's location, for messages and logs
   * @param upload sends the body (a create-only or a plain PUT)
   */
  AtomicPutOutputStream(String location, Upload upload) {
    this(new Buffer(location), location, upload);
  }

  private AtomicPutOutputStream(Buffer buffer, String location, Upload upload) {
    this.buffer = buffer;
    this.location = location;
    this.upload = upload;
  }

  @Override
  public synchronized void write(int b) throws IOException {
    buffer.write(b);
  }

  @Override
  public synchronized void write(byte[] b, int off, int len) throws IOException {
    buffer.write(b, off, len);
  }

  @Override
  public synchronized void flush() throws IOException {
    buffer.flush();
  }

  /**
   * Sends the bytes written so far as the object, in one PUT.
   *
   * @throws org.apache.hadoop.fs.FileAlreadyExistsException if the write is create-only and the
   *     object already exists (another writer won)
   * @throws IOException if the bytes cannot be kept or sent; no object is written
   */
  @Override
  public synchronized void close() throws IOException {
    if (terminated) {
      return;
    }
    terminated = true;
    try {
      buffer.close();
      upload.send(buffer.body());
    } finally {
      buffer.discard();
    }
  }

  /** Drops the bytes; no request is sent and nothing appears. */
  public synchronized void cancel() {
    if (terminated) {
      return;
    }
    terminated = true;
    try {
      buffer.close();
    } catch (IOException e) {
      LOG.debug("Closing the buffer of cancelled write to {}: {}", location, e.toString());
    } finally {
      buffer.discard();
    }
  }

  /** Bytes in memory until {@link #MEMORY_LIMIT}, then in a temporary file. */
  static final class Buffer extends OutputStream {
    private final String location;
    private ByteArrayOutputStream memory = new ByteArrayOutputStream(1024);
    private Path file;
    private OutputStream fileOut;

    Buffer(String location) {
      this.location = location;
    }

    @Override
    public void write(int b) throws IOException {
      target(1).write(b);
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
      target(len).write(b, off, len);
    }

    @Override
    public void flush() throws IOException {
      if (fileOut != null) {
        fileOut.flush();
      }
    }

    @Override
    public void close() throws IOException {
      if (fileOut != null) {
        fileOut.close();
      }
    }

    private OutputStream target(int more) throws IOException {
      if (memory == null && fileOut == null) {
        throw new IOException("Cannot write to " + location + ": the stream is closed");
      }
      if (memory != null && memory.size() + (long) more > MEMORY_LIMIT) {
        file = Files.createTempFile("strata-checkpoint-", ".tmp");
        fileOut = new BufferedOutputStream(Files.newOutputStream(file), 64 * 1024);
        memory.writeTo(fileOut);
        memory = null;
        LOG.debug("Write to {} passed {} bytes; buffering in {}", location, MEMORY_LIMIT, file);
      }
      return memory != null ? memory : fileOut;
    }

    /** The bytes written, as an upload body. */
    ObjectBody body() throws IOException {
      return memory != null ? ObjectBody.of(memory.toByteArray()) : ObjectBody.of(file);
    }

    /** Releases the bytes (deletes the temporary file, if any). */
    void discard() {
      memory = null;
      if (fileOut != null) {
        try {
          fileOut.close();
        } catch (IOException e) {
          LOG.debug("Closing the buffer file of a write to {}: {}", location, e.toString());
        }
        fileOut = null;
      }
      if (file != null) {
        try {
          Files.deleteIfExists(file);
        } catch (IOException e) {
          LOG.warn("Cannot delete temporary file {} of a write to {}: {}", file, location,
              e.toString());
        }
        file = null;
      }
    }
  }
}
