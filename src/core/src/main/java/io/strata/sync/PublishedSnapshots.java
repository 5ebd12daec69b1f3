// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import io.strata.format.Manifest;
import io.strata.format.ManifestFormatException;
import io.strata.format.PublishedSnapshot;
import io.strata.format.PublishedSnapshotCodec;
import io.strata.format.StoreLayout;
import io.strata.format.VersionObjectCodec;
import io.strata.objectstore.ObjectBody;
import io.strata.objectstore.ObjectInfo;
import io.strata.objectstore.ObjectNotFoundException;
import io.strata.objectstore.ObjectStore;
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.Optional;
import java.util.OptionalLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one owner of a store's published snapshots ({@code b/...bsm}, {@link PublishedSnapshot}):
 * writes them (one create-only PUT each, after the files they name), finds the one a cold load
 * restores from (one LIST of {@code b/}, then one GET of the newest candidate whose key carries
 * the manifest's lineage tip), and reads them for garbage collection. Decoded objects are
 * immutable, so they are cached (a bounded LRU of {@value #CACHE} entries). Thread-safe.
 */
final class PublishedSnapshots {
  private static final Logger LOG = LoggerFactory.getLogger(PublishedSnapshots.class);
  /** Decoded published snapshots cached. */
  static final int CACHE = 64;

  /**
   * A published snapshot a load may use.
   *
   * @param key its object key
   * @param snapshot its content
   */
  record Found(String key, PublishedSnapshot snapshot) { }

  private final StoreIdentity identity;
  private final ObjectStore objects;
  private final Map<String, PublishedSnapshot> cache = new LinkedHashMap<>(16, 0.75f, true) {
    @Override
    protected boolean removeEldestEntry(Map.Entry<String, PublishedSnapshot> eldest) {
      return size() > CACHE;
    }
  };

  /** Keys found undecodable, with the error (as bounded as the cache; guarded by it). */
  private final Map<String, String> unreadable = new LinkedHashMap<>(16, 0.75f, true) {
    @Override
    protected boolean removeEldestEntry(Map.Entry<String, String> eldest) {
      return size() > CACHE;
    }
  };

  PublishedSnapshots(StoreIdentity identity, ObjectStore objects) {
    this.identity = identity;
    this.objects = objects;
  }

  /**
   * A new key, unique to one upload, for a published snapshot of {@code version} whose lineage
   * tip hash is {@code tipHash} ({@link PublishedSnapshot.Tip#hash}): the uploader names its
   * inline files by it before writing the object ({@link #write}).
   */
  String newKey(long version, long tipHash) {
    return StoreLayout.publishedSnapshot(version, tipHash, StoreLayout.newUniqueName());
  }

  /**
   * Writes format-2 {@code p} as {@code key} (from {@link #newKey}) in one create-only PUT: the
   * {@code inline} bytes (the files {@code p} names in its own object, at the offsets it gives),
   * then its JSON and footer (docs/format.md, "Published snapshots").
   *
   * @param inline the inline files back to back, {@code inline.length()} bytes (may be 0)
   * @throws IOException if the PUT fails (nothing is published; files uploaded before stay
   *     unreferenced)
   * @throws IllegalArgumentException if {@code key} does not fit {@code p}'s version and tip
   */
  void write(String key, PublishedSnapshot p, ObjectBody inline) throws IOException {
    if (StoreLayout.publishedSnapshotVersionOf(key) != p.version()
        || StoreLayout.publishedSnapshotTipOf(key) != p.tip().hash()) {
      throw new IllegalArgumentException("key " + key + " does not fit published snapshot of "
          + "version " + p.version());
    }
    ObjectBody tail = ObjectBody.of(PublishedSnapshotCodec.encodeTail(p, inline.length()));
    objects.putIfAbsent(key, FaultPoints.during(FaultPoints.SNAPSHOT_UPLOAD,
        inline.length() == 0 ? tail : ObjectBody.concat(inline, tail)));
    synchronized (cache) {
      cache.put(key, p);
    }
  }

  /**
   * The newest published snapshot a load of the version {@code m} describes can restore from:
   * one LIST of {@code b/}, then one GET of the newest key whose version and tip hash fit {@code
   * m} (more GETs only if its content does not confirm it). Never fails: a listing or reading
   * problem is logged and the load uses {@code m}'s own chain.
   */
  Optional<Found> find(Manifest m) {
    List<ObjectInfo> listed;
    try {
      listed = list();
    } catch (IOException | RuntimeException e) {
      LOG.warn("{} version {}: cannot list the published snapshots ({}); restoring from the "
          + "manifest's own chain", identity, m.version(), e.toString());
      return Optional.empty();
    }
    return find(m, listed);
  }

  /**
   * The store's published snapshots as one LIST of {@code b/} lists them (keys relative to the
   * store's root), for {@link #find(Manifest, List)}.
   *
   * @throws IOException if the LIST fails
   */
  List<ObjectInfo> list() throws IOException {
    return objects.list(StoreLayout.PUBLISHED_SNAPSHOTS);
  }

  /**
   * {@link #find(Manifest)} over a listing the caller already has (keys relative to the
   * store's root; keys outside {@code b/} are ignored): GETs only, no LIST.
   */
  Optional<Found> find(Manifest m, List<ObjectInfo> listed) {
    PublishedSnapshot.TipIndex tips = PublishedSnapshot.TipIndex.of(m);
    List<String> candidates = new ArrayList<>();
    Map<String, Long> sizes = new java.util.HashMap<>();
    for (ObjectInfo o : listed) {
      sizes.put(o.key(), o.size());
      long s = StoreLayout.publishedSnapshotVersionOf(o.key());
      if (s < 0) {
        continue;
      }
      OptionalLong h = tips.hashAt(s);
      if (h.isPresent() && h.getAsLong() == StoreLayout.publishedSnapshotTipOf(o.key())) {
        candidates.add(o.key());
      }
    }
    candidates.sort(Comparator.comparing(String::toString).reversed()); // newest version first
    for (String key : candidates) {
      try {
        PublishedSnapshot p = read(key, sizes.getOrDefault(key, -1L));
        if (p.usableBy(m)) {
          return Optional.of(new Found(key, p));
        }
        LOG.debug("{} version {}: published snapshot {} is not on its lineage (tip hash "
            + "collision)", identity, m.version(), objects.describe(key));
      } catch (IOException | RuntimeException e) {
        LOG.warn("{} version {}: cannot read published snapshot {} ({}); trying an older one",
            identity, m.version(), objects.describe(key), e.getMessage());
      }
    }
    return Optional.empty();
  }

  /**
   * Reads (one GET, unless cached) and decodes the published snapshot {@code key}.
   *
   * @throws StateLoadException if it does not exist ({@code MISSING_FILE}), or is invalid or
   *     belongs to another store ({@code CORRUPT}: the message names the key; remembered, so a
   *     later call throws again without a GET)
   * @throws IOException if storage fails, or the object store is closed
   */
  PublishedSnapshot read(String key) throws IOException {
    return read(key, -1);
  }

  /**
   * {@link #read(String)} of an object whose size a listing gave ({@code size}, bytes; -1 if
   * unknown): its footer is then checked against it, so a damaged footer that points outside
   * the object is found undecodable rather than sending a GET that cannot succeed.
   */
  PublishedSnapshot read(String key, long size) throws IOException {
    synchronized (cache) {
      PublishedSnapshot p = cache.get(key);
      if (p != null) {
        return p;
      }
      String why = unreadable.get(key);
      if (why != null) {
        throw new StateLoadException(StateLoadException.Reason.CORRUPT, why, null);
      }
    }
    PublishedSnapshot p;
    try {
      p = fetch(key, size);
    } catch (ObjectNotFoundException e) {
      throw new StateLoadException(StateLoadException.Reason.MISSING_FILE, "Cannot read "
          + "published snapshot " + objects.describe(key) + " of " + identity
          + ": it does not exist", e);
    } catch (IllegalStateException e) {
      // The object store was closed under the read (the store closing while a garbage-collection
      // round or a load runs): a storage failure, not a fact about the object, so not
      // remembered. The codecs report a bad object as ManifestFormatException.
      throw new IOException("Cannot read published snapshot " + objects.describe(key) + " of "
          + identity + ": " + e.getMessage(), e);
    } catch (ManifestFormatException | RuntimeException e) {
      throw unreadable(key, "Cannot read " + objects.describe(key) + " of " + identity + ": "
          + e.getMessage(), e);
    }
    if (!p.storeId().equals(identity.id())) {
      throw unreadable(key, "Cannot read " + objects.describe(key) + ": it describes store "
          + p.storeId() + ", expected " + identity.id(), null);
    }
    synchronized (cache) {
      cache.put(key, p);
    }
    return p;
  }

  /**
   * Reads and decodes {@code key}: one suffix-range GET of its last {@value
   * VersionObjectCodec#TAIL_READ_BYTES} bytes, which hold the JSON of all but huge snapshots
   * (format 2: before the footer; format 1: the whole object when it is shorter), plus one GET
   * of the JSON otherwise. The inline files are never read here.
   */
  private PublishedSnapshot fetch(String key, long listedSize)
      throws IOException, ManifestFormatException {
    byte[] tail = objects.getTail(key, VersionObjectCodec.TAIL_READ_BYTES);
    boolean whole = tail.length < VersionObjectCodec.TAIL_READ_BYTES;
    long size = whole ? tail.length : listedSize;
    if (!VersionObjectCodec.endsWithFooter(tail, VersionObjectCodec.Magic.PUBLISHED_SNAPSHOT)) {
      if (whole) {
        return PublishedSnapshotCodec.decodeJson(tail, key, -1);
      }
      try (InputStream in = objects.get(key)) {
        return PublishedSnapshotCodec.decode(in.readAllBytes(), key);
      }
    }
    VersionObjectCodec.Footer f;
    byte[] json;
    try {
      f = VersionObjectCodec.footer(tail, size, VersionObjectCodec.Magic.PUBLISHED_SNAPSHOT);
      json = VersionObjectCodec.manifestFromTail(tail, f);
      if (json == null) {
        if (size < 0) {
          // Unknown size: one HEAD, so that a footer pointing past the end is found damaged
          // (a ranged GET there would fail as a storage error, for ever).
          size = objects.head(key).map(ObjectInfo::size).orElseThrow(
              () -> new ObjectNotFoundException(objects.describe(key) + " does not exist",
                  null));
          f = VersionObjectCodec.footer(tail, size, VersionObjectCodec.Magic.PUBLISHED_SNAPSHOT);
        }
        try (InputStream in = objects.getRange(key, f.manifestOffset(), f.manifestLength())) {
          json = in.readAllBytes();
        }
        VersionObjectCodec.verifyManifest(json, f);
      }
    } catch (ManifestFormatException e) {
      throw new ManifestFormatException("published snapshot " + key + ": " + e.getMessage(), e);
    }
    return PublishedSnapshotCodec.decodeJson(json, key, f.manifestOffset());
  }

  /**
   * The keys of the files the published snapshot {@code key} names if it is cached, else an
   * empty set (no request).
   */
  Set<String> cachedNames(String key) {
    synchronized (cache) {
      PublishedSnapshot p = cache.get(key);
      return p == null ? Set.of() : io.strata.format.Reachability.namedKeys(p, key);
    }
  }

  /**
   * True if {@link #read} already found {@code key} undecodable (no request: objects are
   * written once, so it stays so).
   */
  boolean knownUnreadable(String key) {
    synchronized (cache) {
      return unreadable.containsKey(key);
    }
  }

  /** Remembers that {@code key} cannot be decoded, and the error saying so. */
  private StateLoadException unreadable(String key, String message, Throwable cause) {
    synchronized (cache) {
      unreadable.put(key, message);
    }
    return new StateLoadException(StateLoadException.Reason.CORRUPT, message, cause);
  }

  /** Forgets deleted keys. */
  void removeAll(List<String> keys) {
    synchronized (cache) {
      keys.forEach(cache::remove);
      keys.forEach(unreadable::remove);
    }
  }
}
