// SPDX-License-Identifier: Apache-2.0
package io.strata.engine;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import org.rocksdb.BlockBasedTableConfig;
import org.rocksdb.BloomFilter;
import org.rocksdb.Checkpoint;
import org.rocksdb.CompactionOptions;
import org.rocksdb.CompressionType;
import org.rocksdb.IngestExternalFileOptions;
import org.rocksdb.LiveFileMetaData;
import org.rocksdb.MemoryUsageType;
import org.rocksdb.MemoryUtil;
import org.rocksdb.Options;
import org.rocksdb.ReadOptions;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;

/**
 * One state store's local RocksDB on the executor's disk, plus the writes of the version being
 * built.
 *
 * <p>The database only ever changes by ingesting SST deltas ({@link #ingest}); the writes of the
 * version being built live in memory ({@link PendingWrites}) until {@link #writeDelta} turns them
 * into one sorted SST. So the database never holds uncommitted writes, except after a spill
 * ({@link #spillPending}), and {@link #discardPending()} is otherwise a complete abort. Memtables
 * therefore stay empty: they are sized small ({@value #WRITE_BUFFER_BYTES} bytes, at most two).
 *
 * <p>Reads ({@link #get}, {@link #scan}) see committed state overlaid with pending writes. They
 * verify RocksDB's block checksums ({@link #readOptions()}), and a read that RocksDB fails (a
 * corrupt block, an I/O error) throws {@link LocalReadException}: a scan checks its iterator's
 * status when the iterator stops, so an error never passes for the end of the data.
 *
 * <p>Native memory: the block cache and the write-buffer manager come from {@link SharedMemory}
 * (one capped cache per JVM by default); {@link #memoryUsage()} reports this store's part.
 *
 * <h2>State machine</h2>
 * <pre>
 *   open --&gt; CLEAN --spillPending--&gt; SPILLED --commitPending--&gt; CLEAN
 *              |                        |
 *              +-------- close ---------+--&gt; CLOSED
 * </pre>
 * CLEAN: the database holds exactly a committed version. SPILLED: it also holds spilled writes
 * of the version being built; only {@link #commitPending} makes it CLEAN again ({@link
 * #discardPending()} cannot take them out, the caller must drop the database), and {@link
 * #checkpoint} is refused, so no snapshot ever holds uncommitted writes. CLOSED: every call
 * throws {@link IllegalStateException}.
 *
 * <p>Threading: one task thread uses the store at a time (the provider's lock guarantees it);
 * {@link #checkpoint} and {@link #close()} may run on a maintenance thread meanwhile. Every call
 * into RocksDB holds the guard's read lock and {@link #close()} takes its write lock (Flink's
 * resource-guard idea), so close waits for calls in flight and never frees a native handle under
 * one; it then closes open iterators, the database, its options and the memory lease, in that
 * order. Ingestion, checkpoints, state changes and close are also serialised by this object's
 * monitor, so a checkpoint never sees a half-made transition.
 */
public final class LocalStore implements AutoCloseable {
  /** Memtable size, bytes: memtables stay empty (writes arrive as ingested SSTs). */
  static final long WRITE_BUFFER_BYTES = 1L << 20;
  /**
   * Largest RocksDB MANIFEST before RocksDB starts a new one, bytes (RocksDB's default is 1
   * GiB): it travels in every base snapshot's pack.
   */
  static final long MAX_MANIFEST_BYTES = 4L << 10;

  /** Life cycle of the local database; see the class comment. */
  public enum State { CLEAN, SPILLED, CLOSED }

  /**
   * Native memory one store uses, bytes.
   *
   * @param memTableBytes memtables (RocksDB {@code kMemTableTotal}; also charged to the shared
   *     cache in bounded mode)
   * @param tableReaderBytes SST readers outside the block cache ({@code kTableReadersTotal})
   * @param blockCacheBytes this store's part of the block cache: the shared usage divided by the
   *     stores sharing it (bounded mode), or its own cache's usage
   * @param pendingBytes heap bytes of the pending writes (on the JVM heap, not native)
   */
  public record MemoryUsage(long memTableBytes, long tableReaderBytes, long blockCacheBytes,
      long pendingBytes) {
    /** A closed or absent store. */
    public static final MemoryUsage NONE = new MemoryUsage(0, 0, 0, 0);

    /** Sum of all parts, bytes. */
    public long totalBytes() {
      return memTableBytes + tableReaderBytes + blockCacheBytes + pendingBytes;
    }
  }

