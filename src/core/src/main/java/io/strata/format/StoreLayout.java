// SPDX-License-Identifier: Apache-2.0
package io.strata.format;

import java.security.SecureRandom;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The one place that builds object keys. Keys are relative to the store's root (Spark's store
 * checkpoint location, {@code <checkpoint>/state/<operatorId>/<partitionId>[/<storeName>]}).
 *
 * <pre>
 * v/&lt;version:20 digits&gt;.svo               version object of checkpoint format 1 (first writer wins)
 * v/&lt;version:20 digits&gt;/&lt;attempt&gt;.svo     version object of checkpoint format 2, one per attempt
 * v/&lt;version:20 digits&gt;/g&lt;generation:10&gt;.svo  version object of checkpoint format 1 (layout 2), one per committing query run
 * runs/&lt;epoch:10&gt;.run                      a query run's claim of its epoch in this store (layout 2)
 * runs/&lt;epoch:10&gt;-&lt;run id&gt;.id             the claim's marker: the run id in the key, for one LIST
 * spill/&lt;version:20&gt;-&lt;attempt&gt;-&lt;n&gt;.sst      extra delta of a large batch, uploaded before commit
 * sst/&lt;uuid&gt;.sst                            SST of a base snapshot not already in S3
 * snap/&lt;version:20&gt;-&lt;attempt&gt;-&lt;uuid&gt;.pack RocksDB metadata files of a base snapshot
 * b/&lt;version:20&gt;-&lt;tip:16 hex&gt;-&lt;uuid&gt;.bsm  published snapshot: a base snapshot any later load on its lineage may use
 * </pre>
 *
 * Versions are zero-padded so keys sort by version. Attempt ids are {@code <epoch ms, 12 hex>-<64
 * random bits, 16 hex>}: unique per commit attempt and sortable by creation time.
 */
public final class StoreLayout {
  /** Prefix of all version objects. */
  public static final String VERSIONS = "v/";
  /** Suffix of version objects. */
  public static final String VERSION_OBJECT_SUFFIX = ".svo";
  /** Prefix of spill deltas. */
  public static final String SPILLS = "spill/";
  /** Prefix of base-snapshot SSTs. */
  public static final String SNAPSHOT_SSTS = "sst/";
  /** Prefix of base-snapshot packs. */
  public static final String SNAPSHOT_PACKS = "snap/";
  /** Prefix of published snapshots ({@link #publishedSnapshot}). */
  public static final String PUBLISHED_SNAPSHOTS = "b/";
  /** Suffix of published snapshots. */
  public static final String PUBLISHED_SNAPSHOT_SUFFIX = ".bsm";
  /** Prefix of the query runs' epoch claims (layout 2). */
  public static final String RUNS = "runs/";
  /**
   * Prefix of savepoint holds: {@code holds/<savepoint>/<version object key>.hold}, one per
   * store and savepoint, naming the version object the savepoint keeps ({@link #hold}).
   */
  public static final String HOLDS = "holds/";
  private static final String HOLD_SUFFIX = ".hold";
  private static final Pattern SAVEPOINT_NAME =
      Pattern.compile("[A-Za-z0-9][A-Za-z0-9_.-]{0,63}");
  private static final Pattern ATTEMPT = Pattern.compile("[0-9a-f]{12}-[0-9a-f]{16}");
  private static final Pattern GENERATION_NAME = Pattern.compile("g([0-9]{10})\\.svo");
  private static final Pattern RUN_CLAIM = Pattern.compile("runs/([0-9]{10})\\.run");
  private static final Pattern RUN_MARKER =
      Pattern.compile("runs/([0-9]{10})-([0-9A-Za-z._-]{1,64})\\.id");
  private static final Pattern RETIRED_RUNS = Pattern.compile("runs/([0-9]{10})\\.retired");
  /** Highest epoch or generation a key can carry (10 digits). */
  public static final long MAX_EPOCH = 9_999_999_999L;
  private static final Pattern SPILL_KEY =
      Pattern.compile("spill/([0-9]{20})-[0-9a-f]{12}-[0-9a-f]{16}-[0-9]+\\.sst");
  private static final Pattern SNAPSHOT_SST_KEY = Pattern.compile("sst/[0-9a-f]{32}\\.sst");
  private static final Pattern SNAPSHOT_PACK_KEY =
      Pattern.compile("snap/([0-9]{20})-[0-9a-f]{12}-[0-9a-f]{16}-[0-9a-f]{32}\\.pack");
  private static final Pattern PUBLISHED_SNAPSHOT_KEY =
      Pattern.compile("b/([0-9]{20})-([0-9a-f]{16})-[0-9a-f]{32}\\.bsm");
  private static final SecureRandom RANDOM = new SecureRandom();

