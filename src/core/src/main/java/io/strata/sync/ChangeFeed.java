// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import io.strata.format.BaseSnapshot;
import io.strata.format.Checksums;
import io.strata.format.Delta;
import io.strata.format.FileRef;
import io.strata.format.Manifest;
import io.strata.format.StoreLayout;
import io.strata.format.sst.SstFormatException;
import io.strata.format.sst.SstReader;
import io.strata.objectstore.ObjectStore;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.TreeMap;

/**
 * The per-version changes of a store, read from its SST deltas in S3: for each version from
 * {@code startVersion} to {@code endVersion} of the lineage that ends at {@code endVersion}, the
 * keys that version put (with their new values) and removed, in key order. This is what Spark's
 * state data source returns for {@code readChangeFeed} (one row per change, batch id = version
 * - 1), read from the deltas Strata already keeps instead of from changelog files.
 *
 * <p>The lineage is followed backwards from {@code endVersion}'s manifest: its delta chain names
 * the version objects of the versions after its base; for versions at or before the base, the
 * base version's own manifest names its chain, and so on. Each delta is fetched with one ranged
 * GET, verified against the XXHash64 its manifest records, and read with {@link SstReader} (which,
 * unlike RocksDB's readers, returns the tombstones). A version whose batch spilled has several
 * deltas: they are merged, a later delta's entry for a key replacing an earlier one's, so each
 * key appears once per version, with its final change.
 *
 * <p>A version without writes has no changes. A version whose objects garbage collection has
 * already deleted (older than the retention) cannot be read: {@link #next()} throws.
 *
 * <p>Not thread-safe. Deltas are held in memory one version at a time.
 */
public final class ChangeFeed {
  /**
   * One change.
   *
   * @param version the version that made it (Spark's batch id + 1)
   * @param op put or delete
   * @param key the raw RocksDB key (column-family id first; docs/format.md)
   * @param value the new value; empty for a delete
   */
  public record Change(long version, SstReader.Op op, byte[] key, byte[] value) { }

  /** A manifest and the version object it was read from. */
  private record Read(String key, Manifest manifest) { }

  private final StoreIdentity identity;
  private final ObjectStore objects;
  private final Manifest end;
  /** Per version in [start, end], ascending: its deltas in order (empty: no writes). */
  private final TreeMap<Long, List<FileRef>> deltas;
  private long currentVersion = -1;
  private List<SstReader.Entry> current = List.of();
  private int index;

  private ChangeFeed(StoreIdentity identity, ObjectStore objects, Manifest end,
      TreeMap<Long, List<FileRef>> deltas) {
    this.identity = identity;
    this.objects = objects;
    this.end = end;
    this.deltas = deltas;
  }

