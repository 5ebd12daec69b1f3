// SPDX-License-Identifier: Apache-2.0
package io.strata.objectstore;

import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import software.amazon.awssdk.awscore.AwsRequestOverrideConfiguration;
import software.amazon.awssdk.core.ResponseInputStream;
import software.amazon.awssdk.core.exception.SdkException;
import software.amazon.awssdk.core.exception.SdkServiceException;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.CommonPrefix;
import software.amazon.awssdk.services.s3.model.Delete;
import software.amazon.awssdk.services.s3.model.DeleteObjectsResponse;
import software.amazon.awssdk.services.s3.model.GetObjectResponse;
import software.amazon.awssdk.services.s3.model.HeadObjectResponse;
import software.amazon.awssdk.services.s3.model.ListObjectsV2Request;
import software.amazon.awssdk.services.s3.model.ListObjectsV2Response;
import software.amazon.awssdk.services.s3.model.MultipartUpload;
import software.amazon.awssdk.services.s3.model.ObjectIdentifier;
import software.amazon.awssdk.services.s3.model.PutObjectRequest;
import software.amazon.awssdk.services.s3.model.S3Error;
import software.amazon.awssdk.services.s3.model.S3Object;
import software.amazon.awssdk.services.s3.model.ServerSideEncryption;
import software.amazon.awssdk.services.s3.model.StorageClass;

/**
 * An {@link ObjectStore} on S3 (or an S3-compatible server) rooted at {@code s3://bucket/prefix},
 * using a shared sync AWS SDK v2 client.
 *
 * <p>Create-only writes use S3 conditional writes: {@code PutObject} with {@code If-None-Match:
 * *}, which S3 applies atomically (exactly one of several racing writers gets 200, the others
 * 412 Precondition Failed, or 409 ConditionalRequestConflict while another conditional write to
 * the key is in flight). Each logical write stores a random put id as user metadata {@code
 * x-amz-meta-strata-put-id}; a 412 on a write whose earlier attempt the server applied (the SDK
 * retried after a timeout or reset) is recognised by that id and reported as success.
 *
 * <p>Before its first create-only write a store has {@link ConditionalWriteProbe} prove, once per
 * JVM, endpoint and bucket, that the server refuses a second create-only PUT of one key (a server
 * that ignores {@code If-None-Match} answers 200 and overwrites) and lets exactly one of several
 * racing create-only PUTs of a fresh key win; if it does not, every
 * create-only write fails with {@link ConditionalWritesUnsupportedException}. The probe object is
 * {@code _strata/probe/<uuid>} under the store's root, or, in a store rooted at the bucket, in
 * the directory of the key about to be created; plain {@link #put}s are not probed.
 *
 * <p>Every request carries this store's {@link RequestListener}, which sees each HTTP attempt.
 * Use after {@link #close()} throws {@link IllegalStateException}.
 */
final class S3ObjectStore implements ObjectStore {
  private static final Logger LOG = LoggerFactory.getLogger(S3ObjectStore.class);

  /** User-metadata name (without {@code x-amz-meta-}) of the put id of a create-only write. */
  static final String PUT_ID = "strata-put-id";
  /** Attempts of a create-only write on 409 ConditionalRequestConflict (our loop, not the SDK's). */
  static final int CONFLICT_ATTEMPTS = 4;
  /** First backoff after a 409, milliseconds; doubles per attempt, with full jitter. */
  static final long CONFLICT_BACKOFF_MS = 50;
  /**
   * HEADs of an object that a 412 or a create says exists but a HEAD does not find: a store
   * whose reads lag behind its writes (AWS S3 never does). About 4.5 s in all.
   */
  static final int LOOKUP_ATTEMPTS = 8;
  /** Delay before the second lookup, ms; doubles per lookup, at most {@value #LOOKUP_MAX_MS}. */
  static final long LOOKUP_BACKOFF_MS = 100;
  /** Longest delay between two lookups, ms. */
  static final long LOOKUP_MAX_MS = 1_000;
  /** S3's maximum keys per DeleteObjects request. */
  static final int DELETE_BATCH = 1000;