  private StoreLayout() { }

  /** {@code v/<version>/}: the prefix under which every attempt of {@code version} lives. */
  public static String versionPrefix(long version) {
    requireVersion(version);
    return VERSIONS + pad(version) + "/";
  }

  /**
   * Key of the version object of {@code version} written by {@code attempt}: the per-attempt key
   * of checkpoint format 2, where the driver names the attempt to load.
   */
  public static String versionObject(long version, String attempt) {
    requireAttempt(attempt);
    return versionPrefix(version) + attempt + VERSION_OBJECT_SUFFIX;
  }

  /**
   * Key of the layout-1 version object of {@code version} under checkpoint format 1: {@code
   * v/<version>.svo}, written by stores without a query run (callers outside Spark) and by
   * builds before query runs; a query run writes {@link #generationVersionObject} instead, and
   * a load reads this key as generation 0. Every attempt writes it create-only ({@code
   * If-None-Match: *}), so the first attempt to commit wins and a late, zombie or speculative
   * attempt can never replace it (docs/format.md, "Attempts and zombies").
   */
  public static String versionObject(long version) {
    requireVersion(version);
    return VERSIONS + pad(version) + VERSION_OBJECT_SUFFIX;
  }

  /**
   * Key of the {@code generation}-th version object of {@code version} under checkpoint format 1
   * (layout 2): {@code v/<version>/g<generation:10>.svo}. Generation 1 is the first commit of the
   * version; a later query run re-committing it (a re-run after a rewind or a restart) takes the
   * next free generation, written create-only, so the attempts of one run still race for one
   * key (first writer wins) and an older run can never take a generation above a newer run's
   * (docs/format.md, "Query runs, epochs and generations"). A load reads the greatest
   * generation.
   */
  public static String generationVersionObject(long version, long generation) {
    requireEpoch(generation);
    return versionPrefix(version) + "g" + digits(generation, 10) + VERSION_OBJECT_SUFFIX;
  }

  /**
   * The generation of a checkpoint-format-1 version object key: {@code n} for {@code
   * v/<version>/g<n>.svo}, 0 for the layout-1 key {@code v/<version>.svo} (older than every
   * generation), -1 for anything else (a format-2 attempt's key, a non-version key).
   */
  public static long generationOf(String key) {
    if (versionOf(key) < 0) {
      return -1;
    }
    String rest = key.substring(VERSIONS.length());
    int slash = rest.indexOf('/');
    if (slash < 0) {
      return 0;
    }
    Matcher m = GENERATION_NAME.matcher(rest.substring(slash + 1));
    return m.matches() ? Long.parseLong(m.group(1)) : -1;
  }

  /** Key of the claim of {@code epoch} by a query run: {@code runs/<epoch:10>.run}. */
  public static String runClaim(long epoch) {
    requireEpoch(epoch);
    return RUNS + digits(epoch, 10) + ".run";
  }

