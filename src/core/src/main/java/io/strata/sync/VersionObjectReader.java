// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import io.strata.format.Manifest;
import io.strata.format.ManifestCodec;
import io.strata.format.ManifestFormatException;
import io.strata.format.StoreLayout;
import io.strata.format.VersionObjectCodec;
import io.strata.objectstore.ObjectInfo;
import io.strata.objectstore.ObjectNotFoundException;
import io.strata.objectstore.ObjectStore;
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one reader of a store's manifests: finds a version's version object (by attempt id, or the
 * newest attempt with one LIST), reads and verifies the manifest in its tail, records it in the
 * {@link ManifestCache}, and explains a version that is missing because another state store
 * provider wrote the location. The {@link GarbageCollector} is handed this reader. Thread-safe
 * (holds no mutable state besides the thread-safe cache).
 */
final class VersionObjectReader {
  private static final Logger LOG = LoggerFactory.getLogger(VersionObjectReader.class);

  private final StoreIdentity identity;
  private final ObjectStore objects;
  private final boolean attemptKeys;
  private final ManifestCache cache;

  /**
   * @param attemptKeys true under Spark's checkpoint format 2 (see {@link
   *     StoreSettings#attemptKeys()})
   * @param cache where every manifest read is recorded
   */
  VersionObjectReader(StoreIdentity identity, ObjectStore objects, boolean attemptKeys,
      ManifestCache cache) {
    this.identity = identity;
    this.objects = objects;
    this.attemptKeys = attemptKeys;
    this.cache = cache;
  }

  /** The cache of what recent manifests name. */
  ManifestCache cache() {
    return cache;
  }

  /**
   * The key of the version object of {@code version} written by {@code attempt}: {@code
   * v/<version>/<attempt>.svo} under checkpoint format 2, {@code v/<version>.svo} under format 1
   * without a query run (with one, the commit picks {@link StoreLayout#generationVersionObject}).
   */
  String key(long version, String attempt) {
    return attemptKeys ? StoreLayout.versionObject(version, attempt)
        : StoreLayout.versionObject(version);
  }

  /**
   * As {@link #read}, for a load: if the version is not found and the store's location holds that
   * version in the layout of one of Spark's own providers, the error says the checkpoint was
   * written by another provider.
   *
   * @throws StateLoadException as {@link #read}
   */
  Manifest readForLoad(long version, Optional<String> attempt) throws IOException {
    return readForLoad(version, attempt, Ahead.NONE);
  }

  /**
   * Requests a load started before it reads the manifest ({@link RestoreReads}), which {@link
   * #readForLoad(long, Optional, Ahead)} uses instead of sending its own.
   */
  interface Ahead {
    /** Nothing started ahead. */
    Ahead NONE = new Ahead() {
      @Override
      public List<ObjectInfo> versionListing() {
        return null;
      }

      @Override
      public byte[] tail(String key) {
        return null;
      }
    };

    /**
     * The LIST of {@code v/<version>/}, or null if none was started.
     *
     * @throws IOException if it failed (reported as that LIST's failure)
     */
    List<ObjectInfo> versionListing() throws IOException;

    /**
     * The last {@link VersionObjectCodec#TAIL_READ_BYTES} bytes (or fewer, the whole object) of
     * {@code key}, or null if none was fetched for that key or the fetch failed (the reader then
     * sends its own GET, whose failure it reports).
     *
     * @throws java.io.InterruptedIOException if the thread is interrupted while it waits
     */
    byte[] tail(String key) throws IOException;
  }

  /**
   * The key a load of {@code version} without a checkpoint id most likely reads, if a LIST of
   * {@code v/<version>/} would name it: under a query run, the object a version's first commit
   * creates ({@link StoreLayout#generationVersionObject generation 1}); empty without a run
   * ({@code v/<version>.svo} lies outside that prefix) and under checkpoint format 2 (every
   * attempt has its own key). A load may fetch its tail while {@link #locate} lists the version
   * ({@link Ahead#tail}); the bytes serve only if the listing picks that key and lists it at the
   * size their footer gives (the key may have been deleted and written again between the two).
   *
   * @param withRun true if the store's commits run under a query run's epoch
   */
  Optional<String> likelyKey(long version, boolean withRun) {
    if (attemptKeys || !withRun) {
      return Optional.empty();
    }
    return Optional.of(StoreLayout.generationVersionObject(version, 1));
  }

