// SPDX-License-Identifier: Apache-2.0
package io.strata.config;

import io.strata.objectstore.S3ClientFactory;
import io.strata.objectstore.S3Credentials;
import io.strata.objectstore.S3Regions;
import io.strata.objectstore.S3Settings;
import io.strata.objectstore.S3WriteSettings;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Predicate;
import java.util.function.Supplier;

/**
 * Strata's settings, resolved and validated once (at the provider's {@code init}).
 *
 * <p>Every key lives under {@value #PREFIX}, so Spark copies it into the {@code StateStoreConf}
 * that reaches executors (Spark forwards every SQL conf starting with {@code
 * spark.sql.streaming.stateStore.}). S3 connection settings that are not set fall back to the
 * matching Hadoop S3A keys ({@code fs.s3a.endpoint}, {@code fs.s3a.access.key}, ...) so a job
 * already configured for {@code s3a://} needs nothing more.
 *
 * <p>Each option is defined once, below, as a {@link ConfigOption}: key, type with bounds, typed
 * default, fallback key and description. {@link #from} parses with these definitions and
 * README.md's configuration table is generated from {@link #OPTIONS} (by the test-side {@code
 * io.strata.config.OptionsTable}; a test fails when the committed table is stale), so no default
 * is written anywhere else.
 *
 * @param localDir parent directory for local RocksDB instances; empty means a directory inside
 *     Spark's local dirs ({@code spark.local.dir}), else {@code java.io.tmpdir}
 * @param fileCheckpointShared true if a {@code file:} or plain-path checkpoint location is
 *     storage every executor mounts at the same path (NFS), so the Spark layer accepts it with a
 *     cluster master; false (the default) and such a location works only with a {@code local}
 *     master
 * @param s3Source how to reach S3, resolved when first asked for ({@link #s3()}): only a store
 *     or checkpoint on S3 reads and checks the S3 settings and credentials
 * @param snapshotInterval upload a base snapshot once this many versions were committed since
 *     the last one (versions, &gt;= 1)
 * @param snapshotOnCommit true if the commit that reaches {@code snapshotInterval} queues that
 *     base snapshot on a JVM-wide pool; false if only maintenance (and a long restore) start one
 * @param stageDeltasInMemory true if a commit streams an SST delta of 4 to 8 MiB of pending writes
 *     to a memory-backed directory ({@code /dev/shm}) when there is one, instead of the local
 *     disk (smaller deltas are built in memory)
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
 * @param gcGracePeriod how old an unreferenced object must be before it is deleted (at least
 *     {@link #MIN_GC_GRACE_PERIOD})
 */
