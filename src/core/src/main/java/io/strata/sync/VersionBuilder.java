// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import io.strata.engine.CloseableIterator;
import io.strata.engine.DeltaFile;
import io.strata.engine.KeyValue;
import io.strata.engine.LocalStore;
import io.strata.format.BaseSnapshot;
import io.strata.format.ColumnFamilies;
import io.strata.format.ColumnFamily;
import io.strata.format.Delta;
import io.strata.format.FileRef;
import io.strata.format.Manifest;
import io.strata.format.ManifestCodec;
import io.strata.format.StoreLayout;
import io.strata.objectstore.ObjectBody;
import io.strata.objectstore.ObjectStore;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The version a {@link SyncedStore} is building, between a load and its commit or abort: its
 * attempt id, the spill deltas it already uploaded, whether the local database holds writes of
 * it that are not committed, and its column families. It also writes spill deltas ({@link
 * #spill}) and composes the version's manifest ({@link #manifest}).
 *
 * <p>Threading: guarded by the owning store's monitor; {@link #families()} is also read without
 * it (a volatile, immutable value).
 */
final class VersionBuilder {
  private static final Logger LOG = LoggerFactory.getLogger(VersionBuilder.class);

  private final StoreIdentity identity;
  private final ObjectStore objects;
  private final GcTrigger gc;
  /** Attempt id, fixed at the first spill (else chosen at commit); null before. */
  private String attempt;
  /** Spill deltas, already uploaded and ingested locally. */
  private final List<Delta> spilled = new ArrayList<>();
  /** True while the local database holds writes of this version not yet committed. */
  private boolean localDirty;
  /** The loaded manifest's families plus this version's creations and removals. */
  private volatile ColumnFamilies families = ColumnFamilies.NONE;

  VersionBuilder(StoreIdentity identity, ObjectStore objects, GcTrigger gc) {
    this.identity = identity;
    this.objects = objects;
    this.gc = gc;
  }

  /**
   * Starts a new version on a database whose committed families are {@code committed}: no
   * attempt, no spills. Whether the local database is dirty is the caller's to settle first.
   */
  void reset(ColumnFamilies committed) {
    spilled.clear();
    attempt = null;
    families = committed;
  }

  /** As {@link #reset}, for a local database that was dropped: nothing of it is dirty. */
  void dropped() {
    reset(ColumnFamilies.NONE);
    localDirty = false;
  }

  /** The attempt id fixed by a spill, else a new one that is not kept (see {@link #spill}). */
  String attemptForCommit() {
    return attempt != null ? attempt : StoreLayout.newAttemptId();
  }

  /**
   * True if the pending writes of {@code l} reached {@code thresholdBytes} (a positive {@code
   * spillThresholdBytes}; 0 never spills) and no scan is open: the batch spills now.
   */
  boolean spillDue(LocalStore l, long thresholdBytes) {
    return thresholdBytes > 0 && l.pendingBytes() >= thresholdBytes && l.openScans() == 0;
  }

  /** True while the local database holds writes of this version not yet committed. */
  boolean localDirty() {
    return localDirty;
  }

  /** The version was committed and its writes are the local database's committed state. */
  void committed(ColumnFamilies committedFamilies) {
    reset(committedFamilies);
    localDirty = false;
  }

  /** True if this version uploaded spill deltas (no manifest names them until it commits). */
  boolean hasSpills() {
    return !spilled.isEmpty();
  }

  /**
   * This version will never commit (an abort, a lost or fenced commit): its spill deltas, if any,
   * are orphans no manifest will ever name, collected once older than the grace period.
   */
  void orphanSpills() {
    if (hasSpills()) {
      gc.orphansLeft();
    }
  }

  /**
   * Adds the keys of this version's spill deltas to {@code keys} (GC must keep them).
   *
   * @return {@code keys}
   */
  Set<String> addSpillKeys(Set<String> keys) {
    spilled.forEach(d -> keys.add(d.file().key()));
    return keys;
  }

  /** The column families of the version being built. */
  ColumnFamilies families() {
    return families;
  }

  /**
   * Creates the column family {@code name} unless it exists (see {@link
   * SyncedStore#createColumnFamily}).
   */
  ColumnFamily createColumnFamily(String name, boolean internal, long version) {
    Optional<ColumnFamily> existing = families.byName(name);
    if (existing.isPresent()) {
      return existing.get();
    }
    families = families.with(name, internal);
    ColumnFamily created = families.byName(name).orElseThrow();
    LOG.debug("{} version {}: created column family '{}' with id {}", identity, version, name,
        created.id());
    return created;
  }

  /**
   * Records a removal in {@code l} of every key of the family {@code name}: tombstones in this
   * version's delta, so the removal travels the ordinary commit path. Runs outside the store's
   * monitor (it reads and writes only {@code l}'s pending writes, as a task's writes do).
   *
   * @param version the version being built (for the log)
   * @return false if no such family exists
   * @throws IOException if reading fails
   */
  boolean removeKeysOf(String name, LocalStore l, long version) throws IOException {
    Optional<ColumnFamily> f = families.byName(name);
    if (f.isEmpty()) {
      return false;
    }
    long removed = 0;
    try (CloseableIterator<KeyValue> it = l.scan(f.get().keyPrefix())) {
      while (it.hasNext()) {
        l.delete(it.next().key());
        removed++;
      }
    }
    LOG.debug("{} version {}: removed column family '{}' (id {}, {} keys)", identity, version,
        name, f.get().id(), removed);
    return true;
  }

  /** Drops {@code name} from this version's families (its keys' removals are the caller's). */
  void removeColumnFamily(String name) {
    families = families.without(name);
  }

  /**
   * Writes the pending writes of {@code l} as one SST under {@code tmpDir}, uploads it
   * create-only as this version's next spill delta ({@link StoreLayout#spill}) and ingests it
   * into {@code l}; the database is then dirty.
   *
   * @param version the version being built
   * @throws IOException if writing or uploading fails (nothing was ingested then; a failed PUT
   *     may still have been applied, so GC is told orphans may exist)
   */
  void spill(LocalStore l, long version, Path tmpDir) throws IOException {
    if (attempt == null) {
      attempt = StoreLayout.newAttemptId(); // fixed: every spill and the commit share it
    }
    String a = attempt;
    String key = StoreLayout.spill(version, a, spilled.size());
    Path sst = tmpDir.resolve("spill-" + version + "-" + a + "-" + spilled.size() + ".sst");
    try {
      DeltaFile d = l.writeDelta(sst).orElseThrow();
      try {
        objects.putIfAbsent(key,
            FaultPoints.during(FaultPoints.SPILL_UPLOAD, ObjectBody.of(sst)));
      } catch (IOException | RuntimeException e) {
        gc.orphansLeft();
        throw e;
      }
      localDirty = true;
      l.spillPending(d);
      spilled.add(new Delta(version, a, new FileRef(key, 0, d.size(), d.checksum())));
      LOG.debug("{} version {}: spilled {} bytes of pending writes to {}", identity, version,
          d.size(), key);
    } finally {
      LocalIntegrity.deleteQuietly(identity, version - 1, sst);
    }
  }

  /**
   * The manifest of this version, committed as {@code key}: the loaded version's base (or
   * {@code pending}, a newer base snapshot of a version already committed), the deltas since
   * that base, this version's spills and its own delta.
   *
   * @param loaded the loaded version's manifest, null for version 0
   * @param loadedVersion the loaded version
   * @param attempt this attempt's id ({@link #attemptForCommit()})
   * @param pending a base snapshot uploaded for the next commit to publish, if any
   * @param delta this version's own delta file, if it wrote anything
   * @param keySchema key schema as JSON
   * @param valueSchema value schema as JSON
   * @param numKeys keys in the version
   * @param epoch the committing query run's epoch (checkpoint format 1), or 0 for none
   */
  Manifest manifest(Manifest loaded, long loadedVersion, String attempt,
      Optional<BaseSnapshot> pending, String key, Optional<DeltaFile> delta, String keySchema,
      String valueSchema, long numKeys, long epoch) {
    long newVersion = loadedVersion + 1;
    Optional<BaseSnapshot> base = loaded == null ? Optional.empty() : loaded.base();
    List<Delta> deltas = new ArrayList<>(loaded == null ? List.of() : loaded.deltas());
    if (pending.isPresent()) {
      BaseSnapshot nb = pending.get();
      long currentBase = base.map(BaseSnapshot::version).orElse(0L);
      if (nb.version() > currentBase && nb.version() <= loadedVersion) {
        base = pending;
        deltas.removeIf(d -> d.version() <= nb.version());
      }
    }
    deltas.addAll(spilled);
    delta.ifPresent(d -> deltas.add(new Delta(newVersion, attempt,
        new FileRef(key, 0, d.size(), d.checksum()))));
    ColumnFamilies cfs = families;
    Optional<String> loadedAttempt =
        loaded == null ? Optional.empty() : Optional.of(loaded.attempt());
    return new Manifest(ManifestCodec.formatVersionFor(cfs, epoch), identity.id(), newVersion,
        attempt,
        loadedVersion, loadedAttempt, base, deltas, keySchema, valueSchema, numKeys,
        System.currentTimeMillis(), cfs, epoch);
  }
}
