// SPDX-License-Identifier: Apache-2.0
package io.strata.objectstore;

import static io.strata.objectstore.S3ObjectStore.CONFLICT_ATTEMPTS;
import static io.strata.objectstore.S3ObjectStore.CONFLICT_BACKOFF_MS;
import static io.strata.objectstore.S3ObjectStore.PUT_ID;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ThreadLocalRandom;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import software.amazon.awssdk.core.exception.SdkException;
import software.amazon.awssdk.core.exception.SdkServiceException;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.Delete;
import software.amazon.awssdk.services.s3.model.DeleteObjectsResponse;
import software.amazon.awssdk.services.s3.model.HeadObjectResponse;
import software.amazon.awssdk.services.s3.model.ObjectIdentifier;
import software.amazon.awssdk.services.s3.model.S3Error;

/**
 * The requests of one conditional-write probe (see {@link ConditionalWriteProbe}, which keeps
 * the verdicts) through one {@link S3ObjectStore}: a create-only PUT of a fresh probe object, the
 * same PUT again (which must fail with 412), a HEAD (the object must still be the first PUT's)
 * and a DeleteObjects (best effort). Requests go to the store's listener.
 */
final class ProbeRequests {
  private static final Logger LOG = LoggerFactory.getLogger(ProbeRequests.class);

  private final S3ObjectStore store;
  private final S3Client s3;
  private final String bucket;
  private final String endpoint;

  ProbeRequests(S3ObjectStore store) {
    this.store = store;
    this.s3 = store.s3;
    this.bucket = store.bucket();
    this.endpoint = store.endpoint;
  }

  /**
   * Before the first create-only write of this store: has {@link ConditionalWriteProbe} prove
   * (once per JVM, endpoint and bucket) that the server refuses a second create-only PUT.
   *
   * @param key the key about to be created (relative to the root), for messages and to place the
   *     probe object next to it in a bucket-rooted store
   * @throws ConditionalWritesUnsupportedException if the server ignores {@code If-None-Match}
   * @throws ObjectStoreException "Cannot create &lt;key&gt; ...: could not first check ..." if
   *     the probe could not decide (403, no such bucket, S3 unavailable); retryable as its cause
   */
  void ensure(String key) throws IOException {
    ConditionalWriteProbe.Target target = new ConditionalWriteProbe.Target(endpoint, bucket);
    try {
      ConditionalWriteProbe.ensure(target, () -> probe(target, probeKey(key)));
    } catch (ConditionalWritesUnsupportedException | ObjectStoreInterruptedException e) {
      throw e;
    } catch (ObjectStoreException e) {
      String m = "Cannot create " + store.describe(key) + " at " + endpoint
          + ": could not first check"
          + " that the server refuses a second create-only PUT (If-None-Match: *): "
          + e.getMessage();
      throw new ObjectStoreException(m, e.retryable(), e);
    }
  }

  /**
   * The full key of a new probe object: {@code <root prefix>_strata/probe/<uuid>} (a state
   * store's own directory); in a store rooted at the bucket itself (the checkpoint file
   * manager's), in the directory of {@code key}, lifted out of Spark's {@code offsets/}, {@code
   * commits/} and {@code sources/<n>/} to the checkpoint root ({@link #checkpointDirOf}), so the
   * probe needs no permission beyond the checkpoint's prefix and a probe object left behind never
   * lands in a directory Spark's {@code verifyCheckpointDirectoryEmptyOnStart} requires empty.
   */
  String probeKey(String key) {
    String dir = store.prefix();
    if (dir.isEmpty()) {
      int slash = key.lastIndexOf('/');
      dir = checkpointDirOf(slash < 0 ? "" : key.substring(0, slash + 1));
    }
    return dir + ConditionalWriteProbe.PREFIX + UUID.randomUUID();
  }

  /**
   * {@code dir} (empty or ending in {@code /}) without a trailing {@code offsets/}, {@code
   * commits/} or {@code sources/<digits>/}: the checkpoint root of a file Spark writes there.
   */
  static String checkpointDirOf(String dir) {
    String d = dir;
    for (String tail : new String[] {"offsets/", "commits/"}) {
      if (d.equals(tail) || d.endsWith("/" + tail)) {
        return d.substring(0, d.length() - tail.length());
      }
    }
    java.util.regex.Matcher m = SOURCES_DIR.matcher(d);
    return m.find() ? d.substring(0, m.start()) : d;
  }