  /**
   * The LIST of {@code v/<version>/} a load without a checkpoint id reads ({@link
   * Ahead#versionListing}), sent now.
   *
   * @throws IOException if the LIST fails
   */
  List<ObjectInfo> listVersion(long version) throws IOException {
    return objects.list(StoreLayout.versionPrefix(version));
  }

  /**
   * The tail of {@code key} as a manifest read fetches it ({@link Ahead#tail}), sent now.
   *
   * @throws IOException if the GET fails, or the object does not exist
   */
  byte[] fetchTail(String key) throws IOException {
    return objects.getTail(key, VersionObjectCodec.TAIL_READ_BYTES);
  }

  /**
   * {@link #readForLoad(long, Optional)} with the LIST and tail GET {@code ahead} started, if
   * any, in place of its own.
   *
   * @throws StateLoadException as {@link #readForLoad(long, Optional)}
   */
  Manifest readForLoad(long version, Optional<String> attempt, Ahead ahead) throws IOException {
    try {
      return read(version, attempt, ahead);
    } catch (StateLoadException e) {
      if (e.reason() == StateLoadException.Reason.VERSION_NOT_FOUND) {
        throw foreignCheckpoint(version, e).orElse(e);
      }
      throw e;
    }
  }

  /**
   * Reads and verifies the manifest of {@code version}: with {@code attempt} given, one tail GET
   * of its version object; else the object {@link #locate} finds (one LIST), read with one tail
   * GET.
   *
   * @throws StateLoadException if there is none, it is corrupt, or storage fails
   */
  Manifest read(long version, Optional<String> attempt) throws IOException {
    return read(version, attempt, Ahead.NONE);
  }

  private Manifest read(long version, Optional<String> attempt, Ahead ahead) throws IOException {
    if (attempt.isPresent()) {
      if (!StoreLayout.isAttemptId(attempt.get())) {
        throw new StateLoadException(StateLoadException.Reason.VERSION_NOT_FOUND,
            "Cannot load " + identity + " version " + version + ": checkpoint id '"
                + attempt.get() + "' was not written by Strata", null);
      }
      return readAt(version, key(version, attempt.get()), attempt.get());
    }
    Located at = locate(version, ahead);
    try {
      byte[] fetched = at.listedSize() < 0 ? null : ahead.tail(at.key());
      return readAt(version, at.key(), at.attempt(),
          fetched != null && sizeOf(fetched) == at.listedSize() ? fetched : null);
    } catch (StateLoadException e) {
      if (e.reason() == StateLoadException.Reason.VERSION_NOT_FOUND && at.generation() == 0) {
        // Neither a generation under the prefix nor the layout-1 object.
        throw new StateLoadException(StateLoadException.Reason.VERSION_NOT_FOUND,
            "Cannot load " + identity + " version " + version + ": no version object under "
                + objects.describe(StoreLayout.versionPrefix(version)) + " nor "
                + objects.describe(at.key()) + " (the version was never committed, or its "
                + "version object was deleted)", e);
      }
      throw e;
    }
  }

  /**
   * Where a version object of {@code version} is, found without a checkpoint id.
   *
   * @param key the version object
   * @param attempt the attempt its key names (format 2), or null (format 1)
   * @param generation the generation its key names (0 for {@code v/<version>.svo}), or -1 for
   *     a format-2 attempt's object
   * @param listedSize the object's size as the LIST gave it, bytes, or -1 if not listed
   */
  record Located(String key, String attempt, long generation, long listedSize) {
    Located(String key, String attempt, long generation) {
      this(key, attempt, generation, -1);
    }
  }

  /**
   * Finds the version object a load of {@code version} without a checkpoint id reads, with one
   * LIST of {@code v/<version>/}. Checkpoint format 1: the object of the greatest generation
   * ({@code v/<version>/g<generation>.svo}: a later query run's re-commit supersedes an earlier
   * run's); if there is none, the layout-1 object {@code v/<version>.svo} (not under the
   * prefix: the caller's read finds whether it exists); only if the prefix holds per-attempt
   * objects (checkpoints of builds that wrote them in format 1) one HEAD decides between it and
   * the newest attempt. Format 2: the newest attempt.
   *
   * @throws StateLoadException if storage fails, or (format 2) no attempt exists
   */
  Located locate(long version) throws IOException {
    return locate(version, Ahead.NONE);
  }