  /**
   * Key of the marker naming the run that claimed {@code epoch}: {@code
   * runs/<epoch:10>-<runId>.id}, so one LIST of {@link #RUNS} tells every run's epoch.
   */
  public static String runMarker(long epoch, String runId) {
    requireEpoch(epoch);
    String key = RUNS + digits(epoch, 10) + "-" + runId + ".id";
    if (!RUN_MARKER.matcher(key).matches()) {
      throw new IllegalArgumentException("invalid run id '" + runId + "'");
    }
    return key;
  }

  /**
   * Key of the list of retired query runs through {@code epoch}: {@code
   * runs/<epoch:10>.retired} ({@link RetiredRuns}), written by garbage collection before it
   * deletes the claims and markers of those runs.
   */
  public static String retiredRuns(long epoch) {
    requireEpoch(epoch);
    return RUNS + digits(epoch, 10) + ".retired";
  }

  /** The epoch of a retired-runs key ({@link #retiredRuns}), or -1. */
  public static long retiredRunsEpochOf(String key) {
    Matcher m = RETIRED_RUNS.matcher(key);
    return m.matches() ? Long.parseLong(m.group(1)) : -1;
  }

  /** True if {@code name} may name a savepoint: 1 to 64 of {@code A-Z a-z 0-9 _ . -}, not first. */
  public static boolean isSavepointName(String name) {
    return name != null && SAVEPOINT_NAME.matcher(name).matches();
  }

  /**
   * Key of savepoint {@code savepoint}'s hold on {@code versionObjectKey}: {@code
   * holds/<savepoint>/<versionObjectKey>.hold}. Garbage collection keeps a held version object
   * and everything its manifest names, however old (docs/format.md, "Savepoints"); the key alone
   * says what is held, so a round needs no request beyond its one LIST.
   *
   * @throws IllegalArgumentException if the name is not a savepoint name ({@link
   *     #isSavepointName}) or the key is not a version object's
   */
  public static String hold(String savepoint, String versionObjectKey) {
    if (!isSavepointName(savepoint)) {
      throw new IllegalArgumentException("invalid savepoint name '" + savepoint + "': expected 1 "
          + "to 64 of A-Z a-z 0-9 _ . - (not first)");
    }
    if (versionOf(versionObjectKey) < 0) {
      throw new IllegalArgumentException("not a version object key: " + versionObjectKey);
    }
    return HOLDS + savepoint + "/" + versionObjectKey + HOLD_SUFFIX;
  }

  /** The version object key a hold key ({@link #hold}) names, or null if it is not one. */
  public static String heldVersionObjectOf(String key) {
    if (!key.startsWith(HOLDS) || !key.endsWith(HOLD_SUFFIX)) {
      return null;
    }
    int slash = key.indexOf('/', HOLDS.length());
    if (slash < 0 || !isSavepointName(key.substring(HOLDS.length(), slash))) {
      return null;
    }
    String object = key.substring(slash + 1, key.length() - HOLD_SUFFIX.length());
    return versionOf(object) >= 0 ? object : null;
  }

  /** The savepoint a hold key ({@link #hold}) belongs to, or null if it is not one. */
  public static String holdSavepointOf(String key) {
    return heldVersionObjectOf(key) == null ? null
        : key.substring(HOLDS.length(), key.indexOf('/', HOLDS.length()));
  }

  /** The epoch of a claim key ({@link #runClaim}), or -1. */
  public static long claimEpochOf(String key) {
    Matcher m = RUN_CLAIM.matcher(key);
    return m.matches() ? Long.parseLong(m.group(1)) : -1;
  }

  /** The epoch of a marker key ({@link #runMarker}), or -1. */
  public static long markerEpochOf(String key) {
    Matcher m = RUN_MARKER.matcher(key);
    return m.matches() ? Long.parseLong(m.group(1)) : -1;
  }

  /** The run id of a marker key ({@link #runMarker}), or null. */
  public static String markerRunOf(String key) {
    Matcher m = RUN_MARKER.matcher(key);
    return m.matches() ? m.group(2) : null;
  }

