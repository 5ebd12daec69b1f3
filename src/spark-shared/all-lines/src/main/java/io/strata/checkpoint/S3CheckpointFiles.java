// SPDX-License-Identifier: Apache-2.0
package io.strata.checkpoint;

import io.strata.config.StrataConf;
import io.strata.hadoop.HadoopLookup;
import io.strata.objectstore.DelimitedListing;
import io.strata.objectstore.ObjectInfo;
import io.strata.objectstore.ObjectStore;
import io.strata.objectstore.ObjectStores;
import io.strata.objectstore.S3Settings;
import java.io.IOException;
import java.io.InputStream;
import java.lang.ref.Cleaner;
import java.net.URI;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.PathFilter;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The version-neutral part of {@link StrataCheckpointFileManager}: Spark's checkpoint files
 * (offsets, commits, metadata, source logs, state schema and operator metadata files) on S3
 * through Strata's object store. Needs no Hadoop {@code FileSystem} for the scheme, so it works
 * without {@code hadoop-aws}. Each Spark version's {@code StrataCheckpointFileManager} (the
 * {@code CheckpointFileManager} trait moved package in Spark 4.1) forwards S3 paths here.
 *
 * <p>For {@code s3://}, {@code s3a://} and {@code s3n://} paths (and scheme-less paths when
 * {@code fs.defaultFS} is one of them) it maps Spark's calls to S3 requests:
 *
 * <table>
 *   <caption>Spark's call and what it costs</caption>
 *   <tr><th>call</th><th>requests</th></tr>
 *   <tr><td>{@code createAtomic(p, false)} then {@code close()}</td>
 *       <td>one PUT with {@code If-None-Match: *}: the object appears whole at close or not at
 *       all; if it exists, Hadoop's {@code FileAlreadyExistsException} (Spark then reports two
 *       queries using one checkpoint). No temp file, no rename, no COPY.</td></tr>
 *   <tr><td>{@code createAtomic(p, true)} then {@code close()}</td><td>one plain PUT</td></tr>
 *   <tr><td>{@code cancel()}</td><td>none; nothing appears</td></tr>
 *   <tr><td>{@code open(p)}</td><td>one GET (a seek elsewhere: one ranged GET, plus one HEAD
 *       the first time a seek needs the length); none for one of the last {@value
 *       #READ_BACK_FILES} files of up to {@value #READ_BACK_MAX_BYTES} bytes this manager wrote
 *       create-only (such an object never changes); {@code FileNotFoundException} if
 *       missing, after up to {@value #LOOKUP_ATTEMPTS} GETs over about 4.5 s for a file this
 *       JVM wrote (a store whose reads lag behind its writes)</td></tr>
 *   <tr><td>{@code list(dir)}</td><td>one LIST with delimiter '/' per 1000 entries; objects
 *       are files, common prefixes directories; a missing directory lists empty</td></tr>
 *   <tr><td>{@code exists(p)}</td><td>none if this JVM wrote {@code p} and listed its parent
 *       at no later time, or if this manager listed {@code p}'s parent (the answer comes from
 *       that listing plus this JVM's own writes since, see {@link KnownKeys}); else one LIST of prefix {@code p} with delimiter '/' (an object {@code p} or anything
 *       under {@code p/})</td></tr>
 *   <tr><td>{@code delete(p)}</td><td>one DeleteObjects if the listing shows {@code p} as an
 *       object; else one LIST of {@code p/} and DeleteObjects of {@code p} and all below</td></tr>
 *   <tr><td>{@code mkdirs}, {@code createCheckpointDirectory}</td><td>none (S3 has no
 *       directories; a directory exists once a key under it does)</td></tr>
 * </table>
 *
 * <p>So in steady state a metadata log write is one PUT: Spark's {@code exists} check before it
 * is answered from the listing the log made when the query started. A stale "no" (another
 * process wrote the batch since) is caught by the create-only PUT, as any race is.
 *
 * <p>Any other scheme ({@code file:}, {@code hdfs:}, ...) is handed by the adapter to Spark's
 * default manager (FileContext-based, else FileSystem-based), so the setting can be global.
 *
 * <p>S3 settings are Strata's ({@code spark.sql.streaming.stateStore.strata.s3.*}, falling back
 * to the global {@code fs.s3a.*} keys), read from the Hadoop configuration Spark passes (the
 * session's SQL settings are in it): one endpoint, region, path style and credentials for the
 * state and the checkpoint files. Equal settings share one S3 client per JVM.
 *
 * <p>Spark creates one manager per metadata log and never closes them; the object stores this
 * manager opens are released by {@link #close()} or, failing that, when the manager becomes
 * unreachable (a {@link Cleaner}). Thread-safe.
 */
final class S3CheckpointFiles {
  private static final Logger LOG = LoggerFactory.getLogger(S3CheckpointFiles.class);

  /** Releases stores of managers Spark dropped without closing; one daemon thread per JVM. */
  private static final Cleaner CLEANER = Cleaner.create();

  /** Files this manager wrote create-only that {@link #open} serves from memory (count). */
  static final int READ_BACK_FILES = 16;
  /** Largest file kept for {@link #open} (bytes); metadata log entries are far smaller. */
  static final int READ_BACK_MAX_BYTES = 256 * 1024;

  /** Block size reported in file statuses (bytes); S3 has none, Spark does not use it. */
  private static final long BLOCK_SIZE = 32L << 20;

  /** The constructor's path, qualified. */
  private final Path root;
  private final S3Settings s3;
  private final Stores stores;
  private final Cleaner.Cleanable cleanable;
  /** Directory ids ({@link #id}) this manager listed: only their knowledge is used. */
  private final Set<String> listedHere = ConcurrentHashMap.newKeySet();
  /** Directory ids this manager made with {@code mkdirs}; they exist for it. */
  private final Set<String> madeHere = ConcurrentHashMap.newKeySet();
  /**
   * The last {@value #READ_BACK_FILES} small files this manager wrote create-only, by id, oldest
   * first. A create-only object never changes, so reading it back needs no request (Spark's file
   * source reads each log entry right after writing it, and its compaction the last nine).
   */
  private final Map<String, byte[]> readBack = Collections.synchronizedMap(
      new LinkedHashMap<>(32, 0.75f, false) {
        private static final long serialVersionUID = 1L;

        @Override
        protected boolean removeEldestEntry(Map.Entry<String, byte[]> eldest) {
          return size() > READ_BACK_FILES;
        }
      });

  /**
   * True if {@code path} is on S3 ({@code s3://}, {@code s3a://}, {@code s3n://}, or scheme-less
   * with an S3 {@code fs.defaultFS}): this class serves it.
   */
  static boolean serves(Path path, Configuration hadoopConf) {
    return CheckpointPath.isS3(qualify(path, hadoopConf, null).toUri().getScheme());
  }

  /**
   * Files under an S3 path ({@link #serves}). Does no network I/O.
   *
   * @param path a path of the checkpoint (its root, a log directory or a file's parent)
   * @param hadoopConf the session's Hadoop configuration (with its SQL settings)
   * @throws IllegalArgumentException for an S3 path without bucket or with credentials in it,
   *     or an invalid Strata setting (the message names the key); Spark reports it as a failure
   *     to load the checkpoint file manager
   */
  S3CheckpointFiles(Path path, Configuration hadoopConf) {
    Path qualified = qualify(path, hadoopConf, null);
    CheckpointPath cp = CheckpointPath.of(qualified);
    this.root = qualified;
    this.s3 = settings(hadoopConf, cp.bucket()).s3();
    this.stores = new Stores(s3, cp.bucket());
    this.cleanable = CLEANER.register(this, stores);
    stores.get(cp.bucket()); // fails now on a bad bucket name
  }

  /**
   * Strata's settings from a Hadoop configuration: its Strata keys, then S3A fallbacks for
   * {@code bucket} (its {@code fs.s3a.bucket.<bucket>.*} keys before the global ones).
   */
  static StrataConf settings(Configuration conf, String bucket) {
    Map<String, String> strata = new HashMap<>();
    for (Map.Entry<String, String> e : conf) {
      if (e.getKey().startsWith(StrataConf.PREFIX)) {
        strata.put(e.getKey(), conf.get(e.getKey()));
      }
    }
    return HadoopLookup.strataConf(strata, conf, bucket);
  }

  /**
   * Writes {@code path} atomically at close: create-only unless {@code overwriteIfPossible}.
   *
   * @return a stream whose {@code close()} sends one PUT and whose {@code cancel()} sends nothing;
   *     {@code close()} throws Hadoop's {@code FileAlreadyExistsException} if a create-only
   *     write finds the object there
   */
  AtomicPutOutputStream createAtomic(Path path, boolean overwriteIfPossible) {
    CheckpointPath cp = objectPath(path, "create");
    ObjectStore store = stores.get(cp.bucket());
    String scope = scope(cp.bucket());
    String key = cp.key();
    return new AtomicPutOutputStream(store.describe(key), body -> {
      try {
        Errors.translate(() -> {
          if (overwriteIfPossible) {
            store.put(key, body);
          } else {
            store.putIfAbsent(key, body);
          }
          return null;
        });
      } catch (org.apache.hadoop.fs.FileAlreadyExistsException e) {
        KnownKeys.JVM.created(scope, key); // it exists: another writer's
        throw e;
      }
      KnownKeys.JVM.created(scope, key);
      String id = id(cp.bucket(), key);
      if (!overwriteIfPossible && body.length() <= READ_BACK_MAX_BYTES) {
        try (InputStream bytes = body.open()) {
          readBack.put(id, bytes.readAllBytes());
        }
      } else {
        readBack.remove(id);
      }
      LOG.debug("Wrote {} ({} bytes, {})", store.describe(key), body.length(),
          overwriteIfPossible ? "overwrite" : "create-only");
    });
  }

  /**
   * Opens {@code path} with one GET, or none for one of the last files this manager wrote
   * create-only (served from memory: such an object never changes).
   *
   * @throws java.io.FileNotFoundException (undeclared, Scala-style) if it does not exist
   */
  FSDataInputStream open(Path path) {
    CheckpointPath cp = objectPath(path, "open");
    byte[] written = readBack.get(id(cp.bucket(), cp.key()));
    if (written != null) {
      return new FSDataInputStream(new BytesReadStream(written, path.toString()));
    }
    ObjectStore store = stores.get(cp.bucket());
    boolean ours = KnownKeys.JVM.createdHere(scope(cp.bucket()), cp.key());
    for (int attempt = 1; ; attempt++) {
      try {
        return new FSDataInputStream(new ObjectReadStream(store, cp.key()));
      } catch (java.io.FileNotFoundException e) {
        if (!ours || attempt >= LOOKUP_ATTEMPTS) {
          throw Errors.sneaky(e);
        }
        // This JVM wrote it: a store whose reads lag behind its writes shows it late.
        sleepBeforeLookup(attempt, store.describe(cp.key()));
      } catch (IOException e) {
        throw Errors.sneaky(e);
      }
    }
  }

  /** GETs of a file this JVM wrote that a GET does not find (about 4.5 s in all). */
  static final int LOOKUP_ATTEMPTS = 8;

  /** Waits before lookup {@code attempt + 1}: 100 ms, doubling, at most 1 s. */
  private static void sleepBeforeLookup(int attempt, String what) {
    try {
      Thread.sleep(Math.min(1_000L, 100L << (attempt - 1)));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw Errors.sneaky(new java.io.InterruptedIOException("Cannot read " + what
          + ": interrupted while waiting for it to show"));
    }
  }

  /**
   * Lists the files and subdirectories directly under {@code path} that {@code filter} accepts
   * (one LIST per 1000 entries); empty if there are none.
   */
  FileStatus[] list(Path path, PathFilter filter) {
    CheckpointPath dir = resolve(path);
    ObjectStore store = stores.get(dir.bucket());
    String scope = scope(dir.bucket());
    long stamp = KnownKeys.JVM.startListing();
    DelimitedListing listing;
    try {
      listing = store.listDelimited(dir.dirPrefix());
    } catch (IOException e) {
      throw Errors.sneaky(e);
    }
    int skip = dir.dirPrefix().length();
    List<String> files = new ArrayList<>();
    List<String> subdirs = new ArrayList<>();
    List<FileStatus> out = new ArrayList<>();
    for (ObjectInfo o : listing.objects()) {
      String name = o.key().substring(skip);
      if (name.isEmpty()) {
        continue; // a directory marker ("dir/") written by another tool
      }
      files.add(name);
      Path child = dir.child(name);
      if (filter.accept(child)) {
        out.add(new FileStatus(o.size(), false, 1, BLOCK_SIZE, o.lastModifiedMillis(), child));
      }
    }
    for (String p : listing.commonPrefixes()) {
      String name = p.substring(skip, p.length() - 1);
      subdirs.add(name);
      Path child = dir.child(name);
      if (filter.accept(child)) {
        out.add(new FileStatus(0, true, 1, 0, 0, child));
      }
    }
    KnownKeys.JVM.listed(scope, dir.key(), files, subdirs, stamp);
    listedHere.add(id(dir.bucket(), dir.key()));
    return out.toArray(new FileStatus[0]);
  }

  /** Nothing to do on S3 (no directories); the directory exists for this manager from now on. */
  void mkdirs(Path path) {
    CheckpointPath cp = resolve(path);
    madeHere.add(id(cp.bucket(), cp.key()));
    KnownKeys.JVM.madeDir(scope(cp.bucket()), cp.key());
  }

  /**
   * True if {@code path} is an object or has objects under it. No request when this manager
   * listed its parent (or, for a directory, the directory itself); else one LIST.
   */
  boolean exists(Path path) {
    CheckpointPath cp = resolve(path);
    if (cp.isRoot() || madeHere.contains(id(cp.bucket(), cp.key()))) {
      return true;
    }
    String scope = scope(cp.bucket());
    if (KnownKeys.JVM.createdHere(scope, cp.key())) {
      return true; // written by this JVM, and no listing since: a lagging LIST could miss it
    }
    Boolean known = KnownKeys.JVM.exists(scope, cp.key(),
        listedHere.contains(id(cp.bucket(), cp.key())),
        listedHere.contains(id(cp.bucket(), cp.parentKey())));
    if (known != null) {
      return known;
    }
    try {
      DelimitedListing l = stores.get(cp.bucket()).listDelimited(cp.key());
      for (ObjectInfo o : l.objects()) {
        if (o.key().equals(cp.key())) {
          return true;
        }
      }
      return l.commonPrefixes().contains(cp.key() + "/");
    } catch (IOException e) {
      throw Errors.sneaky(e);
    }
  }

  /**
   * Deletes {@code path} and everything under it; nothing if it does not exist. One DeleteObjects
   * for an object this manager's listing shows; else one LIST and DeleteObjects.
   *
   * @throws IllegalArgumentException for the bucket root
   */
  void delete(Path path) {
    CheckpointPath cp = objectPath(path, "delete");
    ObjectStore store = stores.get(cp.bucket());
    String scope = scope(cp.bucket());
    List<String> keys = new ArrayList<>();
    keys.add(cp.key());
    try {
      boolean knownObject = listedHere.contains(id(cp.bucket(), cp.parentKey()))
          && KnownKeys.JVM.isKnownObject(scope, cp.key());
      if (!knownObject) {
        for (ObjectInfo o : store.list(cp.dirPrefix())) {
          keys.add(o.key());
        }
      }
      store.delete(keys);
    } catch (IOException e) {
      throw Errors.sneaky(e);
    }
    KnownKeys.JVM.deleted(scope, cp.key());
    String gone = id(cp.bucket(), cp.key());
    madeHere.remove(gone);
    synchronized (readBack) {
      readBack.keySet().removeIf(k -> k.equals(gone) || k.startsWith(gone + "/"));
    }
  }

  /** The qualified checkpoint path; no request (S3 has no directories). */
  Path createCheckpointDirectory() {
    mkdirs(root);
    LOG.info("Spark's checkpoint files under {} go to S3 at {} through Strata's object store "
        + "(one create-only PUT per log entry, no rename)", root,
        s3.endpoint().map(URI::toString).orElse("AWS S3 " + s3.region()));
    return root;
  }

  /** Releases this manager's object stores; later S3 calls fail. Idempotent. */
  void close() {
    cleanable.clean();
  }

  @Override
  public String toString() {
    return "StrataCheckpointFileManager[" + root + " at "
        + s3.endpoint().map(URI::toString).orElse("AWS S3 " + s3.region()) + "]";
  }

  // ------------------------------------------------------------------------------------------

  private CheckpointPath resolve(Path path) {
    return CheckpointPath.of(qualify(path, null, root));
  }

  /** A path that names an object (not the bucket root). */
  private CheckpointPath objectPath(Path path, String action) {
    CheckpointPath cp = resolve(path);
    if (cp.isRoot()) {
      throw new IllegalArgumentException("Cannot " + action + " '" + path
          + "': it is a bucket root, not a checkpoint file");
    }
    return cp;
  }

  /**
   * {@code path} with a scheme: as is if it has one; else made absolute on {@code fs.defaultFS}
   * when that is S3 (with {@code conf} null, on {@code root}'s scheme and bucket instead).
   */
  private static Path qualify(Path path, Configuration conf, Path root) {
    URI uri = path.toUri();
    if (uri.getScheme() != null) {
      return path;
    }
    URI base = conf != null ? FileSystem.getDefaultUri(conf) : root.toUri();
    if (base == null || !CheckpointPath.isS3(base.getScheme())) {
      return path;
    }
    String p = uri.getPath() == null ? "/" : uri.getPath();
    return new Path(base.getScheme(), base.getAuthority(), p.startsWith("/") ? p : "/" + p);
  }

  /** Identifies a store in {@link KnownKeys}: endpoint, region and bucket. */
  private String scope(String bucket) {
    return s3.endpoint().map(URI::toString).orElse("aws") + "|" + s3.region() + "|" + bucket;
  }

  private static String id(String bucket, String key) {
    return bucket + '\u0000' + key;
  }

  /**
   * The object store of one manager, for its root's bucket; closing releases its S3 client. The
   * settings were resolved for that bucket (its {@code fs.s3a.bucket.<bucket>.*} keys), so a
   * path in another bucket is refused rather than reached with them.
   */
  private static final class Stores implements Runnable {
    private final S3Settings s3;
    private final String rootBucket;
    private final Map<String, ObjectStore> byBucket = new HashMap<>();
    private boolean closed;

    Stores(S3Settings s3, String rootBucket) {
      this.s3 = s3;
      this.rootBucket = rootBucket;
    }

    /**
     * The store of {@code bucket}.
     *
     * @throws IllegalStateException if the manager is closed
     * @throws IllegalArgumentException if {@code bucket} is not the root's bucket
     */
    synchronized ObjectStore get(String bucket) {
      if (closed) {
        throw new IllegalStateException("Checkpoint file manager for s3://" + bucket
            + " is closed");
      }
      if (!bucket.equals(rootBucket)) {
        throw new IllegalArgumentException("Cannot use s3://" + bucket + " through the "
            + "checkpoint file manager of s3://" + rootBucket + ": its settings were resolved "
            + "for that bucket; open a manager for the other bucket's path");
      }
      return byBucket.computeIfAbsent(bucket,
          b -> ObjectStores.open("s3://" + b, s3, CheckpointRequests.LISTENER));
    }

    /** Closes every store; run by {@link #close()} or the cleaner, once. */
    @Override
    public synchronized void run() {
      closed = true;
      byBucket.values().forEach(ObjectStore::close);
      byBucket.clear();
    }
  }
}