  /**
   * Finds the deltas of versions {@code startVersion} to {@code endVersion} (inclusive) in the
   * lineage of {@code endVersion}: one tail GET of {@code endVersion}'s manifest (plus one LIST
   * without an attempt), and one more tail GET per base snapshot the range reaches past.
   *
   * @param identity the store
   * @param objects the store's object store, rooted at the store's location (borrowed)
   * @param attemptKeys true under Spark's checkpoint format 2 (a version object per attempt)
   * @param startVersion first version, at least 1
   * @param endVersion last version, at least {@code startVersion}
   * @param endAttempt the attempt (Spark's state store checkpoint id) of {@code endVersion}, if
   *     known; else the version object a load of it would read
   * @throws IllegalArgumentException if the range is empty or starts below 1
   * @throws StateLoadException if a manifest on the way is missing or corrupt
   * @throws IOException if the object store fails, or the lineage cannot be followed: a base
   *     snapshot's version object is gone, or a manifest names a base snapshot that is not older
   *     than itself (each step of the walk must go to a strictly older version, so it always
   *     ends); the message names the store, the version, the object and what was expected
   */
  public static ChangeFeed open(StoreIdentity identity, ObjectStore objects, boolean attemptKeys,
      long startVersion, long endVersion, Optional<String> endAttempt) throws IOException {
    if (startVersion < 1 || endVersion < startVersion) {
      throw new IllegalArgumentException("Change feed of " + identity + ": versions "
          + startVersion + " to " + endVersion + " (expected 1 <= start <= end)");
    }
    VersionObjectReader reader = new VersionObjectReader(identity, objects, attemptKeys,
        new ManifestCache(64));
    TreeMap<Long, List<FileRef>> found = new TreeMap<>();
    for (long v = startVersion; v <= endVersion; v++) {
      found.put(v, new ArrayList<>());
    }
    Manifest m = reader.read(endVersion, endAttempt);
    Manifest end = m;
    String mKey = null; // the object m was read from, when known without a request
    long covered = endVersion + 1; // versions >= covered are collected
    while (true) {
      for (Delta d : m.deltas()) {
        if (d.version() >= startVersion && d.version() < covered) {
          found.get(d.version()).add(d.file());
        }
      }
      Optional<BaseSnapshot> base = m.base();
      long baseVersion = base.map(BaseSnapshot::version).orElse(0L);
      covered = baseVersion + 1;
      if (base.isEmpty() || baseVersion < startVersion) {
        break;
      }
      if (baseVersion >= m.version()) {
        // Each step must go to a strictly older version, or the walk never ends (one GET, and
        // one LIST without an attempt, per step, forever): a committed manifest's base is always
        // an older version (a commit builds on a snapshot of a version it descends from).
        throw new IOException("Change feed of " + identity + ": cannot follow the lineage of "
            + "version " + endVersion + ": the manifest of version " + m.version() + " (attempt "
            + m.attempt() + ") in " + describe(reader, objects, m, mKey) + " names a base "
            + "snapshot of version " + baseVersion + ", expected a version older than "
            + m.version() + " (the version object was changed by hand or damaged)");
      }
      String attempt = base.get().attempt();
      Manifest at = reader.read(baseVersion, attemptKeys ? Optional.of(attempt) : Optional.empty());
      mKey = null;
      if (!at.attempt().equals(attempt)) {
        // The base is another query run's object of that version (a published snapshot of an
        // earlier run's commit that a later run re-committed with the same state): find it.
        Read other = byAttempt(reader, objects, baseVersion, attempt)
            .orElseThrow(() -> new IOException("Change feed of " + identity + ": version "
                + endVersion + " descends from attempt " + attempt + " of version "
                + baseVersion + ", but no version object under "
                + objects.describe(StoreLayout.versionPrefix(baseVersion)) + " holds it (it was "
                + "deleted, or the checkpoint was changed by hand)"));
        at = other.manifest();
        mKey = other.key();
      }
      m = at;
    }
    return new ChangeFeed(identity, objects, end, found);
  }

  /**
   * The version object {@code m} was read from, for an error message: {@code key} if known, else
   * its format-2 key, else the one a load of its version reads (one LIST; on the error path only).
   */
  private static String describe(VersionObjectReader reader, ObjectStore objects, Manifest m,
      String key) {
    if (key == null) {
      key = reader.key(m.version(), m.attempt());
      if (StoreLayout.attemptOf(key) == null) {
        try {
          key = reader.locate(m.version()).key();
        } catch (IOException e) {
          key = StoreLayout.versionPrefix(m.version());
        }
      }
    }
    return objects.describe(key);
  }

  /**
   * The version object of {@code version} written by {@code attempt} among the generations under
   * its prefix (one LIST, one tail GET per object until found).
   */
  private static Optional<Read> byAttempt(VersionObjectReader reader, ObjectStore objects,
      long version, String attempt) throws IOException {
    for (io.strata.objectstore.ObjectInfo o : objects.list(StoreLayout.versionPrefix(version))) {
      if (!o.key().endsWith(".svo")) {
        continue;
      }
      Manifest m = reader.readAt(version, o.key(), null);
      if (m.attempt().equals(attempt)) {
        return Optional.of(new Read(o.key(), m));
      }
    }
    return Optional.empty();
  }

