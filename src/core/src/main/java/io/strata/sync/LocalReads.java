// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import io.strata.engine.CloseableIterator;
import io.strata.engine.KeyValue;
import io.strata.engine.LocalReadException;
import io.strata.engine.LocalStore;
import java.io.IOException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What a failed read of the local database does: marks the database damaged ({@link
 * LocalIntegrity#markDamaged}, under the store's monitor, if it is still the live one), so the
 * next load drops it and restores the version from the object store, and turns the engine's
 * {@link LocalReadException} into a {@link LocalStateReadException} naming the store and
 * version. Scans are wrapped so that an error in {@code hasNext} or {@code next} does the same,
 * once: a scan that failed throws the same exception again on every later call.
 */
final class LocalReads {
  private static final Logger LOG = LoggerFactory.getLogger(LocalReads.class);

  private final StoreIdentity identity;
  private final LocalDatabase db;
  private final LocalIntegrity integrity;
  private final StoreGuard guard;

  /** @param guard the store's monitor, which guards {@code db} and {@code integrity} */
  LocalReads(StoreIdentity identity, LocalDatabase db, LocalIntegrity integrity, StoreGuard guard) {
    this.identity = identity;
    this.db = db;
    this.integrity = integrity;
    this.guard = guard;
  }

  /**
   * Marks {@code failed} damaged if it is still the live database, and returns the exception to
   * throw. The caller holds no lock of {@code failed} (the engine releases them before it
   * throws), so taking the monitor here cannot deadlock with a close waiting for them.
   */
  LocalStateReadException failed(LocalStore failed, LocalReadException e) {
    long version;
    synchronized (guard) {
      boolean live = db.live() == failed;
      version = live ? db.version() : -1;
      if (live) {
        integrity.markDamaged("a read found the local database damaged: " + e.reason());
      }
    }
    LOG.warn("{} version {}: reading local RocksDB at {} failed; the database is marked damaged "
        + "and the next load restores the version from the object store: {}", identity, version,
        failed.dir(), e.reason());
    return new LocalStateReadException(identity, version, e);
  }

  /** {@link LocalStore#get}, failing as {@link #failed}. */
  byte[] get(LocalStore l, byte[] key) {
    try {
      return l.get(key);
    } catch (LocalReadException e) {
      throw failed(l, e);
    }
  }

  /** A step that reads {@code l} and may throw {@link LocalReadException}. */
  interface Read<T> {
    /**
     * Runs the step.
     *
     * @throws IOException as the step does
     */
    T run() throws IOException;
  }

  /**
   * Runs {@code step}, which reads {@code l}; its {@link LocalReadException} fails as {@link
   * #failed}.
   *
   * @throws IOException as {@code step} does
   */
  <T> T reading(LocalStore l, Read<T> step) throws IOException {
    try {
      return step.run();
    } catch (LocalReadException e) {
      throw failed(l, e);
    }
  }

  /** {@link LocalStore#put} (its existence check reads), failing as {@link #failed}. */
  void put(LocalStore l, byte[] key, byte[] value) {
    try {
      l.put(key, value);
    } catch (LocalReadException e) {
      throw failed(l, e);
    }
  }

  /** {@link LocalStore#delete} (its existence check reads), failing as {@link #failed}. */
  void delete(LocalStore l, byte[] key) {
    try {
      l.delete(key);
    } catch (LocalReadException e) {
      throw failed(l, e);
    }
  }

  /** {@link LocalStore#scan(byte[], byte[], byte[])}, every step failing as {@link #failed}. */
  CloseableIterator<KeyValue> scan(LocalStore l, byte[] prefix, byte[] from, byte[] until) {
    CloseableIterator<KeyValue> it;
    try {
      it = l.scan(prefix, from, until);
    } catch (LocalReadException e) {
      throw failed(l, e);
    }
    return new CloseableIterator<>() {
      /** The scan's failure: later calls throw it again, not re-logged or re-wrapped. */
      private LocalStateReadException failure;

      @Override
      public boolean hasNext() {
        if (failure != null) {
          throw failure;
        }
        try {
          return it.hasNext();
        } catch (LocalReadException e) {
          failure = failed(l, e);
          throw failure;
        }
      }

      @Override
      public KeyValue next() {
        if (failure != null) {
          throw failure;
        }
        try {
          return it.next();
        } catch (LocalReadException e) {
          failure = failed(l, e);
          throw failure;
        }
      }

      @Override
      public void close() {
        it.close();
      }
    };
  }
}