public record StrataConf(
    Optional<Path> localDir,
    boolean fileCheckpointShared,
    S3Source s3Source,
    int snapshotInterval,
    boolean snapshotOnCommit,
    boolean stageDeltasInMemory,
    int transferThreads,
    long spillThresholdBytes,
    Duration lockAcquireTimeout,
    boolean memoryBounded,
    Optional<Long> memoryMaxBytes,
    boolean gcEnabled,
    Duration gcGracePeriod) {

  /**
   * How to reach S3, resolved from the settings and S3A fallbacks on the first call (and again
   * after a failed one); a store or checkpoint not on S3 never calls it, so S3 settings meant
   * for other jobs (S3A's provider list without keys, say) never fail it.
   *
   * @return the validated S3 settings
   * @throws IllegalArgumentException naming the key, the value (unless secret) and what is
   *     allowed, for the first bad S3 setting or credentials source
   */
  public S3Settings s3() {
    return s3Source.get();
  }

  /** Prefix of every Strata key. */
  public static final String PREFIX = "spark.sql.streaming.stateStore.strata.";

  /** Smallest accepted {@link #GC_GRACE_PERIOD}. */
  public static final Duration MIN_GC_GRACE_PERIOD = Duration.ofMinutes(1);
  /** Smallest accepted {@link #MEMORY_MAX}, bytes (1 MiB). */
  public static final long MIN_MEMORY_MAX_BYTES = 1L << 20;
  /**
   * Lower bound of the cap {@link #MEMORY_MAX}{@code =auto} derives from the executor's memory
   * overhead, bytes (64 MiB); the Spark layer applies it.
   */
  public static final long MEMORY_AUTO_MIN_BYTES = 64L << 20;

  /** {@code localDir}: parent directory of the local RocksDB instances; no default. */
  public static final ConfigOption<Path> LOCAL_DIR = ConfigOption.key("localDir")
      .type(OptionType.path())
      .noDefaultValue("a directory inside Spark's local dirs")
      .description("Parent directory for the executors' local RocksDB instances (the fast local "
          + "disk).");
  /**
   * {@code fileCheckpoint.shared}: a {@code file:} or plain-path checkpoint location is shared
   * storage (NFS), so it may be used with a cluster master.
   */
  public static final ConfigOption<Boolean> FILE_CHECKPOINT_SHARED =
      ConfigOption.key("fileCheckpoint.shared")
          .type(OptionType.bool())
          .defaultValue(false)
          .description("`true` declares that a `file:` or plain-path checkpoint location is "
              + "shared storage mounted at the same path on every executor (NFS), so it may be "
              + "used with a cluster master. `false`: such a location works only with a `local` "
              + "or `local[...]` master, and a store fails at `init` on any other master "
              + "(`local-cluster[...]` included), because each executor would keep its "
              + "partitions' state on its own disk. See "
              + "[docs/operations.md](docs/operations.md#a-local-checkpoint-on-a-cluster).");
  /** {@code s3.endpoint}: the S3 endpoint URL; AWS S3 when unset. */
  public static final ConfigOption<URI> S3_ENDPOINT = ConfigOption.key("s3.endpoint")
      .type(OptionType.endpoint())
      .noDefaultValue("AWS S3")
      .fallbackKey("fs.s3a.endpoint")
      .description("S3 endpoint URL, e.g. `http://127.0.0.1:9000` for MinIO or S3Proxy.");
  /** {@code s3.region}: the signing region; resolved by {@link S3Regions} when unset. */
  public static final ConfigOption<String> S3_REGION = ConfigOption.key("s3.region")
      .type(OptionType.region())
      .noDefaultValue("the endpoint's region, else the SDK's region chain, else `us-east-1`")
      .fallbackKey("fs.s3a.endpoint.region")
      .description("Signing region of the bucket. When unset (here and in S3A's key): the "
          + "region in an AWS endpoint's host name (`s3.eu-west-1.amazonaws.com`), `us-east-1` "
          + "for another endpoint; without an endpoint, the `aws.region` system property, "
          + "`AWS_REGION` or the AWS profile's region, else `us-east-1`. Against AWS, buckets "
          + "in any region are reached (the SDK's cross-region bucket access).");
  /** {@code s3.pathStyleAccess}: path-style addressing. */
  public static final ConfigOption<Boolean> S3_PATH_STYLE = ConfigOption.key("s3.pathStyleAccess")
      .type(OptionType.bool())
      .defaultValue(false)
      .fallbackKey("fs.s3a.path.style.access")
      .description("Path-style addressing (endpoint/bucket/key), needed by most S3-compatible "
          + "servers.");
  /** {@code s3.accessKeyId}: static access key id (secret); no default. */
  public static final ConfigOption<String> S3_ACCESS_KEY = ConfigOption.key("s3.accessKeyId")
      .type(OptionType.nonBlank())
      .noDefaultValue("AWS default credential chain")
      .fallbackKey("fs.s3a.access.key")
      .secret()
      .description("Static access key id; set together with `s3.secretAccessKey`.");
  /** {@code s3.secretAccessKey}: static secret access key (secret); no default. */
  public static final ConfigOption<String> S3_SECRET_KEY = ConfigOption.key("s3.secretAccessKey")
      .type(OptionType.nonBlank())
      .noDefaultValue("AWS default credential chain")
      .fallbackKey("fs.s3a.secret.key")
      .secret()
      .description("Static secret access key; never logged.");
  /** {@code s3.sessionToken}: session token of temporary credentials (secret); no default. */
  public static final ConfigOption<String> S3_SESSION_TOKEN = ConfigOption.key("s3.sessionToken")
      .type(OptionType.nonBlank())
      .noDefaultValue("none")
      .fallbackKey("fs.s3a.session.token")
      .secret()
      .description("Session token for temporary static credentials; never logged.");
  /** {@code s3.credentialsProvider}: where credentials come from. */
  public static final ConfigOption<List<S3Credentials.Provider>> S3_CREDENTIALS_PROVIDER =
      ConfigOption.key("s3.credentialsProvider")
      .type(OptionType.credentialProviders())
      .noDefaultValue("the static keys if set, else `default`")
      .fallbackKey("fs.s3a.aws.credentials.provider")
      .description("Credentials providers tried in order, the first that yields credentials "
          + "wins: `static` (the keys above), `temporary` (the keys and the session token), "
          + "`environment`, `system-properties`, `profile` (a profile of the credentials file, "
          + "re-read when it changes), `container`, `instance-profile`, `web-identity` (EKS "
          + "service-account roles), `assumed-role` (STS AssumeRole of `s3.assumedRole.arn`), "
          + "`default` (the AWS SDK's chain), `anonymous`. S3A's value is read as is: S3A's "
          + "and the AWS SDKs' class names map to these (see "
          + "[docs/operations.md](docs/operations.md#credentials)).");
  /** {@code s3.profile}: the AWS profile the profile and default providers read. */
  public static final ConfigOption<String> S3_PROFILE = ConfigOption.key("s3.profile")
      .type(OptionType.nonBlank())
      .noDefaultValue("`AWS_PROFILE`, else `default`")
      .fallbackKey("fs.s3a.auth.profile.name")
      .description("Profile of the AWS credentials file that the `profile` and `default` "
          + "providers read (S3A's key applies to `profile` only).");
  /** {@code s3.credentialsFile}: the credentials file the profile providers read. */
  public static final ConfigOption<Path> S3_CREDENTIALS_FILE =
      ConfigOption.key("s3.credentialsFile")
      .type(OptionType.path())
      .noDefaultValue("`AWS_SHARED_CREDENTIALS_FILE`, else `~/.aws/credentials`")
      .fallbackKey("fs.s3a.auth.profile.file")
      .description("AWS credentials file that the `profile` and `default` providers read, "
          + "on every executor; a rewritten file (rotated keys) is picked up within about a "
          + "second, without a restart (a default file must exist when the store opens). "
          + "S3A's key applies to `profile` only.");
  /** {@code s3.assumedRole.arn}: the role the assumed-role provider assumes. */
  public static final ConfigOption<String> S3_ROLE_ARN = ConfigOption.key("s3.assumedRole.arn")
      .type(OptionType.nonBlank())
      .noDefaultValue("none")
      .fallbackKey("fs.s3a.assumed.role.arn")
      .description("ARN of the IAM role that the `assumed-role` provider assumes, with the "
          + "static keys if set, else the `default` chain, as its own credentials.");
  /** {@code s3.assumedRole.sessionName}: the STS role session name. */
  public static final ConfigOption<String> S3_ROLE_SESSION_NAME =
      ConfigOption.key("s3.assumedRole.sessionName")
      .type(OptionType.nonBlank())
      .defaultValue("strata")
      .fallbackKey("fs.s3a.assumed.role.session.name")
      .description("Role session name of the `assumed-role` provider's sessions.");
  /** {@code s3.assumedRole.sessionDuration}: how long each assumed-role session lasts. */
  public static final ConfigOption<Duration> S3_ROLE_SESSION_DURATION =
      ConfigOption.key("s3.assumedRole.sessionDuration")
      .type(OptionType.durationAtLeast(S3Credentials.AssumedRole.MIN_SESSION))
      .defaultValue(Duration.ofHours(1))
      .fallbackKey("fs.s3a.assumed.role.session.duration")
      .description("Duration of each `assumed-role` session, at most `12h`; sessions are "
          + "renewed before they expire.");
  /** {@code s3.assumedRole.stsEndpoint}: an STS endpoint override. */
  public static final ConfigOption<URI> S3_ROLE_STS_ENDPOINT =
      ConfigOption.key("s3.assumedRole.stsEndpoint")
      .type(OptionType.endpoint())
      .noDefaultValue("the region's STS endpoint")
      .fallbackKey("fs.s3a.assumed.role.sts.endpoint")
      .description("STS endpoint the `assumed-role` provider calls.");
  /** {@code s3.maxAttempts}: attempts per S3 request. */
  public static final ConfigOption<Integer> S3_MAX_ATTEMPTS = ConfigOption.key("s3.maxAttempts")
      .type(OptionType.intAtLeast(1))
      .defaultValue(10)
      .description("Attempts per S3 request including the first; the SDK backs off "
          + "exponentially with jitter on throttling (503), 5xx, timeouts and resets.");
  /** {@code s3.apiCallTimeout}: upper bound of one S3 call with its retries. */
  public static final ConfigOption<Duration> S3_API_CALL_TIMEOUT =
      ConfigOption.key("s3.apiCallTimeout")
          .type(OptionType.positiveDuration())
          .defaultValue(Duration.ofMinutes(2))
          .description("Upper bound for one S3 call including its retries.");
  /** {@code s3.apiCallAttemptTimeout}: upper bound of one HTTP attempt. */
  public static final ConfigOption<Duration> S3_ATTEMPT_TIMEOUT =
      ConfigOption.key("s3.apiCallAttemptTimeout")
          .type(OptionType.positiveDuration())
          .defaultValue(Duration.ofSeconds(30))
          .description("Upper bound for one HTTP attempt; at most `s3.apiCallTimeout`.");
  /** {@code s3.maxConnections}: HTTP connection pool size. */
  public static final ConfigOption<Integer> S3_MAX_CONNECTIONS =
      ConfigOption.key("s3.maxConnections")
          .type(OptionType.intAtLeast(1))
          .defaultValue(64)
          .description("HTTP connection pool size of the executor's S3 client.");
  /** {@code s3.sse}: server-side encryption of every PUT. */
  public static final ConfigOption<String> S3_SSE = ConfigOption.key("s3.sse")
      .type(OptionType.serverSideEncryption())
      .defaultValue(S3WriteSettings.SSE_NONE)
      .fallbackKey("fs.s3a.encryption.algorithm")
      .description("Server-side encryption requested on every PUT Strata makes: `none` (no "
          + "header; the bucket's default encryption applies), `AES256` (SSE-S3) or `aws:kms` "
          + "(SSE-KMS). When neither this nor `s3.sseKmsKeyId` is set, S3A's "
          + "`fs.s3a.encryption.algorithm` (`SSE-S3`, `SSE-KMS`; or the older "
          + "`fs.s3a.server-side-encryption-algorithm`) and `fs.s3a.encryption.key` apply; "
          + "S3A's `SSE-C`, `DSSE-KMS` and client-side modes are refused.");
  /** {@code s3.sseKmsKeyId}: the KMS key for {@code s3.sse=aws:kms}; no default. */
  public static final ConfigOption<String> S3_SSE_KMS_KEY_ID = ConfigOption.key("s3.sseKmsKeyId")
      .type(OptionType.nonBlank())
      .noDefaultValue("none (the account's `aws/s3` key)")
      .fallbackKey("fs.s3a.encryption.key")
      .description("KMS key id, alias or ARN sent with `s3.sse=aws:kms` "
          + "(`x-amz-server-side-encryption-aws-kms-key-id`); refused with any other `s3.sse`.");
  /** {@code s3.storageClass}: storage class of every object written; no default. */
  public static final ConfigOption<String> S3_STORAGE_CLASS = ConfigOption.key("s3.storageClass")
      .type(OptionType.storageClass())
      .noDefaultValue("none (S3's default, `STANDARD`)")
      .description("Storage class of every object Strata writes (`x-amz-storage-class`).");
  /** {@code s3.payloadChecksums}: a CRC32 of every PUT body. */
  public static final ConfigOption<Boolean> S3_PAYLOAD_CHECKSUMS =
      ConfigOption.key("s3.payloadChecksums")
          .type(OptionType.bool())
          .defaultValue(false)
          .description("`true`: the AWS SDK sends a CRC32 of every PUT body (an aws-chunked "
              + "trailer) that S3 verifies before storing the object. `false`: only the "
              + "checksums S3 requires. Either way Strata checks every object it reads against "
              + "the XXHash64 its manifest records. What the CRC costs per PUT: `PutBenchmark` "
              + "in [docs/benchmarks.md](docs/benchmarks.md).");
  /** {@code s3.legacyMd5}: Content-MD5 on DeleteObjects. */
  public static final ConfigOption<Boolean> S3_LEGACY_MD5 =
      ConfigOption.key("s3.legacyMd5")
          .type(OptionType.bool())
          .defaultValue(true)
          .description("`true`: DeleteObjects (garbage collection) carries `Content-MD5`, as "
              + "AWS SDKs before 2.30 sent it; newer SDKs send only a CRC32, which some "
              + "S3-compatible stores reject, and then no garbage is ever deleted. It costs one "
              + "MD5 of the request body (at most 1000 keys) per DeleteObjects; other requests "
              + "are unchanged. `false`: the SDK's default.");
  /** {@code snapshotInterval}: versions between base snapshots. */
  public static final ConfigOption<Integer> SNAPSHOT_INTERVAL = ConfigOption.key("snapshotInterval")
      .type(OptionType.intAtLeast(1))
      .defaultValue(20)
      .description("Versions committed after the last base snapshot before a new one is "
          + "uploaded: started by the commit that reaches it (`snapshotOnCommit`), else by "
          + "maintenance. Bounds the delta chain a restore replays.");
  /** {@code stageDeltasInMemory}: a commit streams a mid-sized SST delta to {@code /dev/shm}. */
  public static final ConfigOption<Boolean> STAGE_DELTAS_IN_MEMORY =
      ConfigOption.key("stageDeltasInMemory")
          .type(OptionType.bool())
          .defaultValue(true)
          .description("`true`: a commit whose batch wrote more than 4 MiB and at most 8 MiB of "
              + "pending writes streams its SST delta to a directory of the executor JVM on a "
              + "memory-backed file system (`/dev/shm`) when there is one, so reading it back "
              + "for the PUT costs no disk I/O on the commit path; the delta is copied to the "
              + "local disk and ingested after the PUT. Smaller deltas (the rule) are built in "
              + "memory and touch no file before the PUT; larger ones, a missing or full "
              + "`/dev/shm`, and `false` use the local disk (`localDir`).");
  /** {@code snapshotOnCommit}: the commit that reaches the interval starts the snapshot. */
  public static final ConfigOption<Boolean> SNAPSHOT_ON_COMMIT =
      ConfigOption.key("snapshotOnCommit")
          .type(OptionType.bool())
          .defaultValue(true)
          .description("`true`: the commit that reaches `snapshotInterval` versions since the "
              + "last base snapshot queues the next one on a JVM-wide pool of 4 threads (its "
              + "checkpoint and upload run there, never in the commit), so the chain a restore "
              + "replays stays bounded when batches come faster than Spark's maintenance "
              + "(`spark.sql.streaming.stateStore.maintenanceInterval`, 60 s by default). "
              + "`false`: only maintenance and a long restore start one.");
  /** {@code transferThreads}: parallel S3 transfers per store. */
  public static final ConfigOption<Integer> TRANSFER_THREADS = ConfigOption.key("transferThreads")
      .type(OptionType.intAtLeast(1))
      .defaultValue(8)
      .description("Parallel S3 transfers per store for base snapshot uploads and restores; "
          + "a restore's small GETs (one per delta of the chain it replays) each run at once "
          + "beside them, up to 4 times as many in all.");
  /** {@code spillThreshold}: pending bytes of a batch above which they are spilled. */
  public static final ConfigOption<Long> SPILL_THRESHOLD = ConfigOption.key("spillThreshold")
      .type(OptionType.bytes())
      .defaultValue(64L << 20)
      .description("Pending writes of one batch (approximate heap bytes) above which they are "
          + "written to an SST and uploaded while the batch runs, so memory stays bounded and "
          + "commit uploads only the tail; `0` disables spilling.");
  /** {@code lockAcquireTimeout}: how long a task waits for a store another task holds. */
  public static final ConfigOption<Duration> LOCK_TIMEOUT = ConfigOption.key("lockAcquireTimeout")
      .type(OptionType.positiveDuration())
      .defaultValue(Duration.ofSeconds(60))
      .description("How long a task waits for a store held by another task.");
  /** {@code memory.bounded}: one capped cache and write-buffer manager per executor. */
  public static final ConfigOption<Boolean> MEMORY_BOUNDED = ConfigOption.key("memory.bounded")
      .type(OptionType.bool())
      .defaultValue(true)
      .description("One RocksDB block cache and write-buffer manager shared by all stores of an "
          + "executor, capped by `memory.max` (data, index and filter blocks and memtables all "
          + "count against it). `false`: each store has its own 16 MB block cache and the total "
          + "grows with the number of stores.");
  /** {@code memory.max}: the cap of the shared memory, bytes; empty for {@code auto}. */
  public static final ConfigOption<Optional<Long>> MEMORY_MAX = ConfigOption.key("memory.max")
      .type(OptionType.sizeOrAuto(MIN_MEMORY_MAX_BYTES))
      .defaultValue(Optional.empty())
      .description("Cap of that shared native (off-heap) memory per executor. `auto`: half of "
          + "the executor's memory overhead (`spark.executor.memoryOverhead`, else "
          + "`max(spark.executor.minMemoryOverhead, spark.executor.memoryOverheadFactor` × "
          + "`spark.executor.memory)`; the driver's settings in local mode), at least `"
          + OptionType.sizeText(MEMORY_AUTO_MIN_BYTES) + "`. The first store an executor opens "
          + "fixes it until all its stores close. See "
          + "[docs/operations.md](docs/operations.md#memory-and-local-disk).");
  /** {@code gc.enabled}: whether maintenance deletes old versions and garbage. */
  public static final ConfigOption<Boolean> GC_ENABLED = ConfigOption.key("gc.enabled")
      .type(OptionType.bool())
      .defaultValue(true)
      .description("Maintenance deletes the objects of versions older than Spark's "
          + "`minBatchesToRetain` and every object no retained version's manifest names (once "
          + "older than `gc.gracePeriod`); `false` keeps everything.");
  /** {@code gc.gracePeriod}: how old an unreferenced object must be before it is deleted. */
  public static final ConfigOption<Duration> GC_GRACE_PERIOD = ConfigOption.key("gc.gracePeriod")
      .type(OptionType.durationAtLeast(MIN_GC_GRACE_PERIOD))
      .defaultValue(Duration.ofHours(1))
      .description("Garbage collection deletes an object no retained manifest names only once "
          + "it is this old (by the object store's last-modified time), so in-flight commits "
          + "and base snapshots are never robbed. Must exceed twice the clock skew between "
          + "executors and the object store.");

  /** The end of a message about missing keys: why S3A's may not have been read. */
  private static final String REDACTED = "<redacted>";
  private static final String NOT_READ = " (S3A's fs.s3a.access.key, secret.key, session.token "
      + "and aws.credentials.provider are not read when any of Strata's s3.accessKeyId, "
      + "s3.secretAccessKey, s3.sessionToken and s3.credentialsProvider is set, nor the global "
      + "ones when the bucket sets one of its own)";

  /**
   * The options naming credentials: if any is set under Strata's key, none of them is read
   * from S3A's keys.
   */
  static final List<ConfigOption<?>> CREDENTIAL_OPTIONS = List.of(S3_ACCESS_KEY, S3_SECRET_KEY,
      S3_SESSION_TOKEN, S3_CREDENTIALS_PROVIDER);

  /** Every option, in documentation order (the order of README.md's configuration table). */
  public static final List<ConfigOption<?>> OPTIONS = List.of(LOCAL_DIR,
      FILE_CHECKPOINT_SHARED, S3_ENDPOINT, S3_REGION,
      S3_PATH_STYLE, S3_ACCESS_KEY, S3_SECRET_KEY, S3_SESSION_TOKEN, S3_CREDENTIALS_PROVIDER,
      S3_PROFILE, S3_CREDENTIALS_FILE, S3_ROLE_ARN, S3_ROLE_SESSION_NAME,
      S3_ROLE_SESSION_DURATION, S3_ROLE_STS_ENDPOINT, S3_MAX_ATTEMPTS,
      S3_API_CALL_TIMEOUT, S3_ATTEMPT_TIMEOUT, S3_MAX_CONNECTIONS, S3_SSE, S3_SSE_KMS_KEY_ID,
      S3_STORAGE_CLASS, S3_PAYLOAD_CHECKSUMS, S3_LEGACY_MD5, SNAPSHOT_INTERVAL,
      SNAPSHOT_ON_COMMIT, STAGE_DELTAS_IN_MEMORY, TRANSFER_THREADS, SPILL_THRESHOLD, LOCK_TIMEOUT, MEMORY_BOUNDED, MEMORY_MAX, GC_ENABLED,
      GC_GRACE_PERIOD);

  /**
   * Resolves the settings.
   *
   * @param settings Spark SQL confs (full keys); keys under {@link #PREFIX} are read; an unknown
   *     key under it is logged once per JVM at WARN with the closest known key (a newer
   *     Strata's key in shared defaults must not stop an older jar), never refused
   * @param hadoop Hadoop configuration entries used as fallbacks ({@code fs.s3a.*}); may be empty
   * @return the validated settings; the S3 settings ({@code s3.*} and their S3A fallbacks) are
   *     read and checked by the first call of {@link #s3()}, so a checkpoint not on S3 never
   *     fails on them
   * @throws IllegalArgumentException naming the key, the value (unless secret) and what is
   *     allowed, for the first bad setting other than the S3 settings
   */
  public static StrataConf from(Map<String, String> settings, Map<String, String> hadoop) {
    Map<String, String> fallbacks = hadoop == null ? Map.of() : hadoop;
    return from(settings, () -> fallbacks);
  }

  /**
   * As {@link #from(Map, Map)}, with the Hadoop fallbacks asked for only when the S3 settings
   * are first resolved ({@link #s3()}): only S3 options have fallback keys, so a store or
   * checkpoint not on S3 never reads S3A's settings (nor a credential store they name).
   *
   * @param hadoop supplies the fallback entries ({@code fs.s3a.*}); called by each resolution
   *     of {@link #s3()} until one succeeds; what it throws propagates from there
   * @throws IllegalArgumentException as {@link #from(Map, Map)}, for a setting other than S3's
   */
  public static StrataConf from(Map<String, String> settings,
      Supplier<Map<String, String>> hadoop) {
    List<String> known = new ArrayList<>();
    for (ConfigOption<?> o : OPTIONS) {
      known.add(o.fullKey());
    }
    for (String k : settings.keySet()) {
      if (k.startsWith(PREFIX) && !known.contains(k)) {
        UnknownSettings.warn(k, known);
      }
    }
    // The other options have no fallback keys (a test checks it): no Hadoop settings for them.
    Reader r = new Reader(settings, Map.of());
    return new StrataConf(
        r.opt(LOCAL_DIR),
        r.get(FILE_CHECKPOINT_SHARED),
        new S3Source(() -> s3(new Reader(settings, hadoop.get()))),
        r.get(SNAPSHOT_INTERVAL),
        r.get(SNAPSHOT_ON_COMMIT),
        r.get(STAGE_DELTAS_IN_MEMORY),
        r.get(TRANSFER_THREADS),
        r.get(SPILL_THRESHOLD),
        r.get(LOCK_TIMEOUT),
        r.get(MEMORY_BOUNDED),
        r.get(MEMORY_MAX),
        r.get(GC_ENABLED),
        r.get(GC_GRACE_PERIOD));
  }

  /**
   * The S3A keys (global or per bucket) that {@code settings} make unused, so a caller need not
   * look them up: S3A's credential keys when any of Strata's own credential keys ({@code
   * s3.accessKeyId}, {@code s3.secretAccessKey}, {@code s3.sessionToken}, {@code
   * s3.credentialsProvider}) is set, and S3A's encryption keys when {@code s3.sse} or {@code
   * s3.sseKmsKeyId} is. {@link #s3()} never reads those keys then.
   */
  public static Predicate<String> unusedFallbacks(Map<String, String> settings) {
    boolean ownCredentials = CREDENTIAL_OPTIONS.stream()
        .anyMatch(o -> settings.get(o.fullKey()) != null);
    boolean ownEncryption = settings.get(S3_SSE.fullKey()) != null
        || settings.get(S3_SSE_KMS_KEY_ID.fullKey()) != null;
    return key -> ownCredentials && S3aFallbacks.isCredential(key)
        || ownEncryption && S3aFallbacks.isEncryption(key);
  }

  /**
   * How to reach S3: endpoint, region, credentials, timeouts and write settings, validated.
   *
   * @throws IllegalArgumentException naming the key, the value (unless secret) and what is
   *     allowed, for the first bad S3 setting or credentials source
   */
  private static S3Settings s3(Reader r) {
    // Strata's own credential keys, if any is set, replace S3A's four (keys, token, provider
    // list): never Strata's keys with S3A's session token or provider list.
    Reader c = CREDENTIAL_OPTIONS.stream().anyMatch(r::isSet)
        ? r.withoutFallbacksOf(CREDENTIAL_OPTIONS) : r;
    Optional<String> accessKey = c.opt(S3_ACCESS_KEY);
    Optional<String> secretKey = c.opt(S3_SECRET_KEY);
    if (c.opt(S3_SESSION_TOKEN).isPresent() && accessKey.isEmpty()) {
      throw new InvalidSettingException("Invalid S3 credentials: a session token ("
          + S3_SESSION_TOKEN.fullKey() + " or fs.s3a.session.token) is set without "
          + S3_ACCESS_KEY.fullKey() + " and " + S3_SECRET_KEY.fullKey() + NOT_READ,
          S3_SESSION_TOKEN.fullKey(), REDACTED);
    }
    if (accessKey.isPresent() != secretKey.isPresent()) {
      throw new InvalidSettingException("Invalid S3 credentials: " + S3_ACCESS_KEY.fullKey()
          + " and " + S3_SECRET_KEY.fullKey()
          + " must be set together (or neither, to use the AWS default credential chain)",
          accessKey.isPresent() ? S3_SECRET_KEY.fullKey() : S3_ACCESS_KEY.fullKey(), "");
    }
    Duration attempt = r.get(S3_ATTEMPT_TIMEOUT);
    Duration call = r.get(S3_API_CALL_TIMEOUT);
    if (attempt.compareTo(call) > 0) {
      throw new InvalidSettingException("Invalid " + S3_ATTEMPT_TIMEOUT.fullKey() + "=" + attempt
          + ": expected at most " + S3_API_CALL_TIMEOUT.fullKey() + " (" + call + ")",
          S3_ATTEMPT_TIMEOUT.fullKey(), "'" + attempt + "'");
    }
    Optional<URI> endpoint = r.opt(S3_ENDPOINT);
    Optional<String> configuredRegion = r.opt(S3_REGION);
    String region = S3Regions.resolve(configuredRegion, endpoint);
    if (endpoint.isEmpty() && !S3ClientFactory.isKnownAwsRegion(region)) {
      // Without an endpoint the SDK would resolve s3.<region>.amazonaws.com and retry a host
      // that does not exist until the call times out.
      String from = configuredRegion.isPresent() ? S3_REGION.fullKey()
          : S3_REGION.fullKey() + " (unset; taken from the SDK's region chain: the aws.region "
              + "system property, AWS_REGION or the AWS profile)";
      throw new InvalidSettingException(from, "'" + region + "'",
          "expected an AWS region such as us-east-1 or eu-west-1 "
          + "(for an S3-compatible server, set " + S3_ENDPOINT.fullKey() + " as well)", null);
    }
    return new S3Settings(
        endpoint,
        region,
        r.get(S3_PATH_STYLE),
        accessKey,
        secretKey,
        c.opt(S3_SESSION_TOKEN),
        r.get(S3_MAX_ATTEMPTS),
        call,
        attempt,
        r.get(S3_MAX_CONNECTIONS)).withWrites(writes(r)).withCredentials(credentials(c))
        .withCredentialsOrigin(CredentialsOrigin.describe(accessKey.isPresent(),
            c.isSet(S3_ACCESS_KEY), c.opt(S3_CREDENTIALS_PROVIDER),
            c.isSet(S3_CREDENTIALS_PROVIDER), c.hadoop()));
  }

  /**
   * The credentials source ({@link #S3_CREDENTIALS_PROVIDER} and what its providers need).
   *
   * <p>In a list of several providers, {@code static} without the keys and {@code temporary}
   * without the keys and a session token are left out, as S3A's chain skips them.
   *
   * @throws IllegalArgumentException naming the keys if a provider lacks what it needs: {@code
   *     static} the keys and {@code temporary} the keys and the session token (when listed alone
   *     or with only each other), {@code assumed-role} a role ARN; or if the session duration
   *     exceeds 12 h
   */
  private static S3Credentials credentials(Reader r) {
    Optional<List<S3Credentials.Provider>> providers = r.opt(S3_CREDENTIALS_PROVIDER);
    List<S3Credentials.Provider> list = providers.orElse(List.of());
    String where = S3_CREDENTIALS_PROVIDER.fullKey() + " (or "
        + S3_CREDENTIALS_PROVIDER.fallbackKey().orElseThrow() + ")";
    boolean keys = r.opt(S3_ACCESS_KEY).isPresent();
    boolean token = r.opt(S3_SESSION_TOKEN).isPresent();
    if (list.size() > 1) {
      // As in S3A's chain, a key-based provider without its keys yields nothing and the next is
      // tried; so Hadoop's list of both before the environment and instance ones works without
      // keys. Alone, it is a mistake, refused below.
      List<S3Credentials.Provider> usable = new ArrayList<>(list);
      usable.removeIf(p -> (p == S3Credentials.Provider.STATIC && !keys)
          || (p == S3Credentials.Provider.TEMPORARY && !(keys && token)));
      if (!usable.isEmpty()) {
        list = List.copyOf(usable);
      }
    }
    if (list.contains(S3Credentials.Provider.STATIC) && !keys) {
      throw new InvalidSettingException("Invalid S3 credentials: " + where + " lists static "
          + "credentials but " + S3_ACCESS_KEY.fullKey() + " and " + S3_SECRET_KEY.fullKey()
          + " (or fs.s3a.access.key and fs.s3a.secret.key) are not set" + NOT_READ, where,
          "'" + list + "'");
    }
    if (list.contains(S3Credentials.Provider.TEMPORARY) && !(keys && token)) {
      throw new InvalidSettingException("Invalid S3 credentials: " + where + " lists temporary "
          + "credentials, which need " + S3_ACCESS_KEY.fullKey() + ", "
          + S3_SECRET_KEY.fullKey() + " and " + S3_SESSION_TOKEN.fullKey()
          + " (or the fs.s3a.access.key, fs.s3a.secret.key and fs.s3a.session.token keys)",
          where, "'" + list + "'");
    }
    Optional<S3Credentials.AssumedRole> role = Optional.empty();
    if (list.contains(S3Credentials.Provider.ASSUMED_ROLE)) {
      String listed = "'" + list + "'";
      String arn = r.opt(S3_ROLE_ARN).orElseThrow(() -> new InvalidSettingException(
          "Invalid S3 credentials: " + where + " lists assumed-role, which needs "
              + S3_ROLE_ARN.fullKey() + " (or " + S3_ROLE_ARN.fallbackKey().orElseThrow()
              + "), the ARN of the role to assume", where, listed));
      Duration duration = r.get(S3_ROLE_SESSION_DURATION);
      if (duration.compareTo(S3Credentials.AssumedRole.MAX_SESSION) > 0) {
        String key = r.isSet(S3_ROLE_SESSION_DURATION) ? S3_ROLE_SESSION_DURATION.fullKey()
            : S3aFallbacks.sourceKey(r.hadoop(),
                S3_ROLE_SESSION_DURATION.fallbackKey().orElseThrow());
        throw new InvalidSettingException(key, duration.toString(),
            "STS sessions last at most 12h", null);
      }
      role = Optional.of(new S3Credentials.AssumedRole(arn, r.get(S3_ROLE_SESSION_NAME),
          duration, r.opt(S3_ROLE_STS_ENDPOINT)));
    }
    // S3A's profile keys configure its profile provider only; Strata's own apply to the default
    // chain too.
    boolean profile = list.contains(S3Credentials.Provider.PROFILE);
    Optional<Path> file = profile || r.isSet(S3_CREDENTIALS_FILE) ? r.opt(S3_CREDENTIALS_FILE)
        : Optional.empty();
    Optional<String> name = profile || r.isSet(S3_PROFILE) ? r.opt(S3_PROFILE)
        : Optional.empty();
    return new S3Credentials(list, file, name, role);
  }

  /**
   * Server-side encryption, storage class, payload checksums and Content-MD5 ({@link #S3_SSE},
   * {@link #S3_SSE_KMS_KEY_ID}, {@link #S3_STORAGE_CLASS}, {@link #S3_PAYLOAD_CHECKSUMS},
   * {@link #S3_LEGACY_MD5}).
   *
   * @throws IllegalArgumentException naming the keys if a KMS key id comes without aws:kms
   */
  private static S3WriteSettings writes(Reader r) {
    // Strata's encryption keys, if either is set, replace S3A's as a pair: never an algorithm
    // from one and a key from the other.
    Reader encryption = r.isSet(S3_SSE) || r.isSet(S3_SSE_KMS_KEY_ID) ? r.withoutFallbacks() : r;
    String sse = encryption.get(S3_SSE);
    Optional<String> kmsKey = encryption.opt(S3_SSE_KMS_KEY_ID);
    if (kmsKey.isPresent() && !sse.equals(S3WriteSettings.SSE_KMS)) {
      throw new InvalidSettingException("Invalid " + S3_SSE_KMS_KEY_ID.fullKey() + ": a KMS key "
          + "id needs " + S3_SSE.fullKey() + "=aws:kms, but " + S3_SSE.fullKey() + " is " + sse,
          S3_SSE.fullKey(), "'" + sse + "'");
    }
    return new S3WriteSettings(sse, kmsKey, r.opt(S3_STORAGE_CLASS),
        r.get(S3_PAYLOAD_CHECKSUMS), r.get(S3_LEGACY_MD5));
  }

  /** Reads options: the Strata key, else the option's Hadoop fallback key, else its default. */
  private record Reader(Map<String, String> settings, Map<String, String> hadoop) {
    Reader {
      settings = settings == null ? Collections.emptyMap() : settings;
      hadoop = hadoop == null ? Collections.emptyMap() : hadoop;
    }

    /** Whether the option's own (Strata) key is set, whatever its fallback holds. */
    boolean isSet(ConfigOption<?> option) {
      return settings.get(option.fullKey()) != null;
    }

    /** This reader without the Hadoop fallbacks. */
    Reader withoutFallbacks() {
      return new Reader(settings, Collections.emptyMap());
    }

    /** This reader without the Hadoop fallbacks of {@code options} (and per-bucket copies). */
    Reader withoutFallbacksOf(List<ConfigOption<?>> options) {
      Map<String, String> rest = new java.util.HashMap<>(hadoop);
      for (ConfigOption<?> o : options) {
        o.fallbackKey().ifPresent(k -> rest.keySet().removeIf(h -> h.equals(k)
            || (h.startsWith(S3aFallbacks.BUCKET_PREFIX)
                && h.endsWith("." + k.substring(S3aFallbacks.PREFIX.length())))));
      }
      return new Reader(settings, rest);
    }

    /**
     * The value set under the option's key or (if unset there) its fallback key, else its
     * default; empty for an unset option without a default. A blank fallback counts as unset.
     *
     * @throws IllegalArgumentException naming the key read, the value (unless secret or it may
     *     embed credentials) and what is allowed
     */
    <T> Optional<T> opt(ConfigOption<T> option) {
      String raw = settings.get(option.fullKey());
      String key = option.fullKey();
      if (raw == null && option.fallbackKey().isPresent()) {
        key = option.fallbackKey().get();
        raw = hadoop.get(key);
        if (raw != null && raw.isBlank()) {
          raw = null;
        }
      }
      if (raw == null) {
        return option.defaultValue();
      }
      try {
        return Optional.of(option.type().parse(raw));
      } catch (IllegalArgumentException e) {
        // Never echo secrets, nor anything that may embed credentials (user:secret@host).
        String shown = option.secret() || raw.contains("@") ? "<redacted>" : "'" + raw + "'";
        if (!key.equals(option.fullKey())) {
          key = S3aFallbacks.sourceKey(hadoop, key);
        }
        throw new InvalidSettingException(key, shown, e.getMessage(), e);
      }
    }

    /**
     * As {@link #opt} for an option with a default.
     *
     * @throws IllegalStateException if the option has no default (a programming error)
     */
    <T> T get(ConfigOption<T> option) {
      return opt(option).orElseThrow(() -> new IllegalStateException(option.fullKey()
          + " has no default; read it with opt"));
    }
  }
}
