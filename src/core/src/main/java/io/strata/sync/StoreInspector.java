// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import io.strata.format.Manifest;
import io.strata.format.PublishedSnapshot;
import io.strata.format.StoreLayout;
import io.strata.metrics.GcStats;
import io.strata.objectstore.ObjectInfo;
import io.strata.objectstore.ObjectStore;
import java.io.IOException;
import java.io.InputStream;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ExecutorService;

/**
 * One store's objects as a tool sees them, from the object store alone and without a local
 * database: its listing, the manifests of its version objects, its published snapshots, which
 * version object a load reads, and a garbage-collection round split into deciding and deleting.
 * It reads with the same code as a load ({@code VersionObjectReader}, so the same footer,
 * checksum and identity checks) and decides with the same code as maintenance ({@code
 * GarbageCollector} over {@link io.strata.format.Reachability}). It writes nothing except in
 * {@link #applyGc}. Knows nothing of Spark. Thread-safe for concurrent reads.
 */
public final class StoreInspector {
  private final StoreIdentity identity;
  private final ObjectStore objects;
  private final VersionObjectReader format1;
  private final VersionObjectReader format2;
  private final PublishedSnapshots published;
  private final ExecutorService readers;

  /**
   * @param identity the store (its id is checked against every manifest read)
   * @param objects the store's object store, rooted at the store's location (borrowed, not
   *     closed here)
   * @param readers a pool for parallel manifest reads during {@link #decideGc} (borrowed)
   */
  public StoreInspector(StoreIdentity identity, ObjectStore objects, ExecutorService readers) {
    this.identity = identity;
    this.objects = objects;
    this.readers = readers;
    this.format1 = new VersionObjectReader(identity, objects, false, new ManifestCache(10_000));
    this.format2 = new VersionObjectReader(identity, objects, true, new ManifestCache(10_000));
    this.published = new PublishedSnapshots(identity, objects);
  }

  /** The store. */
  public StoreIdentity identity() {
    return identity;
  }

  /**
   * Every object under the store's root (one paginated LIST), keys relative to it.
   *
   * @throws IOException if the listing fails
   */
  public List<ObjectInfo> list() throws IOException {
    return objects.list("");
  }

  /**
   * Reads and verifies the manifest in version object {@code key} (one tail GET, plus one
   * ranged GET for a manifest longer than 64 KiB): the footer's magic, the manifest's
   * XXHash64, its format version, and that it describes this store, the version its key names
   * and (for a per-attempt key) that attempt.
   *
   * @param key a version object key relative to the store's root, e.g. {@code
   *     v/00000000000000000007/g0000000001.svo}
   * @throws IllegalArgumentException if {@code key} is not a version object key
   * @throws StateLoadException if the object does not exist ({@code VERSION_NOT_FOUND}), is
   *     invalid ({@code CORRUPT}, the message names the key and what is wrong) or storage fails
   *     ({@code STORAGE})
   */
  public Manifest manifest(String key) throws IOException {
    long version = StoreLayout.versionOf(key);
    if (version < 0) {
      throw new IllegalArgumentException("Not a version object key: " + key);
    }
    return format1.readAt(version, key, StoreLayout.attemptOf(key));
  }

  /**
   * Opens {@code length} bytes of object {@code key} from {@code offset} (one ranged GET).
   *
   * @param key relative to the store's root
   * @throws io.strata.objectstore.ObjectNotFoundException if the object does not exist
   * @throws IOException if storage fails
   */
  public InputStream range(String key, long offset, long length) throws IOException {
    return objects.getRange(key, offset, length);
  }

  /**
   * The version object a load of {@code version} without a checkpoint id reads (format 1: the
   * greatest generation, else the layout-1 key; format 2: the newest attempt), as {@code
   * getStore} finds it: one LIST of the version's prefix (plus one HEAD in a mixed layout).
   *
   * @param attemptKeys true for a store written under Spark's checkpoint format 2
   * @return the key, relative to the store's root
   * @throws StateLoadException if storage fails, or (format 2) no attempt exists
   */
  public String locate(long version, boolean attemptKeys) throws IOException {
    return (attemptKeys ? format2 : format1).locate(version).key();
  }

  /**
   * Reads and decodes published snapshot {@code key} ({@code b/...bsm}, one GET), checking
   * that it describes this store.
   *
   * @throws StateLoadException if it does not exist ({@code MISSING_FILE}), is invalid ({@code
   *     CORRUPT}) or storage fails
   */
  public PublishedSnapshot publishedSnapshot(String key) throws IOException {
    return published.read(key);
  }

  /**
   * The published snapshot a cold load of {@code m}'s version would restore from instead of
   * {@code m}'s base, as a load finds it (one LIST of {@code b/}, GETs of the candidates).
   *
   * @return its key and content, or empty if there is none (or none can be read)
   */
  public Optional<PublishedSnapshot> usablePublishedSnapshot(Manifest m) {
    return published.find(m).map(PublishedSnapshots.Found::snapshot);
  }

  /**
   * {@link #usablePublishedSnapshot(Manifest)} over the store's listing the caller already has
   * (from {@link #list}): the same choice, with GETs of the candidates only.
   *
   * @param listing the store's objects, keys relative to its root
   * @return its content, or empty if there is none (or none can be read)
   */
  public Optional<PublishedSnapshot> usablePublishedSnapshot(Manifest m,
      List<ObjectInfo> listing) {
    return published.find(m, listing).map(PublishedSnapshots.Found::snapshot);
  }

  /**
   * Decides a garbage-collection round as maintenance would, deleting nothing.
   *
   * @param newestVersion the newest version to retain from (the versions {@code [N - R, N]}
   *     stay), or -1 for the greatest version listed; a tool should pass the version of Spark's
   *     latest commit, since versions an earlier query run left above a rewind point would
   *     otherwise lift the window
   * @param settings the retention {@code R} and the grace period
   * @param nowMillis the wall clock the ages are judged at, epoch ms
   * @throws IOException if listing or reading a retained manifest or a published snapshot fails
   *     (the message names the object)
   */
  public GcDecision decideGc(long newestVersion, GcSettings settings, long nowMillis)
      throws IOException {
    return collector(settings).decide(0, newestVersion, Set.of(), nowMillis);
  }

  /**
   * Deletes the garbage of {@code decision} (batched DeleteObjects, version objects first).
   *
   * @param decision a decision of {@link #decideGc} on this store, with the same settings
   * @param abortUploads also abort incomplete multipart uploads started before the grace period
   * @return what was deleted
   * @throws IOException if a delete fails (earlier batches stay deleted)
   */
  public GcStats applyGc(GcDecision decision, GcSettings settings, boolean abortUploads)
      throws IOException {
    return collector(settings).apply(decision, abortUploads);
  }

  private GarbageCollector collector(GcSettings settings) {
    return new GarbageCollector(identity, objects, format1, readers, settings, () -> -1,
        published);
  }
}
