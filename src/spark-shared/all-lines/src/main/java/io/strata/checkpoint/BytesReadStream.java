// SPDX-License-Identifier: Apache-2.0
package io.strata.checkpoint;

import java.io.EOFException;
import java.io.IOException;
import org.apache.hadoop.fs.FSInputStream;

/**
 * A checkpoint file read from memory: the bytes this JVM wrote to an immutable (create-only)
 * object, served without a request. Seekable and positioned reads work as on {@link
 * ObjectReadStream}. Not thread-safe, like every Hadoop input stream.
 */
final class BytesReadStream extends FSInputStream {
  private final byte[] bytes;
  private final String location;
  private int pos;
  private boolean closed;

  BytesReadStream(byte[] bytes, String location) {
    this.bytes = bytes;
    this.location = location;
  }

  @Override
  public synchronized int read() throws IOException {
    checkOpen();
    return pos < bytes.length ? bytes[pos++] & 0xff : -1;
  }

  @Override
  public synchronized int read(byte[] buf, int off, int len) throws IOException {
    checkOpen();
    if (len == 0) {
      return 0;
    }
    if (pos >= bytes.length) {
      return -1;
    }
    int n = Math.min(len, bytes.length - pos);
    System.arraycopy(bytes, pos, buf, off, n);
    pos += n;
    return n;
  }

  /** @throws EOFException if {@code target} is negative or past the end */
  @Override
  public synchronized void seek(long target) throws IOException {
    checkOpen();
    if (target < 0 || target > bytes.length) {
      throw new EOFException("Cannot seek to " + target + " in " + location + " ("
          + bytes.length + " bytes)");
    }
    pos = (int) target;
  }

  @Override
  public synchronized long getPos() {
    return pos;
  }

  @Override
  public boolean seekToNewSource(long targetPos) {
    return false;
  }

  @Override
  public synchronized int available() throws IOException {
    checkOpen();
    return bytes.length - pos;
  }

  @Override
  public synchronized void close() {
    closed = true;
  }

  private void checkOpen() throws IOException {
    if (closed) {
      throw new IOException("Stream for " + location + " is closed");
    }
  }
}