  /** {@code sources/<digits>/} at the end of a directory, at its start or after a slash. */
  private static final java.util.regex.Pattern SOURCES_DIR =
      java.util.regex.Pattern.compile("(?<![^/])sources/[0-9]+/$");

  /**
   * The probe: creates {@code probeFullKey}, creates it again (expects 412), checks with a HEAD
   * that the object is the first write's, then deletes it (best effort: a failed delete is a
   * WARN). Requests go to this store's listener.
   *
   * @throws ConditionalWritesUnsupportedException on the verdict "ignored"
   * @throws ObjectStoreException if the probe could not decide
   */
  private void probe(ConditionalWriteProbe.Target target, String probeFullKey)
      throws IOException {
    String location = "s3://" + bucket + "/" + probeFullKey;
    String first = UUID.randomUUID().toString();
    String second = UUID.randomUUID().toString();
    boolean created = false;
    boolean mayExist = false;
    try {
      // The first create: a 412 here is an SDK retry of our own applied attempt, resolved by
      // its put id like any create-only write (the key is fresh, so no other writer has it).
      // If it fails in a way that may have been applied (a timeout or 5xx after the server
      // stored it), the finally block deletes the key anyway, quietly.
      try {
        createOnlyAt(probeFullKey, probeBody("first"), first);
      } catch (ObjectStoreException e) {
        mayExist = e.retryable() && !neverSent(e);
        throw e;
      }
      created = true;
      if (secondCreateSucceeded(probeFullKey, second)) {
        throw new ConditionalWritesUnsupportedException(
            ConditionalWriteProbe.unsupported(target, location, false), null);
      }
      String now = headPutId(probeFullKey, location);
      if (NO_PUT_ID.equals(now)) {
        throw new ConditionalWritesUnsupportedException(
            ConditionalWriteProbe.metadataDropped(target, location), null);
      }
      if (second.equals(now)) {
        throw new ConditionalWritesUnsupportedException(
            ConditionalWriteProbe.unsupported(target, location, true), null);
      }
      if (!first.equals(now)) {
        throw new ObjectStoreException("Cannot check conditional writes at " + endpoint
            + " with " + location + ": after two create-only PUTs the object carries put id "
            + now + ", neither of the probe's", false, null);
      }
      LOG.info("S3 endpoint {} bucket {} refuses a second create-only PUT (If-None-Match: *)"
          + " as Strata needs (checked once per JVM with {})", endpoint, bucket, location);
    } finally {
      if (created || mayExist) {
        deleteProbe(probeFullKey, location, created);
      }
    }
  }

