// SPDX-License-Identifier: Apache-2.0
package io.strata.engine;

import java.nio.file.Path;
import java.util.Arrays;
import java.util.Iterator;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Set;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import org.rocksdb.ReadOptions;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.RocksIterator;

/**
 * A scan of one {@link LocalStore}: merges the pending writes (as they were when the scan
 * started) over a RocksDB iterator, in unsigned byte order; a pending write wins, a tombstone
 * hides the key. Registered with the store while open, so that the store closes it before it
 * frees the database; every call into RocksDB holds the store's guard (read lock).
 *
 * <p>Errors: a RocksDB iterator that stops ({@code isValid() == false}) may have stopped on an
 * error (a corrupt block, an I/O error), not at the end of the data; its {@code status()} says
 * which. This scan checks it every time the RocksDB side stops, and an error closes the scan and
 * becomes a {@link LocalReadException}: thrown by the constructor if positioning fails, else by
 * the next {@link #hasNext()} or {@link #next()} (the elements read before it are still
 * returned, and every later call throws it again), never a silently short scan.
 */
final class MergingIterator implements CloseableIterator<KeyValue> {
  private final LocalStore store;
  private final ReentrantReadWriteLock guard;
  private final Set<MergingIterator> open;
  private final Path dir;
  private final byte[] prefix;
  /** Exclusive end key, or null. */
  private final byte[] until;
  private final ReadOptions readOptions;
  private final RocksIterator dbIt;
  private final Iterator<Map.Entry<byte[], byte[]>> pendingIt;
  private Map.Entry<byte[], byte[]> pendingHead;
  /** Volatile: the store clears it when it closes this scan from another thread. */
  private volatile KeyValue next;
  private volatile boolean done;
  /** Set once the RocksDB side ended cleanly (its status checked). */
  private boolean dbEnded;
  /** The error the RocksDB side stopped on; thrown by every later call. */
  private volatile LocalReadException failure;
  /** Set when the store closed this scan under its user: reading on must fail, not stop. */
  private volatile boolean closedByStore;

  /**
   * Starts a scan of the keys with {@code prefix} in {@code [from, until)}; the caller holds the
   * guard's read lock and registers the scan in {@code open} unless it is already {@link #done()}.
   *
   * @throws LocalReadException if RocksDB fails while positioning (native resources released)
   */
  MergingIterator(LocalStore store, RocksDB db, PendingWrites pending,
      ReentrantReadWriteLock guard, Set<MergingIterator> open, byte[] prefix, byte[] from,
      byte[] until) {
    this.store = store;
    this.guard = guard;
    this.open = open;
    this.dir = store.dir();
    this.prefix = prefix;
    this.until = until;
    this.readOptions = LocalStore.readOptions().setFillCache(false);
    this.dbIt = db.newIterator(readOptions);
    dbIt.seek(from);
    this.pendingIt = pending.snapshot(prefix, from, until).iterator();
    this.pendingHead = pendingIt.hasNext() ? pendingIt.next() : null;
    advance();
    if (failure != null) {
      throw failure;
    }
  }

  /**
   * True if the RocksDB side is positioned on a key in range. When the RocksDB iterator stops,
   * checks its status once: an error closes the scan and is recorded in {@link #failure}.
   */
  private boolean dbValid() {
    if (dbEnded) {
      return false;
    }
    if (dbIt.isValid()) {
      return inRange(dbIt.key());
    }
    try {
      dbIt.status();
    } catch (RocksDBException e) {
      failure = new LocalReadException(dir, "scan", e.getMessage(), e);
      close();
      return false;
    }
    dbEnded = true;
    return false;
  }

  private boolean pendingValid() {
    return pendingHead != null && inRange(pendingHead.getKey());
  }

  private boolean inRange(byte[] key) {
    return startsWith(key, prefix) && (until == null || Arrays.compareUnsigned(key, until) < 0);
  }

  private void advance() {
    next = null;
    while (!done) {
      boolean d = dbValid();
      if (failure != null) {
        return; // closed by dbValid(); the caller (or the next call) throws it
      }
      boolean p = pendingValid();
      if (!d && !p) {
        close();
        return;
      }
      int cmp = !d ? 1 : !p ? -1 : Arrays.compareUnsigned(dbIt.key(), pendingHead.getKey());
      if (cmp < 0) {
        next = new KeyValue(dbIt.key(), dbIt.value());
        dbIt.next();
        return;
      }
      if (cmp == 0) {
        dbIt.next();
      }
      Map.Entry<byte[], byte[]> e = pendingHead;
      pendingHead = pendingIt.hasNext() ? pendingIt.next() : null;
      if (!PendingWrites.isTombstone(e.getValue())) {
        next = new KeyValue(e.getKey(), e.getValue());
        return;
      }
    }
  }

  @Override
  public boolean hasNext() {
    if (failure != null) {
      throw failure;
    }
    if (closedByStore) {
      throw new IllegalStateException("local RocksDB at " + dir + " was closed during a scan");
    }
    return next != null;
  }

  @Override
  public KeyValue next() {
    if (failure != null) {
      throw failure;
    }
    if (closedByStore) {
      throw new IllegalStateException("local RocksDB at " + dir + " was closed during a scan");
    }
    KeyValue r = next;
    if (r == null) {
      // The store may have closed this scan after hasNext() saw an element: say so.
      if (closedByStore) {
        throw new IllegalStateException("local RocksDB at " + dir
            + " was closed during a scan");
      }
      throw new NoSuchElementException();
    }
    Lock l = guard.readLock();
    l.lock();
    try {
      if (store.state() == LocalStore.State.CLOSED && !done) {
        throw new IllegalStateException("local RocksDB at " + dir
            + " was closed during a scan");
      }
      advance();
    } finally {
      l.unlock();
    }
    return r;
  }

  /** True once the scan ended or was closed. */
  boolean done() {
    return done;
  }

  /** Closes the scan under its user (the store is closing): reading on fails, not stops. */
  void closeByStore() {
    closedByStore = true;
    close();
  }

  @Override
  public void close() {
    // The read lock keeps LocalStore.close() (write lock) from closing the database while this
    // releases its native iterator; LocalStore.close() itself may call this (it may take the
    // read lock while holding the write lock).
    Lock l = guard.readLock();
    l.lock();
    try {
      synchronized (this) {
        if (done) {
          return;
        }
        done = true;
        next = null;
      }
      dbIt.close();
      readOptions.close();
      open.remove(this);
    } finally {
      l.unlock();
    }
  }

  /** True if {@code a} starts with {@code prefix}. */
  static boolean startsWith(byte[] a, byte[] prefix) {
    if (a.length < prefix.length) {
      return false;
    }
    return Arrays.equals(a, 0, prefix.length, prefix, 0, prefix.length);
  }
}