  /**
   * The version a key under {@link #VERSIONS} belongs to, for every shape ({@code
   * v/<version>.svo}, {@code v/<version>/<attempt>.svo} and {@code v/<version>/g<generation>.svo}), or -1 if the key is not a version
   * object.
   */
  public static long versionOf(String key) {
    if (!key.startsWith(VERSIONS) || !key.endsWith(VERSION_OBJECT_SUFFIX)) {
      return -1;
    }
    String rest = key.substring(VERSIONS.length());
    int slash = rest.indexOf('/');
    String digits;
    if (slash < 0) {
      digits = rest.substring(0, rest.length() - VERSION_OBJECT_SUFFIX.length());
    } else {
      String name = rest.substring(slash + 1);
      if ((attemptOf(key) == null && !GENERATION_NAME.matcher(name).matches())
          || rest.indexOf('/', slash + 1) >= 0) {
        return -1;
      }
      digits = rest.substring(0, slash);
    }
    if (digits.length() != 20 || !digits.chars().allMatch(c -> c >= '0' && c <= '9')) {
      return -1;
    }
    return Long.parseLong(digits);
  }

  /**
   * The attempt id encoded in a version object key under {@link #versionPrefix}, or null if the
   * key is not a version object.
   */
  public static String attemptOf(String versionObjectKey) {
    int slash = versionObjectKey.lastIndexOf('/');
    String name = versionObjectKey.substring(slash + 1);
    if (!name.endsWith(VERSION_OBJECT_SUFFIX)) {
      return null;
    }
    String attempt = name.substring(0, name.length() - VERSION_OBJECT_SUFFIX.length());
    return ATTEMPT.matcher(attempt).matches() ? attempt : null;
  }

  /** Key of the {@code n}-th spill delta of an attempt. */
  public static String spill(long version, String attempt, int n) {
    requireAttempt(attempt);
    return "spill/" + pad(version) + "-" + attempt + "-" + n + ".sst";
  }

  /**
   * The version of a spill delta key {@code spill/<version:20>-<attempt>-<n>.sst} ({@link
   * #spill}), or -1 if the key does not have that shape.
   */
  public static long spillVersionOf(String key) {
    Matcher m = SPILL_KEY.matcher(key);
    return m.matches() ? Long.parseLong(m.group(1)) : -1;
  }

  /** True if {@code key} has the shape of a base-snapshot SST, {@code sst/<32 hex>.sst}. */
  public static boolean isSnapshotSst(String key) {
    return SNAPSHOT_SST_KEY.matcher(key).matches();
  }

  /**
   * The version of a base-snapshot pack key {@code snap/<version:20>-<attempt>-<32 hex>.pack}
   * ({@link #snapshotPack}), or -1 if the key does not have that shape.
   */
  public static long snapshotPackVersionOf(String key) {
    Matcher m = SNAPSHOT_PACK_KEY.matcher(key);
    return m.matches() ? Long.parseLong(m.group(1)) : -1;
  }

  /** Key of a base-snapshot SST uploaded under a fresh unique name. */
  public static String snapshotSst(String uniqueName) {
    return "sst/" + uniqueName + ".sst";
  }

  /**
   * Key of the pack of small RocksDB files of a base snapshot of {@code version} (attempt {@code
   * attempt}); {@code uniqueName} ({@link #newUniqueName()}) keeps two snapshots of the same
   * version apart.
   */
  public static String snapshotPack(long version, String attempt, String uniqueName) {
    requireAttempt(attempt);
    if (!uniqueName.matches("[0-9a-f]{32}")) {
      throw new IllegalArgumentException("invalid unique name '" + uniqueName + "'");
    }
    return "snap/" + pad(version) + "-" + attempt + "-" + uniqueName + ".pack";
  }

