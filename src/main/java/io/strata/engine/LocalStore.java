package io.strata.engine;

import io.strata.format.Checksums;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import org.rocksdb.BlockBasedTableConfig;
import org.rocksdb.BloomFilter;
import org.rocksdb.Checkpoint;
import org.rocksdb.CompressionType;
import org.rocksdb.EnvOptions;
import org.rocksdb.IngestExternalFileOptions;
import org.rocksdb.LRUCache;
import org.rocksdb.Options;
import org.rocksdb.ReadOptions;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.RocksIterator;
import org.rocksdb.SstFileWriter;

/**
 * One state store's local RocksDB on the executor's disk, plus the writes of the version being
 * built.
 *
 * <p>The database only ever changes by ingesting SST deltas ({@link #ingest}); the writes of the
 * version being built live in memory ({@link PendingWrites}) until {@link #writeDelta} turns them
 * into one sorted SST. So the database never holds uncommitted writes, and {@link
 * #discardPending()} is a complete abort.
 *
 * <p>Reads ({@link #get}, {@link #scan}) see committed state overlaid with pending writes.
 *
 * <p>Threading: one task thread uses the store at a time (the provider's lock guarantees it);
 * {@link #checkpoint} may run on a maintenance thread between tasks. Every call into RocksDB holds
 * a read lock and {@link #close()} takes the write lock (Flink's resource-guard idea), so close
 * waits for calls in flight and never frees a native handle under one; it then closes open
 * iterators, the database and its options, in that order. Use after close throws {@link
 * IllegalStateException}, never a native crash.
 */
public final class LocalStore implements AutoCloseable {
  private static final long BLOCK_CACHE_BYTES = 16L << 20;

  static {
    RocksDB.loadLibrary();
  }

  private final Path dir;
  private final Options options;
  private final LRUCache blockCache;
  private final BloomFilter bloom;
  private final RocksDB db;
  private final PendingWrites pending = new PendingWrites();
  private final Set<MergingIterator> openIterators = ConcurrentHashMap.newKeySet();
  private final ReentrantReadWriteLock guard = new ReentrantReadWriteLock();
  private volatile boolean closed;
  private long committedKeys;
  private long pendingKeyDelta;

  private LocalStore(Path dir, Options options, LRUCache cache, BloomFilter bloom, RocksDB db,
      long committedKeys) {
    this.dir = dir;
    this.options = options;
    this.blockCache = cache;
    this.bloom = bloom;
    this.db = db;
    this.committedKeys = committedKeys;
  }

  /**
   * Opens (creating if empty) the RocksDB database in {@code dir}: an empty directory for an empty
   * state, or one holding a restored base snapshot.
   *
   * @param dir database directory (created if missing)
   * @param committedKeys number of keys the database holds (from the manifest it was restored
   *     from; 0 for an empty one)
   * @throws IOException if RocksDB cannot open it (message names the directory)
   */
  public static LocalStore open(Path dir, long committedKeys) throws IOException {
    Files.createDirectories(dir);
    Options options = null;
    LRUCache cache = null;
    BloomFilter bloom = null;
    try {
      cache = new LRUCache(BLOCK_CACHE_BYTES);
      bloom = new BloomFilter(10, false);
      BlockBasedTableConfig table = new BlockBasedTableConfig()
          .setBlockCache(cache)
          .setFilterPolicy(bloom)
          .setBlockSize(16 * 1024);
      options = new Options()
          .setCreateIfMissing(true)
          .setCompressionType(CompressionType.LZ4_COMPRESSION)
          .setTableFormatConfig(table)
          .setMaxOpenFiles(-1)
          .setAvoidFlushDuringShutdown(true)
          .setMaxBackgroundJobs(2)
          .setLevelCompactionDynamicLevelBytes(true);
      RocksDB db = RocksDB.open(options, dir.toString());
      return new LocalStore(dir, options, cache, bloom, db, committedKeys);
    } catch (RocksDBException e) {
      if (options != null) {
        options.close();
      }
      if (bloom != null) {
        bloom.close();
      }
      if (cache != null) {
        cache.close();
      }
      throw new IOException("Cannot open local RocksDB at " + dir + ": " + e.getMessage(), e);
    }
  }