  private final SharedS3Clients.Lease lease;
  final S3Client s3;
  private final String bucket;
  /** Root prefix: empty or ending with '/'. */
  private final String prefix;
  final String endpoint;
  /** Where the credentials come from, for a 403 ({@link S3Settings#credentialsOrigin()}). */
  final String credentialsOrigin;
  private final RequestListener listener;
  private final int pageSize;
  private final AtomicBoolean closed = new AtomicBoolean();
  /** Set once a HeadBucket confirmed the bucket exists (see {@link #head}). */
  private volatile boolean bucketVerified;
  /** Set once {@link ConditionalWriteProbe} confirmed this bucket refuses a second create. */
  private volatile boolean conditionalWritesVerified;

  /**
   * A store over {@code s3://bucket/prefix} that owns {@code lease} and releases it on close.
   *
   * @param prefix root prefix; empty, or '/'-separated segments (a trailing '/' is added)
   * @param pageSize keys per ListObjectsV2 page (1..1000; S3's default and maximum is 1000)
   */
  S3ObjectStore(SharedS3Clients.Lease lease, String bucket, String prefix,
      RequestListener listener, int pageSize) {
    this.lease = Objects.requireNonNull(lease, "lease");
    this.s3 = lease.client();
    this.bucket = Objects.requireNonNull(bucket, "bucket");
    this.prefix = normalizePrefix(prefix);
    this.endpoint = S3ClientFactory.describeEndpoint(lease.settings());
    this.credentialsOrigin = lease.settings().credentialsOrigin();
    this.listener = listener == null ? RequestListener.NONE : listener;
    if (pageSize < 1 || pageSize > 1000) {
      throw new IllegalArgumentException("pageSize must be in 1..1000, was " + pageSize);
    }
    this.pageSize = pageSize;
  }

  /** Normalizes a root prefix to "" or "a/b/". */
  static String normalizePrefix(String prefix) {
    String p = prefix == null ? "" : prefix;
    while (p.startsWith("/")) {
      p = p.substring(1);
    }
    while (p.endsWith("/")) {
      p = p.substring(0, p.length() - 1);
    }
    if (p.isEmpty()) {
      return "";
    }
    Keys.validate(p);
    return p + "/";
  }

  String bucket() {
    return bucket;
  }

  String prefix() {
    return prefix;
  }

  @Override
  public void putIfAbsent(String key, ObjectBody body) throws IOException {
    putIfAbsent(key, body, UUID.randomUUID().toString());
  }

  /**
   * {@link #putIfAbsent(String, ObjectBody)} with an explicit put id, so a test can play the
   * part of an SDK retry whose first attempt the server applied.
   */
  void putIfAbsent(String key, ObjectBody body, String putId) throws IOException {
    String fullKey = fullKey(key);
    checkOpen();
    if (!conditionalWritesVerified) {
      new ProbeRequests(this).ensure(key); // throws unless create-only PUTs hold
      conditionalWritesVerified = true;
    }
    createOnly(key, fullKey, body, putId);
  }

  /**
   * The create-only PUT itself: {@code If-None-Match: *} with {@code putId} as metadata; a 412
   * is resolved by one HEAD (our own applied attempt, or another writer's object), a 409
   * ConditionalRequestConflict is retried here up to {@value #CONFLICT_ATTEMPTS} times.
   */
  private void createOnly(String key, String fullKey, ObjectBody body, String putId)
      throws IOException {
    for (int attempt = 1; ; attempt++) {
      try {
        upload(fullKey, body, b -> b.ifNoneMatch("*").metadata(Map.of(PUT_ID, putId)));
        return;
      } catch (SdkServiceException e) {
        if (e.statusCode() == 412) {
          resolvePreconditionFailed(key, putId, e);
          return;
        }
        if (e.statusCode() == 409 && attempt < CONFLICT_ATTEMPTS) {
          long delay = ThreadLocalRandom.current().nextLong(CONFLICT_BACKOFF_MS << attempt);
          LOG.debug("409 {} on create of {}; retrying in {} ms (attempt {} of {})",
              S3Errors.errorCode(e), describe(key), delay, attempt, CONFLICT_ATTEMPTS);
          sleep(delay, describe(key));
          continue;
        }
        throw fail("create", describe(key), e);
      } catch (SdkException e) {
        throw fail("create", describe(key), e);
      }
    }
  }

