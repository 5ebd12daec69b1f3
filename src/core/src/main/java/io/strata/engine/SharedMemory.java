// SPDX-License-Identifier: Apache-2.0
package io.strata.engine;

import java.util.ArrayList;
import java.util.List;
import org.rocksdb.Cache;
import org.rocksdb.LRUCache;
import org.rocksdb.RocksDB;
import org.rocksdb.WriteBufferManager;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The native memory of every {@link LocalStore} of one JVM: one RocksDB block cache (LRU) and one
 * write-buffer manager charging memtables to that cache, shared by all stores whichever provider
 * instance opened them (Spark's {@code RocksDBMemoryManager} with {@code boundedMemoryUsage}, and
 * Flink's shared managed memory, do the same).
 *
 * <p><b>What the cap covers.</b> The cache holds data blocks and, in bounded mode, the index and
 * filter blocks of every SST (as high-priority entries, not pinned), and the write-buffer manager
 * charges memtable memory to it; so block cache, memtables and table readers together stay near
 * {@link Limits#capacityBytes()}. The cache is not strict: blocks in active use by a read or
 * an iterator may take it above the cap until they are released. A strict cache would fail those
 * reads instead ("Insert failed due to LRU cache being full", RocksDB issue 8670; Spark turned
 * strict mode off for this reason, SPARK-44878), and a failed read fails the task.
 *
 * <p><b>Life cycle.</b> Reference-counted: the first store to open creates the cache and the
 * write-buffer manager with its {@link Limits}; the last store to close frees them (Spark loads
 * and unloads providers many times in one JVM). RocksDB's Java API cannot resize a live cache, so
 * while any store holds them, later stores asking for other limits share the live ones (the first
 * wins, a warning is logged once per distinct request); the next limits apply once every store
 * has closed, for example between two queries.
 *
 * <p><b>Unbounded mode</b> ({@code bounded = false}): each store gets its own {@value
 * #UNBOUNDED_CACHE_BYTES}-byte block cache, index and filter blocks live outside it, and no
 * write-buffer manager applies; the total then grows with the number of stores.
 *
 * <p>Thread-safe: acquiring and releasing are serialised by this object's monitor.
 */
public final class SharedMemory {
  private static final Logger LOG = LoggerFactory.getLogger(SharedMemory.class);

  /** Block cache of one store in unbounded mode, bytes (the size before the cache was shared). */
  public static final long UNBOUNDED_CACHE_BYTES = 16L << 20;
  /** Share of the cap the write-buffer manager lets memtables use before it forces flushes. */
  static final double WRITE_BUFFER_SHARE = 0.125;
  /** Share of the cache kept for index and filter blocks (Spark's highPriorityPoolRatio). */
  static final double HIGH_PRIORITY_SHARE = 0.1;

  private static final SharedMemory JVM = new SharedMemory();

  static {
    RocksDB.loadLibrary();
  }

  /**
   * Native memory limits of the local stores.
   *
   * @param bounded true to share one capped cache and write-buffer manager among all stores of
   *     the JVM; false for a separate, uncapped cache per store
   * @param capacityBytes the cap in bounded mode, bytes (&gt;= 1 MiB); ignored when unbounded
   */
  public record Limits(boolean bounded, long capacityBytes) {
    /** Default when nothing else is configured: bounded, 512 MiB (Spark's RocksDB uses 500 MB). */
    public static final Limits DEFAULT = new Limits(true, 512L << 20);

    /**
     * Validates the limits.
     *
     * @throws IllegalArgumentException if bounded and the capacity is below 1 MiB
     */
    public Limits {
      if (bounded && capacityBytes < (1L << 20)) {
        throw new IllegalArgumentException("memory cap must be at least 1 MiB, was "
            + capacityBytes + " bytes");
      }
    }

    /** Memtable budget of the write-buffer manager, bytes (an eighth of the cap). */
    long writeBufferBytes() {
      return (long) (capacityBytes * WRITE_BUFFER_SHARE);
    }
  }

  /**
   * Native memory held by the caches right now.
   *
   * @param capacityBytes configured capacity of the live caches, bytes (0 if none is live)
   * @param usageBytes bytes charged to the caches (blocks, and memtables in bounded mode)
   * @param pinnedBytes bytes of entries in active use, which cannot be evicted
   * @param stores stores holding a cache (open {@link LocalStore}s)
   */
  public record Usage(long capacityBytes, long usageBytes, long pinnedBytes, int stores) {
    /** Nothing allocated. */
    public static final Usage NONE = new Usage(0, 0, 0, 0);
  }

  /** The shared cache and write-buffer manager of bounded mode, while any store holds them. */
  private Pool pool;
  /** Leases of unbounded mode (each owns a cache). */
  private final List<Lease> unbounded = new ArrayList<>();
  /** Limits a store asked for while others were live; logged once each. */
  private final List<Limits> warned = new ArrayList<>();

  /** A separate instance (tests); production code uses {@link #jvm()}. */
  SharedMemory() { }

  /** The JVM-wide instance every {@link LocalStore} uses unless told otherwise. */
  public static SharedMemory jvm() {
    return JVM;
  }

  /**
   * Hands out the cache (and write-buffer manager) for one store; the caller closes the lease
   * after the store's database and options are closed.
   */
  synchronized Lease acquire(Limits limits) {
    if (!limits.bounded()) {
      Lease l = new Lease(null, new LRUCache(UNBOUNDED_CACHE_BYTES), null);
      unbounded.add(l);
      return l;
    }
    if (pool == null) {
      LRUCache cache = new LRUCache(limits.capacityBytes(), -1, false, HIGH_PRIORITY_SHARE);
      WriteBufferManager wbm = null;
      try {
        wbm = new WriteBufferManager(limits.writeBufferBytes(), cache);
      } finally {
        if (wbm == null) {
          cache.close();
        }
      }
      pool = new Pool(limits, cache, wbm);
      LOG.info("Created the shared RocksDB block cache of {} bytes ({} for memtables)",
          limits.capacityBytes(), limits.writeBufferBytes());
    } else if (!pool.limits.equals(limits) && !warned.contains(limits)) {
      warned.add(limits);
      LOG.warn("A store asked for RocksDB memory limits {} while {} stores share a cache "
          + "created with {}; the live cache is kept (it cannot be resized) and the new "
          + "limits apply once every store has closed", limits, pool.holders, pool.limits);
    }
    pool.holders++;
    return new Lease(pool, pool.cache, pool.wbm);
  }

  private synchronized void release(Lease lease) {
    if (lease.pool == null) {
      if (unbounded.remove(lease)) {
        lease.cache.close();
      }
      return;
    }
    Pool p = lease.pool;
    if (--p.holders == 0) {
      p.wbm.close();
      p.cache.close();
      if (pool == p) {
        pool = null;
      }
      warned.clear();
      LOG.debug("Freed the shared RocksDB block cache (last store closed)");
    }
  }

  /**
   * Usage of the live caches: the shared one in bounded mode plus the stores' own ones in
   * unbounded mode; {@link Usage#NONE} when no store is open.
   */
  public synchronized Usage usage() {
    long cap = 0;
    long used = 0;
    long pinned = 0;
    int stores = unbounded.size();
    if (pool != null) {
      cap += pool.limits.capacityBytes();
      used += pool.cache.getUsage();
      pinned += pool.cache.getPinnedUsage();
      stores += pool.holders;
    }
    for (Lease l : unbounded) {
      cap += UNBOUNDED_CACHE_BYTES;
      used += l.cache.getUsage();
      pinned += l.cache.getPinnedUsage();
    }
    return new Usage(cap, used, pinned, stores);
  }

  /** The live shared cache, or null if none is live (tests measure it with MemoryUtil). */
  synchronized Cache liveCache() {
    return pool == null ? null : pool.cache;
  }

  /** The limits of the live shared cache, or null if none is live (for tests and logs). */
  synchronized Limits liveLimits() {
    return pool == null ? null : pool.limits;
  }

  private static final class Pool {
    final Limits limits;
    final LRUCache cache;
    final WriteBufferManager wbm;
    int holders;

    Pool(Limits limits, LRUCache cache, WriteBufferManager wbm) {
      this.limits = limits;
      this.cache = cache;
      this.wbm = wbm;
    }
  }

  /** One store's hold on a cache; {@link #close()} is idempotent. */
  final class Lease implements AutoCloseable {
    private final Pool pool;
    private final Cache cache;
    private final WriteBufferManager wbm;
    private boolean closed;

    private Lease(Pool pool, Cache cache, WriteBufferManager wbm) {
      this.pool = pool;
      this.cache = cache;
      this.wbm = wbm;
    }

    /** True if the cache is the JVM-wide shared one (bounded mode). */
    boolean shared() {
      return pool != null;
    }

    Cache cache() {
      return cache;
    }

    /** The write-buffer manager, or null in unbounded mode. */
    WriteBufferManager writeBufferManager() {
      return wbm;
    }

    /**
     * This store's part of the cache, bytes: its own cache's usage when unbounded, else the
     * shared usage divided by the stores sharing it (as Spark's RocksDBMemoryManager reports it,
     * so that summing over stores gives the total).
     */
    long cacheShareBytes() {
      synchronized (SharedMemory.this) {
        if (closed) {
          return 0;
        }
        if (pool == null) {
          return cache.getUsage();
        }
        return cache.getUsage() / Math.max(1, pool.holders);
      }
    }

    @Override
    public void close() {
      synchronized (SharedMemory.this) {
        if (closed) {
          return;
        }
        closed = true;
        release(this);
      }
    }
  }
}
