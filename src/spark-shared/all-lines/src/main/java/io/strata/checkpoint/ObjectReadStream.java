// SPDX-License-Identifier: Apache-2.0
package io.strata.checkpoint;

import io.strata.objectstore.ObjectInfo;
import io.strata.objectstore.ObjectStore;
import java.io.EOFException;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.InputStream;
import java.util.Optional;
import org.apache.hadoop.fs.FSInputStream;

/**
 * A checkpoint file opened for reading: the whole object is requested at open (one GET, which
 * is all a sequential read of a metadata file costs); a seek elsewhere re-opens the body at the
 * new position with a ranged GET on the next read, and positioned reads work through seeks (as
 * {@link FSInputStream} implements them). The object's length is asked (one HEAD) only when a
 * seek needs it to check for end of file.
 *
 * <p>Not thread-safe, like every Hadoop input stream; Hadoop's positioned reads synchronize.
 */
final class ObjectReadStream extends FSInputStream {
  /** A forward seek up to this many bytes reads and drops them instead of a new request. */
  static final long SKIP_LIMIT = 256 * 1024;

  private final ObjectStore store;
  private final String key;
  /** The open body, positioned at {@link #pos}; null until the next read re-opens it. */
  private InputStream in;
  private long pos;
  /** The object's size in bytes, or -1 until needed. */
  private long length = -1;
  private boolean closed;

  /**
   * Opens {@code key} with a GET of the whole object.
   *
   * @throws FileNotFoundException if there is no such object
   * @throws IOException if the GET fails otherwise
   */
  ObjectReadStream(ObjectStore store, String key) throws IOException {
    this.store = store;
    this.key = key;
    this.in = Errors.translate(() -> store.get(key));
  }

  @Override
  public synchronized int read() throws IOException {
    InputStream body = body();
    if (body == null) {
      return -1;
    }
    int b = body.read();
    if (b >= 0) {
      pos++;
    }
    return b;
  }

  @Override
  public synchronized int read(byte[] buf, int off, int len) throws IOException {
    if (len == 0) {
      return 0;
    }
    InputStream body = body();
    if (body == null) {
      return -1;
    }
    int n = body.read(buf, off, len);
    if (n > 0) {
      pos += n;
    }
    return n;
  }

  /**
   * Moves to byte {@code target} of the object.
   *
   * @throws EOFException if {@code target} is negative or past the end of the object
   */
  @Override
  public synchronized void seek(long target) throws IOException {
    checkOpen();
    if (target < 0) {
      throw new EOFException("Cannot seek to " + target + " in " + store.describe(key)
          + ": negative position");
    }
    if (target == pos) {
      return;
    }
    if (in != null && target > pos && target - pos <= SKIP_LIMIT) {
      long want = target - pos;
      long dropped = drop(in, want);
      pos += dropped;
      if (dropped == want) {
        return;
      }
      length = pos; // the body ended before the target
    }
    long size = length();
    if (target > size) {
      throw new EOFException("Cannot seek to " + target + " in " + store.describe(key)
          + ": past the end of the object (" + size + " bytes)");
    }
    closeBody();
    pos = target;
  }

  @Override
  public synchronized long getPos() {
    return pos;
  }

  /** S3 keeps one copy per key as far as a client can tell: there is no other source. */
  @Override
  public boolean seekToNewSource(long targetPos) {
    return false;
  }

  @Override
  public synchronized int available() throws IOException {
    checkOpen();
    return in == null ? 0 : in.available();
  }

  @Override
  public synchronized void close() throws IOException {
    if (!closed) {
      closed = true;
      closeBody();
    }
  }

  /** The body at {@link #pos}, re-opened with a ranged GET if a seek dropped it; null at EOF. */
  private InputStream body() throws IOException {
    checkOpen();
    if (in == null) {
      long size = length();
      if (pos >= size) {
        return null;
      }
      in = Errors.translate(() -> store.getRange(key, pos, size - pos));
    }
    return in;
  }

  private long length() throws IOException {
    if (length < 0) {
      Optional<ObjectInfo> info = store.head(key);
      if (info.isEmpty()) {
        throw new FileNotFoundException("Cannot read " + store.describe(key)
            + ": the object was deleted while open");
      }
      length = info.get().size();
    }
    return length;
  }

  /** Reads and drops up to {@code n} bytes; returns how many, fewer only at end of stream. */
  private static long drop(InputStream body, long n) throws IOException {
    byte[] buf = new byte[8192];
    long done = 0;
    while (done < n) {
      int r = body.read(buf, 0, (int) Math.min(buf.length, n - done));
      if (r < 0) {
        break;
      }
      done += r;
    }
    return done;
  }

  private void closeBody() throws IOException {
    if (in != null) {
      InputStream body = in;
      in = null;
      body.close();
    }
  }

  private void checkOpen() throws IOException {
    if (closed) {
      throw new IOException("Stream for " + store.describe(key) + " is closed");
    }
  }
}