  /**
   * Key of a published snapshot of {@code version} ({@link PublishedSnapshot}): {@code
   * b/<version:20>-<tip:16 hex>-<uniqueName>.bsm}. {@code tipHash} is {@link
   * PublishedSnapshot.Tip#hash()} of the lineage it was taken on, so a load or a
   * garbage-collection round decides from one LIST which published snapshots a manifest can use
   * (the object's content then confirms it); {@code uniqueName} ({@link #newUniqueName()}) makes
   * the key unique to one upload.
   *
   * @throws IllegalArgumentException if {@code version < 1} or {@code uniqueName} is not 32 hex
   *     digits
   */
  public static String publishedSnapshot(long version, long tipHash, String uniqueName) {
    if (version < 1) {
      throw new IllegalArgumentException("version must be >= 1, was " + version);
    }
    if (!uniqueName.matches("[0-9a-f]{32}")) {
      throw new IllegalArgumentException("invalid unique name '" + uniqueName + "'");
    }
    return PUBLISHED_SNAPSHOTS + pad(version) + "-" + Checksums.hex(tipHash) + "-" + uniqueName
        + PUBLISHED_SNAPSHOT_SUFFIX;
  }

  /** The version of a published-snapshot key ({@link #publishedSnapshot}), or -1. */
  public static long publishedSnapshotVersionOf(String key) {
    Matcher m = PUBLISHED_SNAPSHOT_KEY.matcher(key);
    return m.matches() ? Long.parseLong(m.group(1)) : -1;
  }

  /**
   * The lineage tip hash of a published-snapshot key ({@link #publishedSnapshot}).
   *
   * @throws IllegalArgumentException if the key does not have that shape
   */
  public static long publishedSnapshotTipOf(String key) {
    Matcher m = PUBLISHED_SNAPSHOT_KEY.matcher(key);
    if (!m.matches()) {
      throw new IllegalArgumentException("not a published snapshot key: '" + key + "'");
    }
    return Checksums.parseHex(m.group(2));
  }

  /** A new attempt id: creation time in ms (12 hex digits) and 64 random bits. */
  public static String newAttemptId() {
    return hex(System.currentTimeMillis(), 12) + "-" + hex(RANDOM.nextLong(), 16);
  }

  /** A new random unique name (32 hex digits). */
  public static String newUniqueName() {
    return hex(RANDOM.nextLong(), 16) + hex(RANDOM.nextLong(), 16);
  }

  /** True if {@code s} has the shape of an attempt id. */
  public static boolean isAttemptId(String s) {
    return s != null && ATTEMPT.matcher(s).matches();
  }

  /** Creation time (epoch ms) encoded in an attempt id. */
  public static long attemptMillis(String attempt) {
    requireAttempt(attempt);
    return Long.parseLong(attempt.substring(0, 12), 16);
  }

  private static String pad(long version) {
    return digits(version, 20);
  }

  /**
   * {@code v} (not negative) in decimal, zero-padded on the left to {@code width} digits, as
   * {@code String.format("%0<width>d")} gives it (keys are made on every commit; the formatter
   * is slow there while the code is still interpreted).
   */
  static String digits(long v, int width) {
    String s = Long.toString(v);
    return s.length() >= width ? s : "0".repeat(width - s.length()) + s;
  }

  /** {@code v} in lower-case hex, unsigned, zero-padded on the left to {@code width} digits. */
  static String hex(long v, int width) {
    String s = Long.toHexString(v);
    return s.length() >= width ? s : "0".repeat(width - s.length()) + s;
  }

  private static void requireVersion(long version) {
    if (version < 0) {
      throw new IllegalArgumentException("version must be >= 0, was " + version);
    }
  }

  private static void requireEpoch(long epoch) {
    if (epoch < 1 || epoch > MAX_EPOCH) {
      throw new IllegalArgumentException("epoch or generation must be in [1, " + MAX_EPOCH
          + "], was " + epoch);
    }
  }

  private static void requireAttempt(String attempt) {
    if (!isAttemptId(attempt)) {
      throw new IllegalArgumentException("invalid attempt id '" + attempt
          + "': expected <12 hex digits>-<16 hex digits>");
    }
  }
}