  static {
    RocksDB.loadLibrary();
  }

  private final Path dir;
  private final Options options;
  private final SharedMemory.Lease memory;
  private final BloomFilter bloom;
  /** Options of every point read: block checksums verified. */
  private final ReadOptions pointReads;
  private final RocksDB db;
  private final PendingWrites pending = new PendingWrites();
  private final Set<MergingIterator> openIterators = ConcurrentHashMap.newKeySet();
  private final ReentrantReadWriteLock guard = new ReentrantReadWriteLock();
  private volatile State state = State.CLEAN;
  private long committedKeys;
  private long pendingKeyDelta;

  private LocalStore(Path dir, Options options, SharedMemory.Lease memory, BloomFilter bloom,
      ReadOptions pointReads, RocksDB db, long committedKeys) {
    this.dir = dir;
    this.options = options;
    this.memory = memory;
    this.bloom = bloom;
    this.pointReads = pointReads;
    this.db = db;
    this.committedKeys = committedKeys;
  }

  /**
   * Opens (creating if empty) the RocksDB database in {@code dir}: an empty directory for an empty
   * state, or one holding a restored base snapshot. Its block cache and write-buffer manager come
   * from the JVM's {@link SharedMemory}.
   *
   * @param dir database directory (created if missing)
   * @param committedKeys number of keys the database holds (from the manifest it was restored
   *     from; 0 for an empty one)
   * @param limits native memory limits (the first store of the JVM to open fixes the shared
   *     cache's; see {@link SharedMemory})
   * @throws UnreadableTableFormatException if an SST in {@code dir} is in a table format this
   *     JVM's RocksDB does not read (written on a newer Spark line); everything made so far is
   *     closed again
   * @throws IOException if RocksDB cannot open it (message names the directory); everything
   *     made so far is closed again
   */
  public static LocalStore open(Path dir, long committedKeys, SharedMemory.Limits limits)
      throws IOException {
    return open(dir, committedKeys, SharedMemory.jvm(), limits);
  }

  /** As {@link #open(Path, long, SharedMemory.Limits)} with a given memory owner (tests). */
  static LocalStore open(Path dir, long committedKeys, SharedMemory memory,
      SharedMemory.Limits limits) throws IOException {
    Files.createDirectories(dir);
    SharedMemory.Lease lease = memory.acquire(limits);
    Options options = null;
    BloomFilter bloom = null;
    ReadOptions pointReads = null;
    try {
      bloom = new BloomFilter(10, false);
      BlockBasedTableConfig table = new BlockBasedTableConfig()
          .setBlockCache(lease.cache())
          .setFilterPolicy(bloom)
          .setBlockSize(16 * 1024)
          // Set, not RocksDB's default (6 from RocksDB 9 on), so that a base snapshot taken on
          // any Spark line restores on every other (TableFormat).
          .setFormatVersion(TableFormat.WRITTEN);
      if (lease.shared()) {
        // Index and filter blocks count against the cap too; high priority keeps them cached
        // ahead of data blocks, unpinned so the cap holds (Spark also pins L0's; we do not).
        table.setCacheIndexAndFilterBlocks(true)
            .setCacheIndexAndFilterBlocksWithHighPriority(true);
      }
      options = new Options()
          .setCreateIfMissing(true)
          .setCompressionType(CompressionType.LZ4_COMPRESSION)
          .setTableFormatConfig(table)
          .setMaxOpenFiles(-1)
          .setAvoidFlushDuringShutdown(true)
          .setMaxBackgroundJobs(2)
          .setLevelCompactionDynamicLevelBytes(true)
          .setWriteBufferSize(WRITE_BUFFER_BYTES)
          .setMaxWriteBufferNumber(2)
          // Every base snapshot uploads the database's MANIFEST (in its pack): RocksDB's default
          // of 1 GiB lets it grow by every ingestion for as long as the database is open (about
          // 270 B a version), so packs, and the bytes a cold restore reads, would grow without
          // bound (issue 43). Past this size RocksDB starts a new MANIFEST holding only the
          // current files.
          .setMaxManifestFileSize(MAX_MANIFEST_BYTES);
      if (lease.writeBufferManager() != null) {
        options.setWriteBufferManager(lease.writeBufferManager());
      }
      pointReads = readOptions();
      RocksDB db = RocksDB.open(options, dir.toString());
      return new LocalStore(dir, options, lease, bloom, pointReads, db, committedKeys);
    } catch (RocksDBException | RuntimeException e) {
      if (pointReads != null) {
        pointReads.close();
      }
      if (options != null) {
        options.close();
      }
      if (bloom != null) {
        bloom.close();
      }
      lease.close();
      if (e instanceof RuntimeException re) {
        throw re;
      }
      Optional<UnreadableTableFormatException> format =
          TableFormat.unreadable(TableFormat.sstsIn(dir), dir, e);
      if (format.isPresent()) {
        throw format.get();
      }
      throw new IOException("Cannot open local RocksDB at " + dir + ": " + e.getMessage(), e);
    }
  }