  /** The database directory. */
  public Path dir() {
    return dir;
  }

  /**
   * The value of {@code key} as seen by the version being built, or null if absent.
   *
   * @throws IOException if RocksDB fails
   */
  public byte[] get(byte[] key) throws IOException {
    Lock l = enter();
    try {
      byte[] p = pending.lookup(key);
      if (p != null) {
        return PendingWrites.isTombstone(p) ? null : p;
      }
      return db.get(key);
    } catch (RocksDBException e) {
      throw new IOException("Cannot read local RocksDB at " + dir + ": " + e.getMessage(), e);
    } finally {
      l.unlock();
    }
  }

  /**
   * Records a put in the version being built. The arrays must not be modified afterwards.
   *
   * @throws IOException if the existence check against RocksDB fails
   */
  public void put(byte[] key, byte[] value) throws IOException {
    if (get(key) == null) {
      pendingKeyDelta++;
    }
    pending.put(key, value);
  }

  /**
   * Records a removal in the version being built (a tombstone in its delta).
   *
   * @throws IOException if the existence check against RocksDB fails
   */
  public void delete(byte[] key) throws IOException {
    if (get(key) != null) {
      pendingKeyDelta--;
    }
    pending.delete(key);
  }

  /** Number of keys in the state as seen by the version being built. */
  public long numKeys() {
    return committedKeys + pendingKeyDelta;
  }

  /** True if the version being built has any write. */
  public boolean hasPendingWrites() {
    return !pending.isEmpty();
  }

  /** Approximate heap bytes held by pending writes. */
  public long pendingBytes() {
    return pending.approxBytes();
  }

  /** Number of distinct keys written by the version being built. */
  public int pendingEntries() {
    return pending.size();
  }

  /**
   * Drops every pending write (abort, or the start of a new version). The database is untouched.
   * Scans still open (a caller that neither drained nor closed them) are closed: a scan belongs
   * to the version being built, and a leaked one would pin RocksDB resources and block spills.
   */
  public void discardPending() {
    closeScans();
    pending.clear();
    pendingKeyDelta = 0;
  }

  private void closeScans() {
    for (MergingIterator it : new ArrayList<>(openIterators)) {
      it.close();
    }
  }

  /**
   * Iterates, in unsigned byte order, over every key starting with {@code prefix} (all keys for
   * an empty prefix), committed state overlaid with pending writes, as they are when the scan
   * starts: puts and removals made while iterating are allowed and are not seen by this scan.
   * That is the view Spark's RocksDB provider gives (a RocksDB iterator reads an implicit
   * snapshot), which operators such as transformWithState's timer loop rely on for their output.
   */
  public CloseableIterator<KeyValue> scan(byte[] prefix) {
    Lock l = enter();
    try {
      MergingIterator it = new MergingIterator(prefix);
      if (!it.done) {
        openIterators.add(it);
      }
      return it;
    } finally {
      l.unlock();
    }
  }

  /**
   * Writes the pending writes as one sorted SST file (puts, and deletions as tombstones).
   *
   * @param sstFile where to write it (must not exist)
   * @return the file's size and checksum, or empty if there are no pending writes
   * @throws IOException if RocksDB's SstFileWriter or the file system fails
   */
  public Optional<DeltaFile> writeDelta(Path sstFile) throws IOException {
    if (pending.isEmpty()) {
      ensureOpen();
      return Optional.empty();
    }
    Lock l = enter();
    try (EnvOptions env = new EnvOptions(); SstFileWriter w = new SstFileWriter(env, options)) {
      w.open(sstFile.toString());
      long entries = 0;
      for (Map.Entry<byte[], byte[]> e : pending.entries()) {
        if (PendingWrites.isTombstone(e.getValue())) {
          w.delete(e.getKey());
        } else {
          w.put(e.getKey(), e.getValue());
        }
        entries++;
      }
      w.finish();
      long size = Files.size(sstFile);
      return Optional.of(new DeltaFile(sstFile, size, Checksums.xxhash64(sstFile), entries));
    } catch (RocksDBException e) {
      throw new IOException("Cannot write SST delta " + sstFile + ": " + e.getMessage(), e);
    } finally {
      l.unlock();
    }
  }

