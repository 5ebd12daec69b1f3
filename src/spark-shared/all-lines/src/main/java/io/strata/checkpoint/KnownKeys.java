// SPDX-License-Identifier: Apache-2.0
package io.strata.checkpoint;

import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.LongSupplier;

/**
 * What this JVM knows about the keys directly under directories it listed: the last listing of
 * each directory, updated by every create and delete this JVM's checkpoint file managers make
 * since. It lets Spark's "does batch N exist?" before each metadata log write be answered
 * without a request (Spark asks {@code exists} first, then writes create-only).
 *
 * <p>Why the answers are safe: a "no" can only be stale if another process wrote the key after
 * our listing; the create-only PUT that follows then fails with Spark's already-exists error,
 * exactly as for two racing writers. A manager only uses directories it listed itself (see
 * {@link StrataCheckpointFileManager}), so knowledge never outlives a query run, and a query
 * restarted elsewhere and back starts from a fresh listing.
 *
 * <p>A listing's result is merged with the creates and deletes that happened while it was in
 * flight (each change carries a stamp from one clock; changes newer than the listing's start
 * win), so a write racing a listing is never forgotten. At most {@link #MAX_DIRS} directories are
 * kept, least recently used first out; a forgotten directory costs a request again, nothing
 * more. Thread-safe (one lock; every operation is a few map lookups).
 */
final class KnownKeys {
  /** Directories remembered per JVM. */
  static final int MAX_DIRS = 1024;

  /**
   * How long a file this JVM created counts as present without a listing ({@link
   * #createdHere}), ms: well above the lag a store's reads may trail its writes by that Strata
   * tolerates elsewhere (8 lookups over about 4.5 s). Past it, a listing decides: another
   * process may have deleted the file since (a checkpoint removed by hand, or a tool, before the
   * query starts again in this JVM), and a remembered "it exists" would then make Spark read a
   * file that is gone instead of writing it anew.
   */
  static final long OWN_WRITE_TRUST_MILLIS = 10_000;

  /** The JVM's knowledge, shared by all managers. */
  static final KnownKeys JVM = new KnownKeys(MAX_DIRS);

  private final Map<String, Dir> dirs;
  /**
   * Changes in directories without a listing here, so a listing in flight while they happen
   * still learns them; dropped when the directory is listed (bounded like {@link #dirs}).
   */
  private final Map<String, Dir> unlisted;
  private long clock;
  /** Monotonic time, ns ({@link System#nanoTime()}; tests move it). */
  private final LongSupplier nanos;
  /** {@link #OWN_WRITE_TRUST_MILLIS} in ns (tests shorten it). */
  private volatile long ownWriteTrustNanos = OWN_WRITE_TRUST_MILLIS * 1_000_000L;

  KnownKeys(int maxDirs) {
    this(maxDirs, System::nanoTime);
  }

  /** @param nanos monotonic time in ns, for {@link #OWN_WRITE_TRUST_MILLIS} */
  KnownKeys(int maxDirs, LongSupplier nanos) {
    this.dirs = lru(maxDirs);
    this.unlisted = lru(maxDirs);
    this.nanos = nanos;
  }

  private static Map<String, Dir> lru(int max) {
    return new LinkedHashMap<>(64, 0.75f, true) {
      private static final long serialVersionUID = 1L;

      @Override
      protected boolean removeEldestEntry(Map.Entry<String, Dir> eldest) {
        return size() > max;
      }
    };
  }

  /**
   * One child of a listed directory: present or deleted, file or directory, when learnt,
   * whether this JVM created it (rather than a listing showing it) and when ({@link #nanos}).
   */
  private record Child(boolean present, boolean directory, long stamp, boolean own,
      long createdNanos) {
    Child(boolean present, boolean directory, long stamp) {
      this(present, directory, stamp, false, 0);
    }
  }

  /** The children of one listed directory, by name. */
  private static final class Dir {
    final Map<String, Child> children = new HashMap<>();

    boolean hasPresentChild() {
      for (Child c : children.values()) {
        if (c.present) {
          return true;
        }
      }
      return false;
    }
  }

  /** Stamps the start of a listing; pass the stamp to {@link #listed}. */
  synchronized long startListing() {
    return ++clock;
  }

  /**
   * Records a complete listing of directory {@code dirKey} that started at {@code stamp}.
   *
   * @param scope the store (endpoint and bucket)
   * @param dirKey directory key without trailing '/'; "" for the bucket root
   * @param files names of the objects directly under it
   * @param subdirs names of its subdirectories (common prefixes without the trailing '/')
   */
  synchronized void listed(String scope, String dirKey, Collection<String> files,
      Collection<String> subdirs, long stamp) {
    Dir fresh = new Dir();
    for (String f : files) {
      fresh.children.put(f, new Child(true, false, stamp));
    }
    for (String d : subdirs) {
      fresh.children.put(d, new Child(true, true, stamp));
    }
    for (Dir old : new Dir[] {dirs.get(id(scope, dirKey)), unlisted.remove(id(scope, dirKey))}) {
      if (old != null) {
        old.children.forEach((name, c) -> {
          if (c.stamp > stamp) {
            fresh.children.put(name, c); // changed while the listing was in flight
          }
        });
      }
    }
    dirs.put(id(scope, dirKey), fresh);
  }