  /**
   * A 412 to {@code If-None-Match: *}: the key exists. It is ours if it carries our put id (an
   * earlier attempt of this very write was applied); otherwise another writer won. A HEAD that
   * misses is repeated with backoff ({@value #LOOKUP_ATTEMPTS} lookups, about 4.5 s) before the
   * miss is an error: on a store whose reads lag its writes the object shows up late.
   */
  private void resolvePreconditionFailed(String key, String putId, SdkServiceException e)
      throws IOException {
    Optional<ObjectInfo> existing = head(key);
    // A miss after a 412: the object was deleted since, or this store's reads lag its writes.
    for (int attempt = 2; existing.isEmpty() && attempt <= LOOKUP_ATTEMPTS; attempt++) {
      sleep(lookupDelay(attempt), describe(key));
      existing = head(key);
    }
    String theirs = existing.map(i -> i.metadata().get(PUT_ID)).orElse(null);
    if (putId.equals(theirs)) {
      LOG.info("Create of {} got 412 but the object carries this write's put id {}: an earlier"
          + " attempt was applied; treating the write as done", describe(key), putId);
      return;
    }
    String what = existing.isPresent()
        ? "the object already exists (written by another writer, put id " + theirs + ")"
        : "the object already existed (412 Precondition Failed) but " + LOOKUP_ATTEMPTS
            + " lookups over " + lookupBudgetMillis() + " ms did not find it: it has since been"
            + " deleted, or the store's reads lag behind its writes by more than that";
    throw new ObjectAlreadyExistsException(
        "Cannot create " + describe(key) + " at " + endpoint + ": " + what, e);
  }

  @Override
  public void put(String key, ObjectBody body) throws IOException {
    String fullKey = fullKey(key);
    checkOpen();
    try {
      upload(fullKey, body, b -> { });
    } catch (SdkException e) {
      throw fail("put", describe(key), e);
    }
  }

  void upload(String fullKey, ObjectBody body, Consumer<PutObjectRequest.Builder> extra) {
    try (BodyProvider provider = new BodyProvider(body)) {
      PutObjectRequest.Builder b = PutObjectRequest.builder()
          .bucket(bucket)
          .key(fullKey)
          .contentLength(body.length())
          .contentType("application/octet-stream")
          .overrideConfiguration(this::withListener);
      applyWrites(b);
      extra.accept(b);
      s3.putObject(b.build(),
          RequestBody.fromContentProvider(provider, body.length(), "application/octet-stream"));
    }
  }

  @Override
  public boolean copyIfAbsentFrom(ObjectStore source, String sourceKey, String key)
      throws IOException {
    if (!(source instanceof S3ObjectStore from) || from.s3 != s3) {
      return false; // another client: another endpoint, region or credentials
    }
    String fullKey = fullKey(key);
    String what = "copy " + from.describe(sourceKey) + " to";
    checkOpen();
    S3WriteSettings w = lease.settings().writes();
    boolean sse = !w.serverSideEncryption().equals(S3WriteSettings.SSE_NONE);
    try {
      s3.copyObject(b -> b.sourceBucket(from.bucket).sourceKey(from.fullKey(sourceKey))
          .destinationBucket(bucket).destinationKey(fullKey).ifNoneMatch("*")
          .serverSideEncryption(sse ? ServerSideEncryption.fromValue(w.serverSideEncryption())
              : null)
          .ssekmsKeyId(sse ? w.kmsKeyId().orElse(null) : null)
          .storageClass(w.storageClass().map(StorageClass::fromValue).orElse(null))
          .overrideConfiguration(this::withListener));
      return true;
    } catch (SdkException e) {
      if (e instanceof SdkServiceException se && se.statusCode() == 412) {
        throw new ObjectAlreadyExistsException("Cannot " + what + " " + describe(key)
            + ": it already exists", e);
      }
      throw fail(what, describe(key), e);
    }
  }

  /** Server-side encryption and storage class of every PUT ({@link S3WriteSettings}). */
  private void applyWrites(PutObjectRequest.Builder b) {
    S3WriteSettings w = lease.settings().writes();
    if (!w.serverSideEncryption().equals(S3WriteSettings.SSE_NONE)) {
      b.serverSideEncryption(ServerSideEncryption.fromValue(w.serverSideEncryption()));
      w.kmsKeyId().ifPresent(b::ssekmsKeyId);
    }
    w.storageClass().ifPresent(c -> b.storageClass(StorageClass.fromValue(c)));
  }

  @Override
  public InputStream get(String key) throws IOException {
    String fullKey = fullKey(key);
    checkOpen();
    try {
      return new S3InputStream(key, s3.getObject(b -> b.bucket(bucket).key(fullKey)
          .overrideConfiguration(this::withListener)));
    } catch (SdkException e) {
      throw fail("read", describe(key), e);
    }
  }