  /**
   * The next change (versions ascending, keys ascending within a version), or null after the
   * last.
   *
   * @throws IOException if a delta cannot be fetched (deleted by garbage collection, storage
   *     failure), does not match its checksum, or is not a readable SST; the message names the
   *     store, version and object
   */
  public Change next() throws IOException {
    while (index >= current.size()) {
      var next = deltas.higherEntry(currentVersion);
      if (next == null) {
        return null;
      }
      currentVersion = next.getKey();
      current = read(currentVersion, next.getValue());
      index = 0;
    }
    SstReader.Entry e = current.get(index++);
    return new Change(currentVersion, e.op(), e.key(), e.value());
  }

  /** The manifest of the end version (its column families name the key prefixes). */
  public Manifest endManifest() {
    return end;
  }

  /** The versions the feed covers, ascending, with how many deltas each has (0: no writes). */
  public List<long[]> plan() {
    List<long[]> out = new ArrayList<>();
    deltas.forEach((v, refs) -> out.add(new long[] {v, refs.size()}));
    return out;
  }

  private List<SstReader.Entry> read(long version, List<FileRef> refs) throws IOException {
    if (refs.size() == 1) {
      return entries(version, refs.get(0));
    }
    // A spilled batch: later deltas replace earlier ones key by key.
    TreeMap<byte[], SstReader.Entry> merged = new TreeMap<>(Arrays::compareUnsigned);
    for (FileRef ref : refs) {
      for (SstReader.Entry e : entries(version, ref)) {
        merged.put(e.key(), e);
      }
    }
    return new ArrayList<>(merged.values());
  }

  private List<SstReader.Entry> entries(long version, FileRef ref) throws IOException {
    SstReader r = reader(version, ref);
    try {
      return r.readAll();
    } catch (SstFormatException e) {
      throw new IOException("Change feed of " + identity + " version " + version + ": the delta "
          + "in " + objects.describe(ref.key()) + " is not a readable SST: " + e.getMessage(), e);
    }
  }

  private SstReader reader(long version, FileRef ref) throws IOException {
    if (ref.length() > Integer.MAX_VALUE - 16) {
      throw new IOException("Change feed of " + identity + " version " + version + ": the delta "
          + "in " + objects.describe(ref.key()) + " is " + ref.length() + " bytes, more than "
          + "one array holds");
    }
    byte[] bytes = new byte[(int) ref.length()];
    int n;
    try (InputStream in = objects.getRange(ref.key(), ref.offset(), ref.length())) {
      n = in.readNBytes(bytes, 0, bytes.length);
    } catch (IOException e) {
      throw new IOException("Change feed of " + identity + " version " + version + ": cannot "
          + "read its delta from " + objects.describe(ref.key()) + " (garbage collection deletes "
          + "the objects of versions older than the retention): " + e.getMessage(), e);
    }
    if (n != bytes.length) {
      throw new IOException("Change feed of " + identity + " version " + version + ": "
          + objects.describe(ref.key()) + " returned " + n + " bytes for the delta at offset "
          + ref.offset() + ", expected " + ref.length());
    }
    long sum = Checksums.xxhash64(bytes);
    if (sum != ref.checksum()) {
      throw new IOException("Change feed of " + identity + " version " + version + ": the delta "
          + "in " + objects.describe(ref.key()) + " (offset " + ref.offset() + ", " + ref.length()
          + " bytes) has xxhash64 " + Checksums.hex(sum) + ", its manifest says "
          + Checksums.hex(ref.checksum()));
    }
    try {
      return SstReader.open(ByteBuffer.wrap(bytes));
    } catch (SstFormatException e) {
      throw new IOException("Change feed of " + identity + " version " + version + ": the delta "
          + "in " + objects.describe(ref.key()) + " is not a readable SST: " + e.getMessage(), e);
    }
  }
}