  /**
   * Records that this JVM created the object {@code key}, or that its create-only PUT found it
   * there (and so its ancestor directories).
   */
  synchronized void created(String scope, String key) {
    long stamp = ++clock;
    put(scope, key, new Child(true, false, stamp, true, nanos.getAsLong()));
    markAncestors(scope, parentOf(key), stamp);
  }

  /**
   * True if this JVM created the object {@code key} (or its create-only PUT found it there) less
   * than {@link #OWN_WRITE_TRUST_MILLIS} ago and nothing learnt since says otherwise: no
   * listing of its parent started after the create, and this JVM did not delete it. Lets a
   * manager that never listed the parent answer {@code exists} for a file this JVM just wrote
   * without a LIST, which a store whose listings lag behind its writes would answer "no". Later,
   * a listing decides: the file may have been deleted by another process since.
   */
  synchronized boolean createdHere(String scope, String key) {
    String parentId = id(scope, parentOf(key));
    Dir d = dirs.get(parentId);
    if (d == null) {
      d = unlisted.get(parentId);
    }
    Child c = d == null ? null : d.children.get(nameOf(key));
    return c != null && c.present && c.own && !c.directory
        && nanos.getAsLong() - c.createdNanos < ownWriteTrustNanos;
  }

  /**
   * Sets how long a file this JVM created counts as present without a listing (tests against a
   * real server, which cannot wait {@link #OWN_WRITE_TRUST_MILLIS}).
   *
   * @return the previous value, ms
   */
  long ownWriteTrustMillis(long millis) {
    long before = ownWriteTrustNanos / 1_000_000L;
    ownWriteTrustNanos = millis * 1_000_000L;
    return before;
  }

  /** Records that this JVM made directory {@code key} visible to its parent's listing. */
  synchronized void madeDir(String scope, String key) {
    if (key.isEmpty()) {
      return;
    }
    long stamp = ++clock;
    markAncestors(scope, key, stamp);
  }

  /**
   * Records that this JVM deleted {@code key}, and everything under it if it was a directory:
   * what is known below it is forgotten.
   */
  synchronized void deleted(String scope, String key) {
    long stamp = ++clock;
    put(scope, key, new Child(false, false, stamp));
    String self = id(scope, key);
    String below = self + "/";
    dirs.keySet().removeIf(d -> d.equals(self) || d.startsWith(below));
    unlisted.keySet().removeIf(d -> d.equals(self) || d.startsWith(below));
  }

  /**
   * Whether {@code key} exists (as an object or a non-empty directory) according to the known
   * listings, or null if they cannot tell.
   *
   * @param useSelf consult the listing of {@code key} itself (as a directory)
   * @param useParent consult the listing of {@code key}'s parent directory
   */
  synchronized Boolean exists(String scope, String key, boolean useSelf, boolean useParent) {
    if (useSelf) {
      Dir self = dirs.get(id(scope, key));
      if (self != null && self.hasPresentChild()) {
        return Boolean.TRUE;
      }
    }
    Dir parent = useParent ? dirs.get(id(scope, parentOf(key))) : null;
    if (parent == null) {
      return null;
    }
    Child c = parent.children.get(nameOf(key));
    return c != null && c.present;
  }

  /** True if the listing of its parent shows {@code key} as an object (not a directory). */
  synchronized boolean isKnownObject(String scope, String key) {
    Dir parent = dirs.get(id(scope, parentOf(key)));
    Child c = parent == null ? null : parent.children.get(nameOf(key));
    return c != null && c.present && !c.directory;
  }

  /** True if directory {@code dirKey} of {@code scope} has a listing here. */
  synchronized boolean knows(String scope, String dirKey) {
    return dirs.containsKey(id(scope, dirKey));
  }

  /** Records a change of {@code key} in its parent's listing, or as a change to merge later. */
  private void put(String scope, String key, Child child) {
    String parentId = id(scope, parentOf(key));
    Dir parent = dirs.get(parentId);
    if (parent == null) {
      parent = unlisted.computeIfAbsent(parentId, k -> new Dir());
    }
    parent.children.put(nameOf(key), child);
  }

  /** Marks {@code dirKey} and each of its ancestors as a present directory in known parents. */
  private void markAncestors(String scope, String dirKey, long stamp) {
    String k = dirKey;
    while (!k.isEmpty()) {
      put(scope, k, new Child(true, true, stamp));
      k = parentOf(k);
    }
  }

  private static String id(String scope, String dirKey) {
    return scope + '\u0000' + dirKey;
  }

  static String parentOf(String key) {
    int slash = key.lastIndexOf('/');
    return slash < 0 ? "" : key.substring(0, slash);
  }

  static String nameOf(String key) {
    return key.substring(key.lastIndexOf('/') + 1);
  }
}
