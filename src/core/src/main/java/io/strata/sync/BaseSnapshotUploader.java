// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import io.strata.config.StrataConf;
import io.strata.engine.LocalFiles;
import io.strata.format.BaseSnapshot;
import io.strata.format.Checksums;
import io.strata.format.Delta;
import io.strata.format.FileRef;
import io.strata.format.Manifest;
import io.strata.format.PublishedSnapshot;
import io.strata.format.Reachability;
import io.strata.format.StoreLayout;
import io.strata.objectstore.ObjectBody;
import io.strata.objectstore.ObjectStore;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.IntPredicate;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Uploads base snapshots of one store and holds the one waiting to be published.
 *
 * <p>{@link #upload} reads a local RocksDB checkpoint of a committed version and uploads only the
 * SSTs the object store lacks (an SST whose content a file of that version's manifest already
 * holds, such as an ingested delta, is named again, byte for byte), plus one pack of the small
 * RocksDB metadata files. It remembers the content id (length, XXHash64) of every local SST it
 * hashed, so each file is hashed once per local database.
 *
 * <p>Once its files are durable, {@link #run} publishes the snapshot ({@link
 * PublishedSnapshots#write}): every later cold load whose lineage it lies on may restore from it.
 *
 * <p>The uploaded snapshot also waits ({@link #offer}) for the next commit, whose manifest names
 * it as its base ({@link #pending}, {@link #published}), however long that commit takes to come:
 * once published, garbage collection keeps the snapshot's object and files while a retained
 * version can use it ({@code Reachability}), and this instance's newest version can (the
 * snapshot lies on its lineage), so adopting it is safe at any age. That keeps manifests short
 * and spares maintenance a new upload when commits come further apart than the grace period.
 * What is bounded instead is the upload: one that took half the grace period or more from the
 * moment its checkpoint was taken to its publication is never offered, since a round that
 * listed before the publication may have found its first files old and unnamed (docs/format.md,
 * "The grace period").
 *
 * <p>Threading: {@link #upload} runs outside the store's monitor (one at a time); the methods
 * about the pending snapshot and the running upload assert that the caller holds the store's
 * {@link StoreGuard}, which guards them.
 */
final class BaseSnapshotUploader {
  private static final Logger LOG = LoggerFactory.getLogger(BaseSnapshotUploader.class);
  /** The largest SST carried inline in its published snapshot object, bytes. */
  static final long INLINE_FILE_MAX = 32L << 20;
  /** The most SST bytes carried inline in one published snapshot object. */
  static final long INLINE_TOTAL_MAX = 64L << 20;

  /**
   * An upload found an SST of the live database corrupt (it is never uploaded): the database
   * must be dropped and restored from the object store.
   */
  static final class CorruptLocalSstException extends IOException {
    private static final long serialVersionUID = 1L;
    private final String reason;

    CorruptLocalSstException(String message, IOException cause) {
      super(message, cause);
      this.reason = cause.getMessage();
    }

    /** What the verification found, naming the file. */
    String reason() {
      return reason;
    }
  }

  /**
   * A published base snapshot waiting for the next commit to name it as its manifest's base.
   *
   * @param generation the local database it was taken from
   */
  private record Pending(BaseSnapshot snapshot, int generation) { }

  /**
   * A local checkpoint of a committed version, taken under the store's monitor, to upload.
   *
   * @param checkpoint the checkpoint's directory (deleted by {@link #run})
   * @param manifest the manifest of the version it holds
   * @param generation the local database it was taken from
   * @param startedMillis wall time (the store's clock) when it was taken, before any upload
   * @param startedNanos {@link System#nanoTime()} at the same moment
   */
  record Job(Path checkpoint, Manifest manifest, int generation, long startedMillis,
      long startedNanos) { }

  private final StoreIdentity identity;
  private final ObjectStore objects;
  private final TransferPools pools;
  private final GcTrigger gc;
  private final PublishedSnapshots published;
  private final LocalIntegrity integrity;
  private final Clock clock;
  private final long gracePeriodMillis;
  /**
   * (length, checksum) of local SST files already hashed, keyed by {@code <generation>/<file
   * name>}: RocksDB reuses file names across databases, so a name is only an identity within one
   * local database (one generation).
   */
  private final Map<String, FileRef.ContentId> localFileIds = new ConcurrentHashMap<>();
  private Pending pending;
  /** The checkpoint a running upload reads, or null. */
  private Path running;
  private final StoreGuard guard;

  /**
   * @param pools the store's pools (the uploads run on its transfer pool; once it is closed, an
   *     upload stops)
   * @param gc told of the files of a snapshot dropped unpublished
   * @param integrity told when an upload finds a local SST corrupt
   * @param clock the wall clock of the grace period (an upload's duration)
   * @param gracePeriodMillis the garbage-collection grace period, ms
   * @param published where each uploaded snapshot is published for every later load
   * @param guard the store's monitor, which guards the pending snapshot and the running upload
   */
  BaseSnapshotUploader(StoreIdentity identity, ObjectStore objects, TransferPools pools,
      GcTrigger gc, LocalIntegrity integrity, Clock clock, long gracePeriodMillis,
      PublishedSnapshots published, StoreGuard guard) {
    this.published = published;
    this.guard = guard;
    this.identity = identity;
    this.objects = objects;
    this.pools = pools;
    this.gc = gc;
    this.integrity = integrity;
    this.clock = clock;
    this.gracePeriodMillis = gracePeriodMillis;
  }

  /** The checkpoint a running upload reads, or null. */
  Path running() {
    guard.assertHeld();
    return running;
  }

  /**
   * Waits, on the store's monitor (held by the caller), up to {@code timeoutMs} for a running
   * upload to stop (the store's close cancelled its transfers); warns if it does not.
   *
   * @return true if the wait was interrupted (the caller restores the interrupt flag)
   * @throws IllegalStateException if the caller does not hold the store's monitor
   */
  boolean awaitStopped(long timeoutMs) {
    StoreGuard.Wait w = guard.awaitUntil(() -> running == null, timeoutMs);
    if (w == StoreGuard.Wait.TIMED_OUT) {
      LOG.warn("{}: closing while the upload of a base snapshot still runs after {} ms",
          identity, timeoutMs);
    }
    return w == StoreGuard.Wait.INTERRUPTED;
  }

  /**
   * Waits, on the store's monitor (held by the caller), up to {@code timeoutMs} for a running
   * upload to finish on its own (the store's close lets it publish before cancelling it).
   *
   * @return true if the wait was interrupted (the caller restores the interrupt flag)
   * @throws IllegalStateException if the caller does not hold the store's monitor
   */
  boolean awaitFinished(long timeoutMs) {
    StoreGuard.Wait w = guard.awaitUntil(() -> running == null, timeoutMs);
    if (w == StoreGuard.Wait.TIMED_OUT) {
      LOG.info("{}: the upload of a base snapshot did not finish within {} ms of close; "
          + "cancelling it", identity, timeoutMs);
    }
    return w == StoreGuard.Wait.INTERRUPTED;
  }

  /**
   * Gives up {@code job} before it ran (its thread could not start): deletes its checkpoint and
   * clears {@link #running()}.
   *
   * @throws IllegalStateException if the caller does not hold the store's monitor
   */
  void abandon(Job job) {
    guard.assertHeld();
    LocalIntegrity.deleteQuietly(identity, job.manifest().version(), job.checkpoint());
    running = null;
    UploadsAtExit.finished(this);
    guard.signalAll();
  }

  /** Records that {@code job}'s upload is about to run ({@link #run}). */
  void started(Job job) {
    guard.assertHeld();
    running = job.checkpoint();
    UploadsAtExit.started(this); // a JVM exit lets it finish and publish (Spark closes no store)
  }

  /**
   * Runs {@code job} outside the store's monitor: uploads its checkpoint ({@link #upload}),
   * then, under the monitor, hands the snapshot to the next commit ({@link #offer}) if the local
   * database is still the one it was taken from ({@code current}), else leaves its files as
   * orphans. An upload that finds a local SST corrupt marks that database damaged (the next load
   * restores from the object store). Always deletes the checkpoint and, under the monitor,
   * clears {@link #running()} and wakes the monitor's waiters (the store's close).
   *
   * @param current tests, under the monitor, whether a generation is still the live, open one
   * @return the uploaded snapshot (offered, or orphaned if the database changed meanwhile)
   * @throws IOException as {@link #upload} (nothing is offered then)
   */
  BaseSnapshot run(Job job, IntPredicate current) throws IOException {
    try {
      BaseSnapshot snapshot;
      try {
        String key = published.newKey(job.manifest().version(),
            PublishedSnapshot.tipOf(job.manifest()).hash());
        Upload u = upload(job.checkpoint(), job.manifest(), job.generation(), key);
        snapshot = u.snapshot();
        // Published last, in the PUT that carries its inline files, after every other file it
        // names is durable: from now on any load whose lineage it lies on may restore from it
        // (docs/format.md, "Published snapshots"). On the transfer pool, so that close() can
        // interrupt it.
        PublishedSnapshot p = PublishedSnapshot.of(job.manifest(), snapshot, clock.millis());
        await(List.of(pools.transfers().submit(() -> {
          published.write(key, p, u.inline());
          return key;
        })), "publish base snapshot of version " + job.manifest().version());
        LOG.debug("{} version {}: published base snapshot as {}", identity,
            job.manifest().version(), objects.describe(key));
      } catch (IOException | RuntimeException e) {
        synchronized (guard) {
          if (e instanceof CorruptLocalSstException c && current.test(job.generation())) {
            integrity.markDamaged(c.reason());
          }
          gc.orphansLeft(); // the files uploaded before the failure
        }
        throw e;
      }
      long took = elapsedMillis(job);
      synchronized (guard) {
        if (!current.test(job.generation())) {
          gc.orphansLeft();
        } else if (took >= gracePeriodMillis / 2) {
          // Its first files were written before anything named them, long enough ago that a
          // round which listed before the publication may have deleted them: published for the
          // loads (which fall back to their manifest's chain if a file is gone), never adopted.
          LOG.warn("{} version {}: the base snapshot took {} ms to upload and publish, more "
              + "than half the garbage-collection grace period ({}); no commit adopts it as its "
              + "base (cold loads may still restore from it)", identity,
              job.manifest().version(), took, StrataConf.GC_GRACE_PERIOD.fullKey());
        } else {
          offer(snapshot, job.generation());
        }
      }
      return snapshot;
    } finally {
      LocalIntegrity.deleteQuietly(identity, job.manifest().version(), job.checkpoint());
      synchronized (guard) {
        running = null;
        guard.signalAll();
      }
      UploadsAtExit.finished(this);
    }
  }

  /**
   * A base snapshot ready to publish: its files, and the bytes of those it names inside its
   * published snapshot object, back to back.
   *
   * @param snapshot the snapshot (inline files at their offsets in {@code inline})
   * @param inline the inline files' bytes, to precede the published snapshot's JSON
   */
  record Upload(BaseSnapshot snapshot, ObjectBody inline) { }

  /**
   * Uploads what the checkpoint in {@code cpDir} of the version {@code m} describes needs beyond
   * its published snapshot object {@code key}, and lays out that object's inline files. An SST
   * whose content (length, XXHash64) a file {@code m} names in a version object of its chain or
   * in an {@code sst/} object already holds is not uploaded again; only files {@code m} names
   * are reused, never older ones: a retained manifest names them, so no garbage-collection round
   * can delete them while this snapshot waits to be published. A delta that {@code m}'s base
   * names inside a version object, and a file it names inside its published snapshot object,
   * are uploaded again, so that no base keeps such an object older than the previous base
   * alive.
   *
   * <p>Of the new SSTs (compaction outputs), the smallest go inline (each at most {@value
   * #INLINE_FILE_MAX} bytes, {@value #INLINE_TOTAL_MAX} bytes in all), with RocksDB's small
   * files ({@code MANIFEST-*}, {@code CURRENT}, {@code OPTIONS-*}); the rest, and the files
   * carried from the base's version objects or snapshot object, get one {@code sst/} object
   * each, uploaded in parallel here (later snapshots reuse those). So a snapshot of a store of up to about 64 MiB is one object,
   * written by one PUT ({@link PublishedSnapshots#write}).
   *
   * @param generation the local database the checkpoint was taken from
   * @param key the key of its published snapshot ({@link PublishedSnapshots#newKey})
   * @return the snapshot, not yet published, and its inline bytes
   * @throws CorruptLocalSstException if a new SST fails its RocksDB block checksums
   * @throws IOException if reading the checkpoint or an upload fails (uploaded files are left
   *     unreferenced)
   * @throws IllegalStateException if the store closed during the upload
   */
  Upload upload(Path cpDir, Manifest m, int generation, String key) throws IOException {
    long version = m.version();
    String attempt = m.attempt();
    Map<FileRef.ContentId, FileRef> reusable = new HashMap<>();
    for (Delta d : m.deltas()) {
      reusable.putIfAbsent(d.file().contentId(), d.file());
    }
    // A file of m's base that lives inside a version object or spill (a delta RocksDB never
    // compacted) or inside the base's published snapshot object is uploaded again instead:
    // reused, it would keep that object alive for as long as RocksDB keeps the file, past any
    // retention (issue 43). So a snapshot names version objects of its own base's chain and
    // its own object at most, besides sst/ objects.
    // Such a carried file goes to an sst/ object of its own, never inline: RocksDB kept it
    // through a snapshot, so it is likely to stay, and later snapshots reuse the sst/ copy
    // instead of carrying it inline again each time (each stable file is uploaded at most
    // twice: in its version object or a snapshot object, then in sst/).
    Set<FileRef.ContentId> carried = new java.util.HashSet<>();
    m.base().ifPresent(b -> b.files().forEach(f -> {
      if (Reachability.kindOf(f.file().key()) == Reachability.Kind.SNAPSHOT_SST) {
        reusable.putIfAbsent(f.file().contentId(), f.file());
      } else {
        carried.add(f.file().contentId());
      }
    }));
    List<Path> files;
    try (Stream<Path> s = Files.list(cpDir)) {
      files = s.filter(Files::isRegularFile)
          .filter(p -> !p.getFileName().toString().equals("LOCK"))
          .filter(p -> !p.getFileName().toString().startsWith("LOG"))
          .sorted(Comparator.comparing(p -> p.getFileName().toString()))
          .toList();
    }
    List<BaseSnapshot.BaseFile> result = new ArrayList<>();
    List<Path> newSsts = new ArrayList<>();
    Map<Path, FileRef.ContentId> ids = new HashMap<>();
    ByteArrayOutputStream small = new ByteArrayOutputStream();
    List<BaseSnapshot.BaseFile> smallFiles = new ArrayList<>();
    for (Path f : files) {
      String name = f.getFileName().toString();
      if (!name.endsWith(".sst")) {
        byte[] bytes = Files.readAllBytes(f);
        smallFiles.add(new BaseSnapshot.BaseFile(name,
            new FileRef(key, small.size(), bytes.length, Checksums.xxhash64(bytes))));
        small.write(bytes);
        continue;
      }
      FileRef.ContentId id = contentId(generation, f);
      FileRef known = reusable.get(id);
      if (known != null) {
        result.add(new BaseSnapshot.BaseFile(name, known));
        continue;
      }
      // New bytes (compaction output): never upload a damaged file with a checksum that
      // vouches for it. RocksDB's block checksums say whether the local copy is intact.
      try {
        LocalFiles.verifySst(f);
      } catch (IOException e) {
        throw new CorruptLocalSstException("Cannot upload base snapshot of " + identity
            + " version " + version + ": " + e.getMessage() + "; the local database is dropped "
            + "at the next load and restored from the object store", e);
      }
      newSsts.add(f);
      ids.put(f, id);
    }
    // The smallest new SSTs inline, after the small files; the others in sst/ objects.
    newSsts.sort(Comparator.comparingLong((Path p) -> ids.get(p).length())
        .thenComparing(p -> p.getFileName().toString()));
    ObjectBody inline = ObjectBody.of(small.toByteArray());
    long inlineSsts = 0;
    List<Future<BaseSnapshot.BaseFile>> uploads = new ArrayList<>();
    for (Path f : newSsts) {
      FileRef.ContentId id = ids.get(f);
      String name = f.getFileName().toString();
      if (!carried.contains(id) && id.length() <= INLINE_FILE_MAX
          && inlineSsts + id.length() <= INLINE_TOTAL_MAX) {
        result.add(new BaseSnapshot.BaseFile(name,
            new FileRef(key, inline.length(), id.length(), id.checksum())));
        inline = ObjectBody.concat(inline, ObjectBody.of(f));
        inlineSsts += id.length();
        continue;
      }
      uploads.add(pools.transfers().submit(() -> {
        String sstKey = StoreLayout.snapshotSst(StoreLayout.newUniqueName());
        objects.putIfAbsent(sstKey,
            FaultPoints.during(FaultPoints.SNAPSHOT_UPLOAD, ObjectBody.of(f)));
        return new BaseSnapshot.BaseFile(name,
            new FileRef(sstKey, 0, id.length(), id.checksum()));
      }));
    }
    result.addAll(await(uploads, "upload base snapshot of version " + version));
    if (pools.closed()) {
      throw new IllegalStateException(identity + " closed during the upload of the base "
          + "snapshot of version " + version);
    }
    result.addAll(smallFiles);
    result.sort(Comparator.comparing(BaseSnapshot.BaseFile::name));
    return new Upload(new BaseSnapshot(version, attempt, result), inline);
  }

  private FileRef.ContentId contentId(int generation, Path sst) throws IOException {
    String cacheKey = generation + "/" + sst.getFileName();
    long size = Files.size(sst);
    FileRef.ContentId id = localFileIds.get(cacheKey);
    if (id == null || id.length() != size) {
      id = new FileRef.ContentId(size, Checksums.xxhash64(sst));
      localFileIds.put(cacheKey, id);
    }
    return id;
  }

  private <T> List<T> await(List<Future<T>> futures, String what) throws IOException {
    return Futures.awaitAll(futures, "Interrupted during " + what + " of " + identity,
        Futures.rethrow("Cannot " + what + " of " + identity + ": "));
  }

  /** Forgets the local files hashed so far and the pending snapshot: the database changed. */
  void localDatabaseReplaced() {
    guard.assertHeld();
    localFileIds.clear();
    drop();
  }

  /**
   * Time since {@code job} was taken, by the store's wall clock or the monotonic clock, whichever
   * says more (a wall clock set back never makes an upload look shorter), ms.
   */
  private long elapsedMillis(Job job) {
    long wall = clock.millis() - job.startedMillis();
    long mono = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - job.startedNanos());
    return Math.max(wall, mono);
  }

  /** Hands an uploaded snapshot to the next commit (under the monitor). */
  private void offer(BaseSnapshot snapshot, int generation) {
    pending = new Pending(snapshot, generation);
  }

  /**
   * The published snapshot waiting for a commit to name it as its base, if it was taken from (or
   * restored into) the database of {@code generation}.
   *
   * @param atVersion the version being committed or snapshotted
   */
  Optional<BaseSnapshot> pending(int generation, long atVersion) {
    guard.assertHeld();
    if (pending == null || pending.generation() != generation
        || pending.snapshot().version() > atVersion) {
      return Optional.empty();
    }
    return Optional.of(pending.snapshot());
  }

  /**
   * Makes the published snapshot a load restored from the pending one, so that the next commit
   * names it as its base (its manifest then lists only the deltas after it).
   *
   * @param generation the local database restored from it
   */
  void restoredFrom(BaseSnapshot snapshot, int generation) {
    guard.assertHeld();
    offer(snapshot, generation);
  }

  /** Records that a committed manifest names {@code base}: if it was pending, it no longer is. */
  void published(BaseSnapshot base) {
    guard.assertHeld();
    if (pending != null && base.equals(pending.snapshot())) {
      pending = null;
    }
  }

  /** Adds the keys of the pending snapshot's files to {@code keys}. */
  void addPendingKeys(Set<String> keys) {
    guard.assertHeld();
    if (pending != null) {
      pending.snapshot().files().forEach(f -> keys.add(f.file().key()));
    }
  }

  /**
   * Forgets the pending snapshot (its published object still names its files, and garbage
   * collection collects both once no retained version can use it).
   */
  void drop() {
    guard.assertHeld();
    pending = null;
  }
}
