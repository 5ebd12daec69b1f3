// SPDX-License-Identifier: Apache-2.0
package io.strata.objectstore;

import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * A JVM-wide, reference-counted cache of {@link S3Client}s keyed by {@link S3Settings}: every
 * object store with equal settings shares one client (one connection pool). A client is built
 * by the first {@link #lease} and closed when its last lease is released; nothing outlives its
 * users, so a provider can be loaded and unloaded many times in one JVM.
 *
 * <p>Thread-safe. Building a client does no network I/O; it happens under the cache lock, which
 * is simple and cheap enough for the few distinct settings a JVM sees. Closing happens outside
 * the lock.
 */
public final class SharedS3Clients {
  private static final Logger LOG = LoggerFactory.getLogger(SharedS3Clients.class);

  private static final Object LOCK = new Object();
  /** Guarded by {@link #LOCK}. */
  private static final Map<S3Settings, Entry> ENTRIES = new HashMap<>();

  private SharedS3Clients() { }

  /**
   * Leases the client for {@code settings}, building it with {@link S3ClientFactory#create} if no
   * lease is open for equal settings. The caller must {@link Lease#close()} the lease exactly
   * once when done (further closes are ignored).
   *
   * @throws IllegalArgumentException if the settings are invalid (see {@link
   *     S3ClientFactory#create})
   */
  public static Lease lease(S3Settings settings) {
    Objects.requireNonNull(settings, "settings");
    synchronized (LOCK) {
      Entry entry = ENTRIES.get(settings);
      if (entry == null) {
        entry = new Entry(S3ClientFactory.create(settings));
        ENTRIES.put(settings, entry);
        LOG.debug("Built S3 client for {}", settings);
      }
      entry.leases++;
      return new Lease(settings, entry);
    }
  }

  /** Number of open leases on the client for {@code settings}; 0 if none is cached. For tests. */
  static int leases(S3Settings settings) {
    synchronized (LOCK) {
      Entry entry = ENTRIES.get(settings);
      return entry == null ? 0 : entry.leases;
    }
  }

  private static void release(S3Settings settings, Entry entry) {
    S3ClientFactory.OwnedClient toClose = null;
    synchronized (LOCK) {
      entry.leases--;
      if (entry.leases == 0) {
        ENTRIES.remove(settings, entry);
        toClose = entry.owned;
      }
    }
    if (toClose != null) {
      LOG.debug("Closing S3 client for {}", settings);
      toClose.close();
    }
  }

  private static final class Entry {
    final S3ClientFactory.OwnedClient owned;
    final S3Client client;
    /** Guarded by {@link #LOCK}. */
    int leases;

    Entry(S3ClientFactory.OwnedClient owned) {
      this.owned = owned;
      this.client = owned.client();
    }
  }

  /** One user's hold on a shared client. Closing it releases the hold; idempotent. */
  public static final class Lease implements AutoCloseable {
    private final S3Settings settings;
    private final Entry entry;
    private final AtomicBoolean released = new AtomicBoolean();

    private Lease(S3Settings settings, Entry entry) {
      this.settings = settings;
      this.entry = entry;
    }

    /**
     * The shared client. Do not close it; close the lease.
     *
     * @throws IllegalStateException if this lease was released
     */
    public S3Client client() {
      if (released.get()) {
        throw new IllegalStateException("S3 client lease for " + settings + " was released");
      }
      return entry.client;
    }

    /** The settings the client was built from. */
    public S3Settings settings() {
      return settings;
    }

    /** Releases this lease; the client closes when the last lease on it is released. */
    @Override
    public void close() {
      if (released.compareAndSet(false, true)) {
        release(settings, entry);
      }
    }
  }
}