  /** True if {@code e} says no request reached a server (connection refused, unknown host). */
  private static boolean neverSent(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof java.net.ConnectException || t instanceof java.net.UnknownHostException) {
        return true;
      }
    }
    return false;
  }

  /** {@code S3ObjectStore.createOnly} for a full key outside the key rules of the store's root. */
  private void createOnlyAt(String probeFullKey, ObjectBody body, String putId)
      throws IOException {
    for (int attempt = 1; ; attempt++) {
      try {
        store.upload(probeFullKey, body, b -> b.ifNoneMatch("*").metadata(Map.of(PUT_ID, putId)));
        return;
      } catch (SdkServiceException e) {
        if (e.statusCode() == 412) {
          String theirs = headPutId(probeFullKey, "s3://" + bucket + "/" + probeFullKey);
          if (putId.equals(theirs)) {
            return; // an earlier attempt of this PUT was applied
          }
          throw new ObjectStoreException("Cannot create s3://" + bucket + "/" + probeFullKey
              + " at " + endpoint + ": a fresh key was taken (put id " + theirs + ")", false, e);
        }
        if (e.statusCode() == 409 && attempt < CONFLICT_ATTEMPTS) {
          store.sleep(ThreadLocalRandom.current().nextLong(CONFLICT_BACKOFF_MS << attempt), "s3://"
              + bucket + "/" + probeFullKey);
          continue;
        }
        throw S3Errors.classify("create", "s3://" + bucket + "/" + probeFullKey, endpoint, e);
      } catch (SdkException e) {
        throw S3Errors.classify("create", "s3://" + bucket + "/" + probeFullKey, endpoint, e);
      }
    }
  }

  /**
   * The second create-only PUT of the probe: true if the server accepted it (200), false if it
   * refused with 412. A 409 ConditionalRequestConflict (a conditional write to the key still in
   * flight) is retried; the SDK retries 5xx and timeouts, and every attempt of this PUT meets an
   * existing object, so a 412 is a refusal whichever attempt got it.
   */
  private boolean secondCreateSucceeded(String probeFullKey, String putId) throws IOException {
    String location = "s3://" + bucket + "/" + probeFullKey;
    for (int attempt = 1; ; attempt++) {
      try {
        store.upload(probeFullKey, probeBody("second"),
            b -> b.ifNoneMatch("*").metadata(Map.of(PUT_ID, putId)));
        return true;
      } catch (SdkServiceException e) {
        if (e.statusCode() == 412) {
          return false;
        }
        if (e.statusCode() == 409 && attempt < CONFLICT_ATTEMPTS) {
          store.sleep(ThreadLocalRandom.current().nextLong(CONFLICT_BACKOFF_MS << attempt),
              location);
          continue;
        }
        throw S3Errors.classify("create (a second time, to check conditional writes)",
            location, endpoint, e);
      } catch (SdkException e) {
        throw S3Errors.classify("create (a second time, to check conditional writes)",
            location, endpoint, e);
      }
    }
  }

  /** What {@link #headPutId} returns for an object that exists but carries no put id. */
  static final String NO_PUT_ID = "";

  /**
   * The put id of the object at a full key; null if it does not exist, {@link #NO_PUT_ID} if it
   * exists without one (a server that drops {@code x-amz-meta-*} headers).
   */
  private String headPutId(String probeFullKey, String location) throws IOException {
    try {
      HeadObjectResponse r = s3.headObject(b -> b.bucket(bucket).key(probeFullKey)
          .overrideConfiguration(store::withListener));
      String id = S3ObjectStore.lowerCaseKeys(r.metadata()).get(PUT_ID);
      return id == null ? NO_PUT_ID : id;
    } catch (SdkServiceException e) {
      if (e.statusCode() == 404) {
        return null;
      }
      throw S3Errors.classify("head", location, endpoint, e);
    } catch (SdkException e) {
      throw S3Errors.classify("head", location, endpoint, e);
    }
  }

  /**
   * Deletes the probe object. A failure (for example no s3:DeleteObject) is a WARN if the probe
   * object was created, else a DEBUG (it probably does not exist).
   */
  private void deleteProbe(String probeFullKey, String location, boolean created) {
    if (!created) {
      try {
        s3.deleteObjects(b -> b.bucket(bucket)
            .delete(Delete.builder().objects(ObjectIdentifier.builder().key(probeFullKey).build())
                .quiet(true).build())
            .overrideConfiguration(store::withListener));
      } catch (SdkException e) {
        LOG.debug("Cannot delete {} after a failed probe", location, e);
      }
      return;
    }
    try {
      DeleteObjectsResponse r = s3.deleteObjects(b -> b.bucket(bucket)
          .delete(Delete.builder().objects(ObjectIdentifier.builder().key(probeFullKey).build())
              .quiet(true).build())
          .overrideConfiguration(store::withListener));
      if (r.hasErrors() && !r.errors().isEmpty()) {
        S3Error err = r.errors().get(0);
        warnProbeLeft(location, err.code() + " " + err.message());
      }
    } catch (SdkException e) {
      warnProbeLeft(location, S3Errors.classify("delete", location, endpoint, e).getMessage());
    }
  }

  private void warnProbeLeft(String location, String reason) {
    LOG.warn("Cannot delete the conditional-write probe object {} at {} ({}); carrying on. It is"
        + " a few bytes under a reserved key Strata never reads; delete it by hand, or grant"
        + " s3:DeleteObject (which garbage collection needs as well)", location, endpoint,
        reason);
  }

  /** A probe object's bytes: a few dozen, saying what it is. */
  private static ObjectBody probeBody(String which) {
    return ObjectBody.of(("Strata conditional-write probe (" + which + " PUT); safe to delete\n")
        .getBytes(StandardCharsets.UTF_8));
  }
}