  @Override
  public InputStream getRange(String key, long offset, long length) throws IOException {
    if (offset < 0 || length <= 0) {
      throw new IllegalArgumentException(
          "offset must be >= 0 and length > 0, were " + offset + " and " + length);
    }
    String fullKey = fullKey(key);
    checkOpen();
    String range = "bytes=" + offset + "-" + (offset + length - 1);
    try {
      return new S3InputStream(key, s3.getObject(b -> b.bucket(bucket).key(fullKey).range(range)
          .overrideConfiguration(this::withListener)));
    } catch (SdkException e) {
      throw fail("read " + range + " of", describe(key), e);
    }
  }

  @Override
  public byte[] getTail(String key, int length) throws IOException {
    if (length <= 0) {
      throw new IllegalArgumentException("length must be > 0, was " + length);
    }
    String fullKey = fullKey(key);
    checkOpen();
    String range = "bytes=-" + length;
    try (InputStream in = new S3InputStream(key, s3.getObject(b -> b.bucket(bucket).key(fullKey)
        .range(range).overrideConfiguration(this::withListener)))) {
      return in.readAllBytes();
    } catch (SdkServiceException e) {
      if (e.statusCode() == 416) {
        // A suffix range of an empty object is unsatisfiable; its tail is empty.
        Optional<ObjectInfo> info = head(key);
        if (info.isPresent() && info.get().size() == 0) {
          return new byte[0];
        }
      }
      throw fail("read " + range + " of", describe(key), e);
    } catch (SdkException e) {
      throw fail("read " + range + " of", describe(key), e);
    }
  }

  @Override
  public Optional<ObjectInfo> head(String key) throws IOException {
    String fullKey = fullKey(key);
    checkOpen();
    HeadObjectResponse r;
    try {
      r = s3.headObject(b -> b.bucket(bucket).key(fullKey)
          .overrideConfiguration(this::withListener));
    } catch (SdkServiceException e) {
      if (e.statusCode() == 404) {
        // A 404 to HEAD has no body, so "no such key" and "no such bucket" look alike.
        verifyBucketOnce("head", key);
        return Optional.empty();
      }
      throw fail("head", describe(key), e);
    } catch (SdkException e) {
      throw fail("head", describe(key), e);
    }
    return Optional.of(new ObjectInfo(key, r.contentLength(),
        r.lastModified() == null ? 0L : r.lastModified().toEpochMilli(),
        lowerCaseKeys(r.metadata())));
  }

  /** Confirms with HeadBucket, once per store, that the bucket exists. */
  private void verifyBucketOnce(String action, String key) throws ObjectStoreException {
    if (bucketVerified) {
      return;
    }
    try {
      s3.headBucket(b -> b.bucket(bucket).overrideConfiguration(this::withListener));
      bucketVerified = true;
    } catch (SdkServiceException e) {
      if (e.statusCode() == 404) {
        throw new ObjectStoreException("Cannot " + action + " " + describe(key) + " at " + endpoint
            + ": the bucket does not exist (404 on HeadBucket " + bucket + ")", false, e);
      }
      throw fail(action, describe(key), e);
    } catch (SdkException e) {
      throw fail(action, describe(key), e);
    }
  }

  @Override
  public List<ObjectInfo> list(String listPrefix) throws IOException {
    Keys.validatePrefix(listPrefix);
    checkOpen();
    ListObjectsV2Request request = ListObjectsV2Request.builder()
        .bucket(bucket)
        .prefix(prefix + listPrefix)
        .maxKeys(pageSize)
        .overrideConfiguration(this::withListener)
        .build();
    List<ObjectInfo> out = new ArrayList<>();
    try {
      for (S3Object o : s3.listObjectsV2Paginator(request).contents()) {
        String key = o.key();
        if (!key.startsWith(prefix)) {
          continue; // cannot happen with a conforming server; never hand out a foreign key
        }
        out.add(new ObjectInfo(key.substring(prefix.length()), o.size(),
            o.lastModified() == null ? 0L : o.lastModified().toEpochMilli(), Map.of()));
      }
    } catch (SdkException e) {
      throw fail("list", describe(listPrefix), e);
    }
    // S3 already lists in this order; sorting keeps the contract on lax servers.
    out.sort((a, b) -> Keys.compare(a.key(), b.key()));
    return out;
  }