  /**
   * Makes the pending writes committed: ingests {@code delta} (written by {@link #writeDelta}
   * from the current pending writes, or none) and clears them. Ingestion moves the file into the
   * database without rewriting it ({@code write_global_seqno=false}), so the bytes stay identical
   * to what was uploaded.
   *
   * @param delta the SST delta, or empty for a version without writes
   * @throws IOException if ingestion fails; the database may then hold the delta or not, and the
   *     caller must not reuse it without a reload
   */
  public void commitPending(Optional<DeltaFile> delta) throws IOException {
    ensureOpen();
    closeScans();
    if (delta.isPresent()) {
      ingest(delta.get().path());
    }
    committedKeys += pendingKeyDelta;
    discardPending();
  }

  /**
   * Moves the pending writes into the database before commit (a spill of a large batch):
   * ingests {@code delta}, written by {@link #writeDelta} from the current pending writes, and
   * clears them, keeping the version's key count. Afterwards the database holds writes of a
   * version not yet committed: an abort must discard the whole database, not just the pending
   * writes. Refused while a scan is open, since the scan's view of the database predates the
   * spill and would miss the spilled writes.
   *
   * @throws IllegalStateException if a scan is open
   * @throws IOException if ingestion fails
   */
  public void spillPending(DeltaFile delta) throws IOException {
    ensureOpen();
    if (!openIterators.isEmpty()) {
      throw new IllegalStateException("cannot spill pending writes of " + dir
          + " while a scan is open");
    }
    ingest(delta.path());
    pending.clear();
  }

  /** Number of scans not yet closed (a spill waits until there are none). */
  public int openScans() {
    return openIterators.size();
  }

  /**
   * Ingests an SST file as the newest data (used for restore and commit).
   *
   * @throws IOException if RocksDB rejects the file (message names the file and directory)
   */
  public synchronized void ingest(Path sst) throws IOException {
    Lock l = enter();
    try (IngestExternalFileOptions o = new IngestExternalFileOptions()) {
      o.setMoveFiles(true);
      o.setSnapshotConsistency(true);
      o.setAllowGlobalSeqNo(true);
      o.setAllowBlockingFlush(true);
      o.setWriteGlobalSeqno(false);
      db.ingestExternalFile(List.of(sst.toString()), o);
    } catch (RocksDBException e) {
      throw new IOException("Cannot ingest SST " + sst + " into local RocksDB at " + dir + ": "
          + e.getMessage(), e);
    } finally {
      l.unlock();
    }
  }

  /** Sets the committed key count (after a restore that ingested deltas). */
  public void setCommittedKeys(long keys) {
    this.committedKeys = keys;
  }

  /**
   * Creates a RocksDB checkpoint (hard links to the live SST files plus copies of the metadata
   * files) of the committed state in {@code target}, which must not exist.
   *
   * @throws IOException if RocksDB fails
   */
  public synchronized void checkpoint(Path target) throws IOException {
    Lock l = enter();
    try (Checkpoint cp = Checkpoint.create(db)) {
      cp.createCheckpoint(target.toString());
    } catch (RocksDBException e) {
      throw new IOException("Cannot create a checkpoint of local RocksDB at " + dir + " in "
          + target + ": " + e.getMessage(), e);
    } finally {
      l.unlock();
    }
  }