  /**
   * New read options for this engine's reads: RocksDB's block checksums verified on every block
   * read from disk (RocksDB's default, set explicitly so a flipped byte in a block is found when
   * the block is read). The caller closes them.
   */
  static ReadOptions readOptions() {
    return new ReadOptions().setVerifyChecksums(true);
  }

  /** The current state; see the class comment. */
  public State state() {
    return state;
  }

  /** The database directory. */
  public Path dir() {
    return dir;
  }

  /**
   * The value of {@code key} as seen by the version being built, or null if absent.
   *
   * @throws LocalReadException if RocksDB fails the read (a corrupt block, an I/O error); the
   *     message names the directory and RocksDB's reason (which usually names the file)
   * @throws IllegalStateException if the store is closed
   */
  public byte[] get(byte[] key) {
    Lock l = enter();
    try {
      byte[] p = pending.lookup(key);
      if (p != null) {
        return PendingWrites.isTombstone(p) ? null : p;
      }
      return db.get(pointReads, key);
    } catch (RocksDBException e) {
      throw new LocalReadException(dir, "read", e.getMessage(), e);
    } finally {
      l.unlock();
    }
  }

  /**
   * Records a put in the version being built. The arrays must not be modified afterwards.
   *
   * @throws LocalReadException if the existence check against RocksDB fails (nothing is
   *     recorded then)
   */
  public void put(byte[] key, byte[] value) {
    if (get(key) == null) {
      pendingKeyDelta++;
    }
    pending.put(key, value);
  }

  /**
   * Records a removal in the version being built (a tombstone in its delta).
   *
   * @throws LocalReadException if the existence check against RocksDB fails (nothing is
   *     recorded then)
   */
  public void delete(byte[] key) {
    if (get(key) != null) {
      pendingKeyDelta--;
    }
    pending.delete(key);
  }