  private Located locate(long version, Ahead ahead) throws IOException {
    List<ObjectInfo> found = list(version, ahead);
    if (attemptKeys) {
      String key = newestAttempt(version, found);
      return new Located(key, StoreLayout.attemptOf(key), -1);
    }
    ObjectInfo best = null;
    long bestGeneration = 0;
    for (ObjectInfo o : found) {
      long e = StoreLayout.generationOf(o.key());
      if (e > bestGeneration) {
        best = o;
        bestGeneration = e;
      }
    }
    if (best != null) {
      return new Located(best.key(), null, bestGeneration, best.size());
    }
    String layout1 = StoreLayout.versionObject(version);
    boolean attempts = found.stream().anyMatch(o -> StoreLayout.attemptOf(o.key()) != null);
    if (!attempts) {
      return new Located(layout1, null, 0); // read by the caller; absent: VERSION_NOT_FOUND
    }
    try {
      if (objects.head(layout1).isPresent()) {
        return new Located(layout1, null, 0);
      }
    } catch (IOException e) {
      throw new StateLoadException(StateLoadException.Reason.STORAGE, "Cannot load " + identity
          + " version " + version + ": reading " + objects.describe(layout1) + " failed: "
          + e.getMessage(), e);
    }
    String key = newestAttempt(version, found);
    return new Located(key, StoreLayout.attemptOf(key), -1);
  }

  /**
   * Reads and verifies the manifest in the version object {@code key} (one tail GET, plus one
   * ranged GET if the manifest is longer than the tail read) and records it in the cache.
   *
   * @param version the version {@code key} encodes
   * @param expectedAttempt the attempt the manifest must name, or null for any (format-1 key)
   * @throws StateLoadException if the object does not exist, is corrupt or describes another
   *     store, version or attempt, or storage fails
   */
  Manifest readAt(long version, String key, String expectedAttempt) throws IOException {
    return readAt(version, key, expectedAttempt, null);
  }

  /**
   * The size of the version object whose tail is {@code tail} (its footer's manifest end plus
   * the footer), bytes, or -1 if the tail is not a version object's.
   */
  private static long sizeOf(byte[] tail) {
    try {
      long size = tail.length < VersionObjectCodec.TAIL_READ_BYTES ? tail.length : -1;
      VersionObjectCodec.Footer f = VersionObjectCodec.footer(tail, size);
      return f.manifestOffset() + f.manifestLength() + VersionObjectCodec.FOOTER_BYTES;
    } catch (ManifestFormatException | RuntimeException e) {
      return -1;
    }
  }

  /** {@link #readAt(long, String, String)} from {@code fetched}, its tail, if not null. */
  private Manifest readAt(long version, String key, String expectedAttempt, byte[] fetched)
      throws IOException {
    byte[] tail;
    try {
      tail = fetched != null ? fetched : objects.getTail(key, VersionObjectCodec.TAIL_READ_BYTES);
    } catch (ObjectNotFoundException e) {
      throw new StateLoadException(StateLoadException.Reason.VERSION_NOT_FOUND,
          "Cannot load " + identity + " version " + version + ": no version object "
              + objects.describe(key) + " (it does not exist)", e);
    } catch (IOException e) {
      throw new StateLoadException(StateLoadException.Reason.STORAGE, "Cannot load " + identity
          + " version " + version + ": reading " + objects.describe(key) + " failed: "
          + e.getMessage(), e);
    }
    try {
      long size = tail.length < VersionObjectCodec.TAIL_READ_BYTES ? tail.length : -1;
      VersionObjectCodec.Footer footer = VersionObjectCodec.footer(tail, size);
      byte[] mbytes = VersionObjectCodec.manifestFromTail(tail, footer);
      if (mbytes == null) {
        try (InputStream in = objects.getRange(key, footer.manifestOffset(),
            footer.manifestLength())) {
          mbytes = in.readAllBytes();
        }
        VersionObjectCodec.verifyManifest(mbytes, footer);
      }
      Manifest m = ManifestCodec.decode(mbytes);
      if (m.version() != version
          || (expectedAttempt != null && !m.attempt().equals(expectedAttempt))
          || !m.storeId().equals(identity.id())) {
        throw new ManifestFormatException("manifest describes store " + m.storeId()
            + " version " + m.version() + " attempt " + m.attempt() + ", expected "
            + identity.id() + " version " + version
            + (expectedAttempt == null ? "" : " attempt " + expectedAttempt), null);
      }
      cache.put(key, footer.manifestOffset() + footer.manifestLength()
          + VersionObjectCodec.FOOTER_BYTES, m);
      return m;
    } catch (ManifestFormatException e) {
      throw new StateLoadException(StateLoadException.Reason.CORRUPT, "Cannot load " + identity
          + " version " + version + ": version object " + objects.describe(key)
          + " is invalid: " + e.getMessage(), e);
    }
  }