  /** Approximate native memory used (block cache, memtables, table readers), in bytes. */
  public long memoryUsageBytes() {
    Lock l = guard.readLock();
    l.lock();
    try {
      if (closed) {
        return 0;
      }
      long sum = blockCache.getUsage() + pending.approxBytes();
      for (String p : new String[] {"rocksdb.cur-size-all-mem-tables",
          "rocksdb.estimate-table-readers-mem"}) {
        try {
          sum += db.getLongProperty(p);
        } catch (RocksDBException ignored) {
          // property unavailable: leave it out of the estimate
        }
      }
      return sum;
    } finally {
      l.unlock();
    }
  }

  /** Closes iterators, the database and its options, in that order. Idempotent. */
  @Override
  public synchronized void close() {
    Lock w = guard.writeLock();
    w.lock();
    try {
      if (closed) {
        return;
      }
      closed = true;
      for (MergingIterator it : new ArrayList<>(openIterators)) {
        it.closedByStore = true;
        it.close();
      }
      db.close();
      options.close();
      bloom.close();
      blockCache.close();
      pending.clear();
    } finally {
      w.unlock();
    }
  }

  private void ensureOpen() {
    if (closed) {
      throw new IllegalStateException("local RocksDB at " + dir + " is closed");
    }
  }

  /** Takes the read lock for a call into RocksDB; the caller unlocks. Throws if closed. */
  private Lock enter() {
    Lock l = guard.readLock();
    l.lock();
    if (closed) {
      l.unlock();
      throw new IllegalStateException("local RocksDB at " + dir + " is closed");
    }
    return l;
  }

  /** Merges pending writes over a RocksDB iterator; pending wins, tombstones hide keys. */
  private final class MergingIterator implements CloseableIterator<KeyValue> {
    private final byte[] prefix;
    private final ReadOptions readOptions;
    private final RocksIterator dbIt;
    private final Iterator<Map.Entry<byte[], byte[]>> pendingIt;
    private Map.Entry<byte[], byte[]> pendingHead;
    private KeyValue next;
    private volatile boolean done;
    /** Set when the store closed this scan under its user: reading on must fail, not stop. */
    private volatile boolean closedByStore;

    MergingIterator(byte[] prefix) {
      this.prefix = prefix;
      this.readOptions = new ReadOptions().setFillCache(false);
      this.dbIt = db.newIterator(readOptions);
      dbIt.seek(prefix);
      this.pendingIt = pending.snapshot(prefix).iterator();
      this.pendingHead = pendingIt.hasNext() ? pendingIt.next() : null;
      advance();
    }

    private boolean dbValid() {
      return dbIt.isValid() && startsWith(dbIt.key(), prefix);
    }

    private boolean pendingValid() {
      return pendingHead != null && startsWith(pendingHead.getKey(), prefix);
    }

    private void advance() {
      next = null;
      while (!done) {
        boolean d = dbValid();
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
      if (closedByStore) {
        throw new IllegalStateException("local RocksDB at " + dir + " was closed during a scan");
      }
      return next != null;
    }

    @Override
    public KeyValue next() {
      if (closedByStore) {
        throw new IllegalStateException("local RocksDB at " + dir + " was closed during a scan");
      }
      if (next == null) {
        throw new NoSuchElementException();
      }
      KeyValue r = next;
      Lock l = guard.readLock();
      l.lock();
      try {
        if (closed && !done) {
          throw new IllegalStateException("local RocksDB at " + dir
              + " was closed during a scan");
        }
        advance();
      } finally {
        l.unlock();
      }
      return r;
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
        openIterators.remove(this);
      } finally {
        l.unlock();
      }
    }
  }

  private static boolean startsWith(byte[] a, byte[] prefix) {
    if (a.length < prefix.length) {
      return false;
    }
    return Arrays.equals(a, 0, prefix.length, prefix, 0, prefix.length);
  }
}