  @Override
  public DelimitedListing listDelimited(String listPrefix) throws IOException {
    Keys.validatePrefix(listPrefix);
    checkOpen();
    ListObjectsV2Request request = ListObjectsV2Request.builder()
        .bucket(bucket)
        .prefix(prefix + listPrefix)
        .delimiter("/")
        .maxKeys(pageSize)
        .overrideConfiguration(this::withListener)
        .build();
    List<ObjectInfo> objects = new ArrayList<>();
    List<String> prefixes = new ArrayList<>();
    try {
      for (ListObjectsV2Response page : s3.listObjectsV2Paginator(request)) {
        for (S3Object o : page.contents()) {
          if (o.key().startsWith(prefix)) {
            objects.add(new ObjectInfo(o.key().substring(prefix.length()), o.size(),
                o.lastModified() == null ? 0L : o.lastModified().toEpochMilli(), Map.of()));
          }
        }
        for (CommonPrefix p : page.commonPrefixes()) {
          if (p.prefix() != null && p.prefix().startsWith(prefix)) {
            prefixes.add(p.prefix().substring(prefix.length()));
          }
        }
      }
    } catch (SdkException e) {
      throw fail("list", describe(listPrefix), e);
    }
    objects.sort((a, b) -> Keys.compare(a.key(), b.key()));
    // S3 names a common prefix once; S3Mock 4.11 repeats one on every page it spans, and a
    // repeated directory would reach Spark's checkpoint listings twice.
    java.util.TreeSet<String> distinct = new java.util.TreeSet<>(Keys.ORDER);
    distinct.addAll(prefixes);
    return new DelimitedListing(objects, List.copyOf(distinct));
  }

  @Override
  public void delete(List<String> keys) throws IOException {
    List<ObjectIdentifier> ids = new ArrayList<>(keys.size());
    for (String key : keys) {
      ids.add(ObjectIdentifier.builder().key(fullKey(key)).build());
    }
    checkOpen();
    for (int from = 0; from < ids.size(); from += DELETE_BATCH) {
      List<ObjectIdentifier> batch = ids.subList(from, Math.min(ids.size(), from + DELETE_BATCH));
      String what = describe(keys.get(from)) + (batch.size() > 1
          ? " and " + (batch.size() - 1) + " more" : "");
      DeleteObjectsResponse r;
      try {
        r = s3.deleteObjects(b -> b.bucket(bucket)
            .delete(Delete.builder().objects(batch).quiet(true).build())
            .overrideConfiguration(this::withListener));
      } catch (SdkException e) {
        throw fail("delete", what, e);
      }
      if (r.hasErrors() && !r.errors().isEmpty()) {
        throw deleteErrors(r.errors());
      }
    }
  }

  private ObjectStoreException deleteErrors(List<S3Error> errors) {
    StringBuilder sb = new StringBuilder();
    boolean retryable = true;
    for (int i = 0; i < errors.size(); i++) {
      S3Error err = errors.get(i);
      if (i < 5) {
        sb.append(i == 0 ? "" : "; ").append(err.key()).append(": ").append(err.code())
            .append(' ').append(err.message());
      }
      retryable &= err.code() != null && (err.code().equals("SlowDown")
          || err.code().equals("InternalError") || err.code().equals("ServiceUnavailable"));
    }
    if (errors.size() > 5) {
      sb.append("; and ").append(errors.size() - 5).append(" more");
    }
    return new ObjectStoreException("Cannot delete " + errors.size() + " object(s) in s3://"
        + bucket + " at " + endpoint + ": " + sb, retryable, null);
  }

  @Override
  public int abortIncompleteUploads(String listPrefix, long startedBeforeMillis)
      throws IOException {
    Keys.validatePrefix(listPrefix);
    checkOpen();
    int aborted = 0;
    try {
      for (MultipartUpload u : s3.listMultipartUploadsPaginator(b -> b.bucket(bucket)
          .prefix(prefix + listPrefix).overrideConfiguration(this::withListener)).uploads()) {
        if (!u.key().startsWith(prefix + listPrefix) || u.initiated() == null
            || u.initiated().toEpochMilli() >= startedBeforeMillis) {
          continue;
        }
        String key = u.key().substring(prefix.length());
        try {
          s3.abortMultipartUpload(b -> b.bucket(bucket).key(u.key()).uploadId(u.uploadId())
              .overrideConfiguration(this::withListener));
          aborted++;
          LOG.info("Aborted incomplete multipart upload {} of {} (initiated {})", u.uploadId(),
              describe(key), u.initiated());
        } catch (SdkServiceException e) {
          if (e.statusCode() != 404) { // 404 NoSuchUpload: completed or aborted meanwhile
            throw fail("abort multipart upload " + u.uploadId() + " of", describe(key), e);
          }
        }
      }
    } catch (SdkException e) {
      throw fail("list incomplete multipart uploads under", describe(listPrefix), e);
    }
    return aborted;
  }