  /**
   * After {@code version} was not found: if the store's location holds that version in the
   * layout of one of Spark's own providers ({@code <version>.delta} / {@code .snapshot} of the
   * HDFS-backed provider, {@code <version>.changelog} / {@code .zip} or {@code
   * <version>_<id>.*} of the RocksDB provider), an error saying the checkpoint was written by
   * another provider. Two LISTs, on this failure path only; nothing is written.
   */
  private Optional<StateLoadException> foreignCheckpoint(long version, StateLoadException cause) {
    List<ObjectInfo> found = new ArrayList<>();
    try {
      found.addAll(objects.list(version + "."));
      found.addAll(objects.list(version + "_"));
    } catch (IOException | RuntimeException e) {
      LOG.debug("{} version {}: cannot list for another provider's files", identity, version, e);
      return Optional.empty();
    }
    for (ObjectInfo o : found) {
      String k = o.key();
      String provider = k.endsWith(".delta") || k.endsWith(".snapshot")
          ? "Spark's HDFS-backed state store provider (HDFSBackedStateStoreProvider)"
          : k.endsWith(".changelog") || k.endsWith(".zip")
              ? "Spark's RocksDB state store provider (RocksDBStateStoreProvider)" : null;
      if (provider != null) {
        return Optional.of(new StateLoadException(StateLoadException.Reason.VERSION_NOT_FOUND,
            "Cannot load " + identity + " version " + version + ": the checkpoint was written by "
                + "another state store provider: " + objects.describe(k) + " is a file of "
                + provider + ", and there is no Strata version object "
                + objects.describe(StoreLayout.versionObject(version)) + ". Strata reads only "
                + "its own format and changed nothing; run the query with the provider that "
                + "wrote the checkpoint, or start from a new checkpoint location", cause));
      }
    }
    return Optional.empty();
  }

  private List<ObjectInfo> list(long version, Ahead ahead) throws IOException {
    try {
      List<ObjectInfo> listed = ahead.versionListing();
      return listed != null ? listed : objects.list(StoreLayout.versionPrefix(version));
    } catch (IOException e) {
      throw new StateLoadException(StateLoadException.Reason.STORAGE, "Cannot load " + identity
          + " version " + version + ": listing "
          + objects.describe(StoreLayout.versionPrefix(version)) + " failed: "
          + e.getMessage(), e);
    }
  }

  /**
   * The version object of the newest attempt of {@code version} in {@code found} (the LIST of
   * its prefix): the latest server-side last-modified time wins, ties broken by the attempt id
   * (creation time, then random bits). Only cold loads without a checkpoint id call this.
   */
  private String newestAttempt(long version, List<ObjectInfo> found) throws IOException {
    ObjectInfo best = null;
    for (ObjectInfo o : found) {
      String a = StoreLayout.attemptOf(o.key());
      if (a == null) {
        continue;
      }
      if (best == null || o.lastModifiedMillis() > best.lastModifiedMillis()
          || (o.lastModifiedMillis() == best.lastModifiedMillis()
              && a.compareTo(StoreLayout.attemptOf(best.key())) > 0)) {
        best = o;
      }
    }
    if (best == null) {
      throw new StateLoadException(StateLoadException.Reason.VERSION_NOT_FOUND,
          "Cannot load " + identity + " version " + version + ": no version object under "
              + objects.describe(StoreLayout.versionPrefix(version))
              + (attemptKeys ? "" : " nor " + objects.describe(StoreLayout.versionObject(version)))
              + " (the version was never committed, or its version object was deleted)", null);
    }
    return best.key();
  }
}
