package io.strata.config;

import io.strata.objectstore.S3ClientFactory;
import io.strata.objectstore.S3Settings;
import io.strata.objectstore.S3WriteSettings;
import java.net.URI;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Strata's settings, resolved and validated once (at the provider's {@code init}).
 *
 * <p>Every key lives under {@value #PREFIX}, so Spark copies it into the {@code StateStoreConf}
 * that reaches executors (Spark forwards every SQL conf starting with {@code
 * spark.sql.streaming.stateStore.}). S3 connection settings that are not set fall back to the
 * matching Hadoop S3A keys ({@code fs.s3a.endpoint}, {@code fs.s3a.access.key}, ...) so a job
 * already configured for {@code s3a://} needs nothing more.
 *
 * @param localDir parent directory for local RocksDB instances; empty means a directory inside
 *     Spark's local dirs ({@code spark.local.dir}), else {@code java.io.tmpdir}
 * @param s3 how to reach S3
 * @param snapshotInterval upload a base snapshot once this many versions were committed since
 *     the last one (versions, &gt;= 1)
 * @param transferThreads parallel uploads/downloads per store for snapshots and restore (&gt;= 1)
 * @param spillThresholdBytes pending writes of one batch (approximate heap bytes) above which
 *     they are spilled to a spill delta uploaded before commit; 0 disables spilling
 * @param lockAcquireTimeout how long a task waits for another task that holds the same store
 * @param memoryBounded true to share one capped RocksDB block cache and write-buffer manager
 *     among all stores of an executor
 * @param memoryMaxBytes the cap in bytes, or empty for {@code auto} (derived from the executor's
 *     memory overhead by the Spark layer, which knows the Spark configuration)
 * @param gcEnabled whether maintenance deletes versions older than the retention and
 *     unreferenced objects (docs/format.md, "Retention and garbage collection")
 * @param gcGracePeriod how old an unreferenced object must be before it is deleted (&gt;= 1
 *     minute); a base snapshot not published within half of it is not published
 */
public record StrataConf(
    Optional<Path> localDir,
    S3Settings s3,
    int snapshotInterval,
    int transferThreads,
    long spillThresholdBytes,
    Duration lockAcquireTimeout,
    boolean memoryBounded,
    Optional<Long> memoryMaxBytes,
    boolean gcEnabled,
    Duration gcGracePeriod) {

  /** Prefix of every Strata key. */
  public static final String PREFIX = "spark.sql.streaming.stateStore.strata.";

  public static final ConfigOption<Path> LOCAL_DIR = new ConfigOption<>("localDir",
      Optional.empty(),
      "Parent directory for the executors' local RocksDB instances (the fast local disk). "
          + "Default: a directory inside Spark's local dirs.",
      false, s -> Paths.get(Parsers.nonBlank(s)));
  public static final ConfigOption<URI> S3_ENDPOINT = new ConfigOption<>("s3.endpoint",
      Optional.of("AWS S3 (or fs.s3a.endpoint)"),
      "S3 endpoint URL, e.g. http://127.0.0.1:9000 for MinIO or S3Proxy.",
      false, Parsers::endpoint);
  public static final ConfigOption<String> S3_REGION = new ConfigOption<>("s3.region",
      Optional.of("us-east-1 (or fs.s3a.endpoint.region)"),
      "Signing region of the bucket.", false, Parsers::region);
  public static final ConfigOption<Boolean> S3_PATH_STYLE = new ConfigOption<>(
      "s3.pathStyleAccess", Optional.of("false (or fs.s3a.path.style.access)"),
      "Path-style addressing (endpoint/bucket/key), needed by most S3-compatible servers.",
      false, Parsers::bool);
  public static final ConfigOption<String> S3_ACCESS_KEY = new ConfigOption<>("s3.accessKeyId",
      Optional.of("AWS default credential chain (or fs.s3a.access.key)"),
      "Static access key id; set together with s3.secretAccessKey.", true, Parsers::nonBlank);
  public static final ConfigOption<String> S3_SECRET_KEY = new ConfigOption<>(
      "s3.secretAccessKey", Optional.of("AWS default credential chain (or fs.s3a.secret.key)"),
      "Static secret access key; never logged.", true, Parsers::nonBlank);
  public static final ConfigOption<String> S3_SESSION_TOKEN = new ConfigOption<>(
      "s3.sessionToken", Optional.of("none (or fs.s3a.session.token)"),
      "Session token for temporary static credentials; never logged.", true, Parsers::nonBlank);
  public static final ConfigOption<Integer> S3_MAX_ATTEMPTS = new ConfigOption<>(
      "s3.maxAttempts", Optional.of("10"),
      "Attempts per S3 request including the first; the SDK backs off exponentially with "
          + "jitter on throttling (503), 5xx, timeouts and resets.",
      false, Parsers.intAtLeast(1));
  public static final ConfigOption<Duration> S3_API_CALL_TIMEOUT = new ConfigOption<>(
      "s3.apiCallTimeout", Optional.of("2m"),
      "Upper bound for one S3 call including its retries (duration: ms, s, m, h).",
      false, Parsers::positiveDuration);
  public static final ConfigOption<Duration> S3_ATTEMPT_TIMEOUT = new ConfigOption<>(
      "s3.apiCallAttemptTimeout", Optional.of("30s"),
      "Upper bound for one HTTP attempt (duration: ms, s, m, h).",
      false, Parsers::positiveDuration);
  public static final ConfigOption<Integer> S3_MAX_CONNECTIONS = new ConfigOption<>(
      "s3.maxConnections", Optional.of("64"),
      "HTTP connection pool size of the executor's S3 client.", false, Parsers.intAtLeast(1));
  public static final ConfigOption<Integer> SNAPSHOT_INTERVAL = new ConfigOption<>(
      "snapshotInterval", Optional.of("10"),
      "Versions committed after the last base snapshot before maintenance uploads a new one "
          + "(bounds the delta chain a restore replays).",
      false, Parsers.intAtLeast(1));
  public static final ConfigOption<Integer> TRANSFER_THREADS = new ConfigOption<>(
      "transferThreads", Optional.of("8"),
      "Parallel S3 transfers per store for base snapshot uploads and restores.",
      false, Parsers.intAtLeast(1));
  public static final ConfigOption<Long> SPILL_THRESHOLD = new ConfigOption<>(
      "spillThreshold", Optional.of("64m"),
      "Pending writes of one batch (approximate heap bytes) above which they are written to an "
          + "SST and uploaded while the batch runs, so memory stays bounded and commit uploads "
          + "only the tail (size: b, k, m, g; 0 disables).",
      false, Parsers::bytes);
  public static final ConfigOption<Duration> LOCK_TIMEOUT = new ConfigOption<>(
      "lockAcquireTimeout", Optional.of("60s"),
      "How long a task waits for a store held by another task (duration).",
      false, Parsers::positiveDuration);

  public static final ConfigOption<Boolean> MEMORY_BOUNDED = new ConfigOption<>(
      "memory.bounded", Optional.of("true"),
      "Share one RocksDB block cache and write-buffer manager among all stores of an executor, "
          + "capped by memory.max (index and filter blocks and memtables count against it). "
          + "false: each store has its own 16 MB block cache and the total grows with the "
          + "number of stores.",
      false, Parsers::bool);
  public static final ConfigOption<Optional<Long>> MEMORY_MAX = new ConfigOption<>(
      "memory.max", Optional.of("auto"),
      "Cap of the shared RocksDB memory per executor (native, off-heap; size: k, m, g, at least "
          + "1m). auto: half of the executor's memory overhead (spark.executor.memoryOverhead, "
          + "else max(spark.executor.minMemoryOverhead, spark.executor.memoryOverheadFactor x "
          + "spark.executor.memory)), at least 64m; 512m outside Spark. Fixed by the first store "
          + "an executor opens until all its stores close.",
      false, Parsers.sizeOrAuto(1L << 20));
  public static final ConfigOption<Boolean> GC_ENABLED = new ConfigOption<>("gc.enabled",
      Optional.of("true"),
      "Maintenance deletes the objects of versions older than Spark's minBatchesToRetain and "
          + "every object no retained version's manifest names (once older than "
          + "gc.gracePeriod); false keeps everything.",
      false, Parsers::bool);
  /** Smallest accepted {@link #GC_GRACE_PERIOD}. */
  public static final Duration MIN_GC_GRACE_PERIOD = Duration.ofMinutes(1);
  public static final ConfigOption<Duration> GC_GRACE_PERIOD = new ConfigOption<>(
      "gc.gracePeriod", Optional.of("1h"),
      "Garbage collection deletes an object no retained manifest names only once it is this "
          + "old (by the object store's last-modified time), so in-flight commits and base "
          + "snapshots are never robbed; must exceed twice the clock skew between executors "
          + "and the object store and twice the time between two commits of a store, since a "
          + "base snapshot not published within half of it is dropped (duration, at least 1m).",
      false, s -> Parsers.durationAtLeast(s, MIN_GC_GRACE_PERIOD));

  public static final ConfigOption<String> S3_SSE = new ConfigOption<>("s3.sse",
      Optional.of("none"),
      "Server-side encryption requested on every PUT: none (no header; the bucket's default "
          + "encryption applies), AES256 (SSE-S3) or aws:kms (SSE-KMS).",
      false, S3WriteSettings::parseServerSideEncryption);
  public static final ConfigOption<String> S3_SSE_KMS_KEY_ID = new ConfigOption<>(
      "s3.sseKmsKeyId", Optional.of("none (the account's aws/s3 key)"),
      "KMS key id, alias or ARN for s3.sse=aws:kms; only with aws:kms.",
      false, Parsers::nonBlank);
  public static final ConfigOption<String> S3_STORAGE_CLASS = new ConfigOption<>(
      "s3.storageClass", Optional.of("none (S3's default, STANDARD)"),
      "Storage class of every object Strata writes: STANDARD, REDUCED_REDUNDANCY, STANDARD_IA, "
          + "ONEZONE_IA, INTELLIGENT_TIERING, GLACIER_IR, OUTPOSTS or EXPRESS_ONEZONE (GLACIER "
          + "and DEEP_ARCHIVE are refused: their objects cannot be read without a restore).",
      false, Parsers::storageClass);

  public static final ConfigOption<Boolean> S3_PAYLOAD_CHECKSUMS = new ConfigOption<>(
      "s3.payloadChecksums", Optional.of("false"),
      "true: the AWS SDK sends a CRC32 of every PUT body (aws-chunked trailer), which S3 "
          + "verifies before storing the object; false: only the checksums S3 requires. Strata "
          + "verifies every object it reads against the XXHash64 in its manifest either way; "
          + "its cost per PUT is measured in docs/benchmarks.md (PutBenchmark).",
      false, Parsers::bool);

  /** Every option, in documentation order. */
  public static final List<ConfigOption<?>> OPTIONS = List.of(LOCAL_DIR, S3_ENDPOINT, S3_REGION,
      S3_PATH_STYLE, S3_ACCESS_KEY, S3_SECRET_KEY, S3_SESSION_TOKEN, S3_MAX_ATTEMPTS,
      S3_API_CALL_TIMEOUT, S3_ATTEMPT_TIMEOUT, S3_MAX_CONNECTIONS, S3_SSE, S3_SSE_KMS_KEY_ID,
      S3_STORAGE_CLASS, S3_PAYLOAD_CHECKSUMS, SNAPSHOT_INTERVAL,
      TRANSFER_THREADS, SPILL_THRESHOLD, LOCK_TIMEOUT, MEMORY_BOUNDED, MEMORY_MAX, GC_ENABLED,
      GC_GRACE_PERIOD);

  /**
   * Resolves the settings.
   *
   * @param settings Spark SQL confs (full keys); keys under {@link #PREFIX} are read, unknown
   *     keys under it are rejected so a typo never passes silently
   * @param hadoop Hadoop configuration entries used as fallbacks ({@code fs.s3a.*}); may be empty
   * @return the validated settings
   * @throws IllegalArgumentException naming the key, the value (unless secret) and what is
   *     allowed, for the first bad or unknown setting
   */
  public static StrataConf from(Map<String, String> settings, Map<String, String> hadoop) {
    List<String> known = new ArrayList<>();
    for (ConfigOption<?> o : OPTIONS) {
      known.add(o.fullKey());
    }
    for (String k : settings.keySet()) {
      if (k.startsWith(PREFIX) && !known.contains(k)) {
        throw new IllegalArgumentException("Unknown Strata setting " + k + "; known settings: "
            + String.join(", ", known));
      }
    }
    Reader r = new Reader(settings, hadoop);
    Optional<String> accessKey = r.opt(S3_ACCESS_KEY, "fs.s3a.access.key");
    Optional<String> secretKey = r.opt(S3_SECRET_KEY, "fs.s3a.secret.key");
    if (accessKey.isPresent() != secretKey.isPresent()) {
      throw new IllegalArgumentException("Invalid S3 credentials: " + S3_ACCESS_KEY.fullKey()
          + " and " + S3_SECRET_KEY.fullKey()
          + " must be set together (or neither, to use the AWS default credential chain)");
    }
    Duration attempt = r.get(S3_ATTEMPT_TIMEOUT, null, Duration.ofSeconds(30));
    Duration call = r.get(S3_API_CALL_TIMEOUT, null, Duration.ofMinutes(2));
    if (attempt.compareTo(call) > 0) {
      throw new IllegalArgumentException("Invalid " + S3_ATTEMPT_TIMEOUT.fullKey() + "=" + attempt
          + ": expected at most " + S3_API_CALL_TIMEOUT.fullKey() + " (" + call + ")");
    }
    Optional<URI> endpoint = r.opt(S3_ENDPOINT, "fs.s3a.endpoint");
    String region = r.get(S3_REGION, "fs.s3a.endpoint.region", "us-east-1");
    if (endpoint.isEmpty() && !S3ClientFactory.isKnownAwsRegion(region)) {
      // Without an endpoint the SDK would resolve s3.<region>.amazonaws.com and retry a host
      // that does not exist until the call times out.
      throw new IllegalArgumentException("Invalid value '" + region + "' for "
          + S3_REGION.fullKey() + ": expected an AWS region such as us-east-1 or eu-west-1 "
          + "(for an S3-compatible server, set " + S3_ENDPOINT.fullKey() + " as well)");
    }
    S3Settings s3 = new S3Settings(
        endpoint,
        region,
        r.get(S3_PATH_STYLE, "fs.s3a.path.style.access", false),
        accessKey,
        secretKey,
        r.opt(S3_SESSION_TOKEN, "fs.s3a.session.token"),
        r.get(S3_MAX_ATTEMPTS, null, 10),
        call,
        attempt,
        r.get(S3_MAX_CONNECTIONS, null, 64)).withWrites(writes(r));
    return new StrataConf(
        r.opt(LOCAL_DIR, null),
        s3,
        r.get(SNAPSHOT_INTERVAL, null, 10),
        r.get(TRANSFER_THREADS, null, 8),
        r.get(SPILL_THRESHOLD, null, 64L << 20),
        r.get(LOCK_TIMEOUT, null, Duration.ofSeconds(60)),
        r.get(MEMORY_BOUNDED, null, true),
        r.get(MEMORY_MAX, null, Optional.empty()),
        r.get(GC_ENABLED, null, true),
        r.get(GC_GRACE_PERIOD, null, Duration.ofHours(1)));
  }

  /**
   * Server-side encryption, storage class and payload checksums ({@link #S3_SSE}, {@link
   * #S3_SSE_KMS_KEY_ID}, {@link #S3_STORAGE_CLASS}, {@link #S3_PAYLOAD_CHECKSUMS}).
   *
   * @throws IllegalArgumentException naming the keys if a KMS key id comes without aws:kms
   */
  private static S3WriteSettings writes(Reader r) {
    String sse = r.get(S3_SSE, null, S3WriteSettings.SSE_NONE);
    Optional<String> kmsKey = r.opt(S3_SSE_KMS_KEY_ID, null);
    if (kmsKey.isPresent() && !sse.equals(S3WriteSettings.SSE_KMS)) {
      throw new IllegalArgumentException("Invalid " + S3_SSE_KMS_KEY_ID.fullKey() + ": a KMS key "
          + "id needs " + S3_SSE.fullKey() + "=aws:kms, but " + S3_SSE.fullKey() + " is " + sse);
    }
    return new S3WriteSettings(sse, kmsKey, r.opt(S3_STORAGE_CLASS, null),
        r.get(S3_PAYLOAD_CHECKSUMS, null, false));
  }

  /** Reads options with an optional Hadoop fallback key. */
  private record Reader(Map<String, String> settings, Map<String, String> hadoop) {
    Reader {
      settings = settings == null ? Collections.emptyMap() : settings;
      hadoop = hadoop == null ? Collections.emptyMap() : hadoop;
    }

    <T> Optional<T> opt(ConfigOption<T> option, String hadoopKey) {
      String raw = settings.get(option.fullKey());
      String key = option.fullKey();
      if (raw == null && hadoopKey != null) {
        raw = hadoop.get(hadoopKey);
        key = hadoopKey;
      }
      if (raw == null || (raw.isBlank() && hadoopKey != null && key.equals(hadoopKey))) {
        return Optional.empty();
      }
      try {
        return Optional.of(option.parser().apply(raw));
      } catch (IllegalArgumentException e) {
        // Never echo secrets, nor anything that may embed credentials (user:secret@host).
        String shown = option.secret() || raw.contains("@") ? "<redacted>" : "'" + raw + "'";
        throw new IllegalArgumentException(
            "Invalid value " + shown + " for " + key + ": " + e.getMessage(), e);
      }
    }

    <T> T get(ConfigOption<T> option, String hadoopKey, T dflt) {
      return opt(option, hadoopKey).orElse(dflt);
    }
  }
}