  /** {@link S3Errors#classify} of a failed request of this store. */
  private ObjectStoreException fail(String action, String location, SdkException e) {
    return S3Errors.classify(action, location, endpoint, credentialsOrigin, e);
  }

  @Override
  public String describe(String key) {
    return "s3://" + bucket + "/" + prefix + key;
  }

  @Override
  public void close() {
    if (closed.compareAndSet(false, true)) {
      lease.close();
    }
  }

  @Override
  public String toString() {
    return "S3ObjectStore[s3://" + bucket + "/" + prefix + " at " + endpoint + "]";
  }

  // ---------------------------------------------------------------------------------------------

  private String fullKey(String key) {
    return prefix + Keys.validate(key);
  }

  private void checkOpen() {
    if (closed.get()) {
      throw new IllegalStateException("Object store s3://" + bucket + "/" + prefix + " is closed");
    }
  }

  void withListener(AwsRequestOverrideConfiguration.Builder b) {
    b.putExecutionAttribute(ListenerInterceptor.LISTENER, listener);
  }

  static Map<String, String> lowerCaseKeys(Map<String, String> metadata) {
    Map<String, String> out = new HashMap<>();
    if (metadata != null) {
      metadata.forEach((k, v) -> out.put(k.toLowerCase(Locale.ROOT), v));
    }
    return out;
  }

  /** The delay before lookup number {@code attempt} (2 to {@value #LOOKUP_ATTEMPTS}), ms. */
  static long lookupDelay(int attempt) {
    return Math.min(LOOKUP_MAX_MS, LOOKUP_BACKOFF_MS << (attempt - 2));
  }

  /** All delays of {@value #LOOKUP_ATTEMPTS} lookups, ms. */
  static long lookupBudgetMillis() {
    long sum = 0;
    for (int a = 2; a <= LOOKUP_ATTEMPTS; a++) {
      sum += lookupDelay(a);
    }
    return sum;
  }

  void sleep(long ms, String location) throws ObjectStoreException {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new ObjectStoreInterruptedException(
          "Cannot create " + location + " at " + endpoint + ": interrupted", e);
    }
  }

  /**
   * The body of a GET: classifies SDK failures during reads, and aborts the connection instead
   * of draining it when closed before the end (the SDK's advice for partial reads).
   */
  private final class S3InputStream extends FilterInputStream {
    private final String key;
    private final ResponseInputStream<GetObjectResponse> response;
    /** Bytes the response announced, or -1 if unknown. */
    private final long expected;
    private long read;
    private boolean eof;

    S3InputStream(String key, ResponseInputStream<GetObjectResponse> response) {
      super(response);
      this.key = key;
      this.response = response;
      Long length = response.response().contentLength();
      this.expected = length == null ? -1 : length;
    }

    @Override
    public int read() throws IOException {
      try {
        int b = super.read();
        count(b < 0 ? -1 : 1);
        return b;
      } catch (SdkException e) {
        throw fail("read", describe(key), e);
      } catch (IOException e) {
        throw readFailed(e);
      }
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
      try {
        int n = super.read(b, off, len);
        count(n);
        return n;
      } catch (SdkException e) {
        throw fail("read", describe(key), e);
      } catch (IOException e) {
        throw readFailed(e);
      }
    }

    private void count(int n) {
      if (n < 0) {
        eof = true;
      } else {
        read += n;
        eof |= expected >= 0 && read >= expected;
      }
    }

    private ObjectStoreException readFailed(IOException e) {
      return new ObjectStoreException(
          "Cannot read " + describe(key) + " at " + endpoint + ": " + e, true, e);
    }

    @Override
    public void close() throws IOException {
      if (!eof) {
        response.abort();
      }
      super.close();
    }
  }
}