  /**
   * The file names (for example {@code 000012.sst}) of the SSTs that make up the database now,
   * as RocksDB's live-file metadata lists them: files a running compaction is still writing are
   * not included.
   *
   * @throws IllegalStateException if the store is closed
   */
  public Set<String> liveSstFiles() {
    Lock l = enter();
    try {
      Set<String> names = new java.util.HashSet<>();
      for (org.rocksdb.LiveFileMetaData f : db.getLiveFilesMetaData()) {
        String n = f.fileName();
        names.add(n.startsWith("/") ? n.substring(1) : n);
      }
      return names;
    } finally {
      l.unlock();
    }
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
   *
   * <p>If RocksDB fails the scan (a corrupt block, an I/O error), {@code scan}, {@code hasNext}
   * or {@code next} throws {@link LocalReadException} and the scan is closed: it never ends
   * early without an error.
   *
   * @throws LocalReadException if RocksDB fails while positioning the scan
   */
  public CloseableIterator<KeyValue> scan(byte[] prefix) {
    return scan(prefix, null, null);
  }

  /**
   * As {@link #scan(byte[])}, limited to keys in {@code [from, until)} (unsigned byte order), for
   * range scans over an order-preserving key encoding (Spark 4.2's {@code rangeScan}).
   *
   * @param prefix every key returned starts with it (a column family's key prefix)
   * @param from first key, inclusive; null to start at {@code prefix}; must start with {@code
   *     prefix}
   * @param until end key, exclusive; null for no end other than the prefix
   * @throws IllegalArgumentException if {@code from} does not start with {@code prefix}
   * @throws LocalReadException as {@link #scan(byte[])}
   */
  public CloseableIterator<KeyValue> scan(byte[] prefix, byte[] from, byte[] until) {
    if (from != null && !MergingIterator.startsWith(from, prefix)) {
      throw new IllegalArgumentException("range scan start key does not start with the scan's "
          + "prefix (" + prefix.length + " bytes)");
    }
    Lock l = enter();
    try {
      MergingIterator it = new MergingIterator(this, db, pending, guard, openIterators, prefix,
          from == null ? prefix : from, until);
      if (!it.done()) {
        openIterators.add(it);
      }
      return it;
    } finally {
      l.unlock();
    }
  }

  /**
   * Writes the pending writes as one sorted SST file (puts, and deletions as tombstones): {@link
   * #buildDelta}, then the file, if it was built in memory. Used where the file must exist at once
   * (a spill, which is ingested right away; tests).
   *
   * @param sstFile where to write it (replaced if it exists)
   * @return the file's size and checksum (and its bytes if it was built in memory), or empty if
   *     there are no pending writes
   * @throws IOException if the file system fails (the file may then exist, partly written)
   */
  public Optional<DeltaFile> writeDelta(Path sstFile) throws IOException {
    Optional<DeltaFile> d = buildDelta(sstFile);
    if (d.isPresent() && d.get().bytes() != null) {
      Files.write(sstFile, d.get().bytes());
    }
    return d;
  }

  /**
   * Builds the pending writes into one sorted SST delta (puts, and deletions as tombstones), with
   * {@link DeltaWriter} (Strata's own SST writer, hashed as it goes). A delta of at most {@value
   * #IN_MEMORY_DELTA_BYTES} bytes of pending writes (by {@link #pendingBytes()}) is built in
   * memory only: its {@link DeltaFile#bytes()} are the file, and {@code sstFile} is not written
   * (the caller uploads the bytes and writes the file where it ingests it). A larger one is
   * streamed to {@code sstFile}, hashed as it goes, and has no bytes in memory.
   *
   * @param sstFile the delta's file name and, for a large delta, where it is written (replaced if
   *     it exists)
   * @return the delta's size and checksum, or empty if there are no pending writes
   * @throws IOException if the file system fails (the file may then exist, partly written)
   * @throws IllegalStateException if the store is closed
   */
  public Optional<DeltaFile> buildDelta(Path sstFile) throws IOException {
    if (pending.isEmpty()) {
      ensureOpen();
      return Optional.empty();
    }
    Lock l = enter();
    try {
      return Optional.of(DeltaWriter.write(pending, sstFile));
    } finally {
      l.unlock();
    }
  }

  /**
   * Pending writes ({@link #pendingBytes()}) of at most this many bytes make a delta built in
   * memory ({@link #buildDelta}): 4 MiB.
   */
  public static final long IN_MEMORY_DELTA_BYTES = 4L << 20;

  /**
   * Makes the pending writes committed: ingests {@code delta} (made by {@link #writeDelta} or
   * {@link #buildDelta} from the current pending writes, or none; a delta built in memory is
   * written to its path first if it is not there) and clears them. Ingestion moves the file into
   * the database without rewriting it ({@code write_global_seqno=false}), so the bytes stay
   * identical to what was uploaded.
   *
   * @param delta the SST delta, or empty for a version without writes
   * <p>State: CLEAN or SPILLED -&gt; CLEAN.
   *
   * @throws IOException if ingestion fails; the database may then hold the delta or not, and the
   *     caller must not reuse it without a reload
   * @throws IllegalStateException if the store is closed
   */
  public synchronized void commitPending(Optional<DeltaFile> delta) throws IOException {
    ensureOpen();
    closeScans();
    if (delta.isPresent()) {
      DeltaFile d = delta.get();
      if (d.bytes() != null && !Files.exists(d.path())) { // built in memory, not written yet
        Files.write(d.path(), d.bytes());
      }
      ingest(d.path());
    }
    committedKeys += pendingKeyDelta;
    discardPending();
    transition(State.CLEAN);
  }

  /**
   * Moves the pending writes into the database before commit (a spill of a large batch):
   * ingests {@code delta}, written by {@link #writeDelta} from the current pending writes, and
   * clears them, keeping the version's key count. Afterwards the database holds writes of a
   * version not yet committed: an abort must discard the whole database, not just the pending
   * writes. Refused while a scan is open, since the scan's view of the database predates the
   * spill and would miss the spilled writes.
   *
   * <p>State: CLEAN or SPILLED -&gt; SPILLED (set before ingesting: if ingestion fails the
   * database may hold the writes).
   *
   * @throws IllegalStateException if a scan is open or the store is closed
   * @throws IOException if ingestion fails
   */
  public synchronized void spillPending(DeltaFile delta) throws IOException {
    ensureOpen();
    if (!openIterators.isEmpty()) {
      throw new IllegalStateException("cannot spill pending writes of " + dir
          + " while a scan is open");
    }
    transition(State.SPILLED);
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
   * @throws UnreadableTableFormatException as {@link #ingestAll}
   * @throws IOException if RocksDB rejects the file (message names the file and directory)
   */
  public synchronized void ingest(Path sst) throws IOException {
    ingestAll(List.of(sst));
  }

  /**
   * Ingests SST deltas in one ingestion (one MANIFEST write and one set of fsyncs instead of
   * one per file), as the newest data, in list order: where files overlap, a later file's
   * entry (value or tombstone) wins, exactly as if they were ingested one by one. Used by
   * restore to apply a version's delta chain.
   *
   * @param ssts SST files, oldest first; each is moved into the database
   * @throws UnreadableTableFormatException if a file is in a table format this JVM's RocksDB
   *     does not read (written on a newer Spark line)
   * @throws IOException if RocksDB rejects a file (message names the first file, the count
   *     and the directory)
   */
  public synchronized void ingestAll(List<Path> ssts) throws IOException {
    if (ssts.isEmpty()) {
      return;
    }
    Lock l = enter();
    try (IngestExternalFileOptions o = new IngestExternalFileOptions()) {
      o.setMoveFiles(true);
      o.setSnapshotConsistency(true);
      o.setAllowGlobalSeqNo(true);
      o.setAllowBlockingFlush(true);
      o.setWriteGlobalSeqno(false);
      db.ingestExternalFile(ssts.stream().map(Path::toString).toList(), o);
    } catch (RocksDBException e) {
      Optional<UnreadableTableFormatException> format = TableFormat.unreadable(ssts, dir, e);
      if (format.isPresent()) {
        throw format.get();
      }
      String what = ssts.size() == 1 ? "SST " + ssts.get(0)
          : ssts.size() + " SSTs starting with " + ssts.get(0);
      throw new IOException("Cannot ingest " + what + " into local RocksDB at " + dir + ": "
          + e.getMessage(), e);
    } finally {
      l.unlock();
    }
  }

  /**
   * Merges the small files of the database's bottommost level when there are too many ({@link
   * SmallFileMerge} decides): ingested deltas of an append-only key space land there and would
   * otherwise never be merged. Runs concurrently with reads, commits and checkpoints (RocksDB
   * serialises them; a checkpoint holds the files it links); not under this object's monitor,
   * so a commit's ingestion does not wait for it. Background work (maintenance).
   *
   * @return how many files were merged, 0 if no merge was due
   * @throws IOException if RocksDB fails the merge (the database is unchanged then)
   * @throws IllegalStateException if the store is closed
   */
  public int mergeSmallFiles() throws IOException {
    Lock l = enter();
    try (CompactionOptions o = new CompactionOptions()) {
      List<SmallFileMerge.LiveFile> live = new ArrayList<>();
      for (LiveFileMetaData f : db.getLiveFilesMetaData()) {
        live.add(new SmallFileMerge.LiveFile(f.fileName(), f.level(), f.size()));
      }
      SmallFileMerge.Merge due = SmallFileMerge.due(live);
      if (due.files().isEmpty()) {
        return 0;
      }
      db.compactFiles(o, db.getDefaultColumnFamily(), due.files(), due.level(), 0, null);
      return due.files().size();
    } catch (RocksDBException e) {
      throw new IOException("Cannot merge the small files of local RocksDB at " + dir + ": "
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
   * files) of the committed state in {@code target}, which must not exist. Only in state CLEAN.
   *
   * @throws IllegalStateException if the store is SPILLED (the database holds writes of a
   *     version not committed) or closed
   * @throws IOException if RocksDB fails
   */
  public synchronized void checkpoint(Path target) throws IOException {
    Lock l = enter();
    if (state == State.SPILLED) {
      l.unlock();
      throw new IllegalStateException("cannot checkpoint local RocksDB at " + dir
          + ": it holds spilled writes of a version not yet committed");
    }
    try (Checkpoint cp = Checkpoint.create(db)) {
      cp.createCheckpoint(target.toString());
    } catch (RocksDBException e) {
      throw new IOException("Cannot create a checkpoint of local RocksDB at " + dir + " in "
          + target + ": " + e.getMessage(), e);
    } finally {
      l.unlock();
    }
  }

  /**
   * Native memory this store uses (RocksDB's {@code MemoryUtil.getApproximateMemoryUsageByType}
   * for its database, plus its part of the block cache) and the heap held by pending writes.
   *
   * @return the usage in bytes; {@link MemoryUsage#NONE} once closed
   */
  public MemoryUsage memoryUsage() {
    Lock l = guard.readLock();
    l.lock();
    try {
      if (state == State.CLOSED) {
        return MemoryUsage.NONE;
      }
      Map<MemoryUsageType, Long> m =
          MemoryUtil.getApproximateMemoryUsageByType(List.of(db), Set.of());
      return new MemoryUsage(m.getOrDefault(MemoryUsageType.kMemTableTotal, 0L),
          m.getOrDefault(MemoryUsageType.kTableReadersTotal, 0L), memory.cacheShareBytes(),
          pending.approxBytes());
    } finally {
      l.unlock();
    }
  }

  /**
   * The RocksDB handle, for measuring memory across stores in tests ({@code MemoryUtil}); never
   * use it after {@link #close()}.
   */
  RocksDB db() {
    return db;
  }

  /**
   * Closes open iterators, the database, its options and its memory lease, in that order, after
   * waiting for calls in flight (state -&gt; CLOSED). Idempotent.
   */
  @Override
  public synchronized void close() {
    Lock w = guard.writeLock();
    w.lock();
    try {
      if (state == State.CLOSED) {
        return;
      }
      state = State.CLOSED;
      for (MergingIterator it : new ArrayList<>(openIterators)) {
        it.closeByStore();
      }
      try {
        db.close();
      } finally {
        pointReads.close();
        options.close();
        bloom.close();
        memory.close();
        pending.clear();
      }
    } finally {
      w.unlock();
    }
  }

  /** Moves to {@code next}; caller holds the monitor and has checked the store is open. */
  private void transition(State next) {
    if (state == State.CLOSED) {
      throw new IllegalStateException("local RocksDB at " + dir + " is closed");
    }
    state = next;
  }

  private void ensureOpen() {
    if (state == State.CLOSED) {
      throw new IllegalStateException("local RocksDB at " + dir + " is closed");
    }
  }

  /** Takes the read lock for a call into RocksDB; the caller unlocks. Throws if closed. */
  private Lock enter() {
    Lock l = guard.readLock();
    l.lock();
    if (state == State.CLOSED) {
      l.unlock();
      throw new IllegalStateException("local RocksDB at " + dir + " is closed");
    }
    return l;
  }
}
