// SPDX-License-Identifier: Apache-2.0
package io.strata.objectstore;

import static io.strata.objectstore.S3ObjectStore.CONFLICT_ATTEMPTS;
import static io.strata.objectstore.S3ObjectStore.CONFLICT_BACKOFF_MS;
import static io.strata.objectstore.S3ObjectStore.PUT_ID;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
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
  /** Where the store's credentials come from, for a 403. */
  private final String credentialsOrigin;

  ProbeRequests(S3ObjectStore store) {
    this.store = store;
    this.s3 = store.s3;
    this.bucket = store.bucket();
    this.endpoint = store.endpoint;
    this.credentialsOrigin = store.credentialsOrigin;
  }

  /**
   * Before the first create-only write of this store: has {@link ConditionalWriteProbe} prove
   * (once per JVM, endpoint and bucket) that the server refuses a second create-only PUT and lets
   * exactly one of several racing create-only PUTs win.
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
          + " that the server's create-only PUT (If-None-Match: *) is honoured and atomic: "
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
   * that the object is the first write's; then {@value ConditionalWriteProbe#RACES} races of
   * {@value ConditionalWriteProbe#RACERS} writers for a fresh key each, in {@value
   * ConditionalWriteProbe#ROUNDS} rounds of races run at once ({@link #race}); then deletes every
   * probe object with one DeleteObjects (best effort: a failed delete is a WARN). Requests go to this store's listener.
   *
   * @throws ConditionalWritesUnsupportedException on the verdict "ignored" or "not atomic"
   * @throws ObjectStoreException if the probe could not decide
   */
  private void probe(ConditionalWriteProbe.Target target, String probeFullKey)
      throws IOException {
    String location = "s3://" + bucket + "/" + probeFullKey;
    String first = UUID.randomUUID().toString();
    String second = UUID.randomUUID().toString();
    List<String> written = new ArrayList<>();
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
      String now = visiblePutId(probeFullKey, location);
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
      int perRound = ConditionalWriteProbe.RACES / ConditionalWriteProbe.ROUNDS;
      ExecutorService pool = Executors.newFixedThreadPool(ConditionalWriteProbe.RACERS * perRound,
          r -> {
            Thread t = new Thread(r, "strata-probe-racer");
            t.setDaemon(true);
            return t;
          });
      try {
        List<Raced> raced = new ArrayList<>();
        for (int round = 0; round < ConditionalWriteProbe.ROUNDS; round++) {
          List<String> raceKeys = new ArrayList<>();
          for (int k = 1; k <= perRound; k++) {
            raceKeys.add(probeFullKey + "-race" + (round * perRound + k));
          }
          written.addAll(raceKeys);
          raced.addAll(race(target, raceKeys, round * perRound + 1, pool));
        }
        checkWinners(target, raced, pool);
      } finally {
        pool.shutdownNow();
      }
      LOG.info("S3 endpoint {} bucket {} refuses a second create-only PUT (If-None-Match: *)"
          + " and lets exactly one of {} racing create-only PUTs of a new key win ({} races), as"
          + " Strata needs (checked once per JVM with {})", endpoint, bucket,
          ConditionalWriteProbe.RACERS, ConditionalWriteProbe.RACES, location);
    } finally {
      if (created || mayExist) {
        written.add(0, probeFullKey);
        deleteProbe(written, location, created);
      }
    }
  }

  /** How one racing writer's create-only PUT was answered. */
  private enum Answer { WON, REFUSED }

  /**
   * One race's outcome, its object not yet looked at: the raced key, the race's number, every
   * writer's put id and the index of the writer answered 200 (-1 if none was).
   */
  private record Raced(String key, int race, List<String> ids, int winner) { }

  /**
   * One round of races: {@value ConditionalWriteProbe#RACERS} create-only PUTs of each of the
   * fresh keys {@code raceKeys}, each with its own put id, all sent at once from as many threads
   * of {@code pool}. Per key at most one may succeed and the rest must be answered 412 ({@link
   * #checkWinners} then looks at the objects).
   *
   * @param firstRace the number of the first key's race (1-based), for messages
   * @return each key's race, in order
   * @throws ConditionalWritesUnsupportedException if more than one writer of a key won
   * @throws ObjectStoreException if a PUT failed otherwise
   */
  private List<Raced> race(ConditionalWriteProbe.Target target, List<String> raceKeys,
      int firstRace, ExecutorService pool) throws IOException {
    int n = ConditionalWriteProbe.RACERS;
    CyclicBarrier start = new CyclicBarrier(n * raceKeys.size());
    List<List<String>> ids = new ArrayList<>();
    List<Future<Answer>> futures = new ArrayList<>();
    for (String raceKey : raceKeys) {
      List<String> keyIds = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        String id = UUID.randomUUID().toString();
        keyIds.add(id);
        ObjectBody body = probeBody("racing writer " + (i + 1) + " of " + n);
        futures.add(pool.submit(() -> {
          start.await(30, TimeUnit.SECONDS);
          return racingCreate(raceKey, body, id);
        }));
      }
      ids.add(keyIds);
    }
    List<Answer> answers = await(futures, "s3://" + bucket + "/" + raceKeys.get(0));
    List<Raced> out = new ArrayList<>();
    for (int k = 0; k < raceKeys.size(); k++) {
      String location = "s3://" + bucket + "/" + raceKeys.get(k);
      List<Answer> keyAnswers = answers.subList(k * n, (k + 1) * n);
      int won = 0;
      int winner = -1;
      for (int i = 0; i < n; i++) {
        if (keyAnswers.get(i) == Answer.WON) {
          won++;
          winner = i;
        }
      }
      if (won > 1) {
        throw new ConditionalWritesUnsupportedException(
            ConditionalWriteProbe.notAtomic(target, location, won, firstRace + k), null);
      }
      out.add(new Raced(raceKeys.get(k), firstRace + k, ids.get(k), winner));
    }
    return out;
  }

  /**
   * One HEAD per raced key, all at once on {@code pool} (each repeated while it misses, for a
   * store whose reads lag, so a lag is waited out once, not per round): each object must carry
   * its race's winner's put id. A 412 whose writer's put id the HEAD shows is that writer's own
   * SDK retry of an applied attempt, and counts as its win.
   *
   * @throws ConditionalWritesUnsupportedException if an object is a refused writer's while
   *     another writer was answered 200
   * @throws ObjectStoreException if an object is missing or carries none of its race's put ids
   */
  private void checkWinners(ConditionalWriteProbe.Target target, List<Raced> raced,
      ExecutorService pool) throws IOException {
    List<Future<String>> heads = new ArrayList<>();
    for (Raced r : raced) {
      heads.add(pool.submit(() -> visiblePutId(r.key(), "s3://" + bucket + "/" + r.key())));
    }
    List<String> shownIds = await(heads, "s3://" + bucket + "/" + raced.get(0).key());
    for (int k = 0; k < raced.size(); k++) {
      Raced r = raced.get(k);
      String location = "s3://" + bucket + "/" + r.key();
      String now = shownIds.get(k);
      int shown = now == null ? -1 : r.ids().indexOf(now);
      if (r.winner() >= 0 && shown >= 0 && shown != r.winner()) {
        throw new ConditionalWritesUnsupportedException(
            ConditionalWriteProbe.notAtomic(target, location, 2, r.race()), null);
      }
      if (shown < 0) {
        throw new ObjectStoreException("Cannot check conditional writes at " + endpoint
            + " with " + location + ": " + (r.winner() >= 0 ? 1 : 0) + " of "
            + ConditionalWriteProbe.RACERS + " racing create-only PUTs succeeded but the object "
            + (now == null ? "is not there" : "carries put id '" + now + "', none of theirs"),
            false, null);
      }
    }
  }

  /**
   * The results of {@code futures}, in order, once all are done.
   *
   * @throws IOException the first failure among them (an unexpected one wrapped)
   * @throws ObjectStoreInterruptedException if this thread is interrupted
   */
  private <T> List<T> await(List<Future<T>> futures, String location) throws IOException {
    List<T> out = new ArrayList<>();
    IOException failed = null;
    for (Future<T> f : futures) {
      try {
        out.add(f.get());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new ObjectStoreInterruptedException("Cannot check conditional writes at "
            + endpoint + " with " + location + ": interrupted", e);
      } catch (ExecutionException e) {
        Throwable c = e.getCause();
        if (failed == null) {
          failed = c instanceof IOException io ? io : new ObjectStoreException("Cannot check "
              + "conditional writes at " + endpoint + " with " + location + ": " + c, false, c);
        }
        out.add(null);
      }
    }
    if (failed != null) {
      throw failed;
    }
    return out;
  }

  /**
   * One racing writer's create-only PUT: {@link Answer#WON} on 200, {@link Answer#REFUSED} on
   * 412; a 409 ConditionalRequestConflict (another conditional write in flight) is retried.
   */
  private Answer racingCreate(String raceKey, ObjectBody body, String putId) throws IOException {
    String location = "s3://" + bucket + "/" + raceKey;
    for (int attempt = 1; ; attempt++) {
      try {
        store.upload(raceKey, body, b -> b.ifNoneMatch("*").metadata(Map.of(PUT_ID, putId)));
        return Answer.WON;
      } catch (SdkServiceException e) {
        if (e.statusCode() == 412) {
          return Answer.REFUSED;
        }
        if (e.statusCode() == 409 && attempt < CONFLICT_ATTEMPTS) {
          store.sleep(ThreadLocalRandom.current().nextLong(CONFLICT_BACKOFF_MS << attempt),
              location);
          continue;
        }
        throw S3Errors.classify("create (racing, to check conditional writes)", location,
            endpoint, credentialsOrigin, e);
      } catch (SdkException e) {
        throw S3Errors.classify("create (racing, to check conditional writes)", location,
            endpoint, credentialsOrigin, e);
      }
    }
  }

  /**
   * {@link #headPutId}, repeated with backoff while it misses (at most {@link
   * S3ObjectStore#LOOKUP_ATTEMPTS} HEADs, about 4.5 s): the probe only looks up objects it just
   * wrote, which a store whose reads lag behind its writes shows late.
   */
  private String visiblePutId(String probeFullKey, String location) throws IOException {
    String id = headPutId(probeFullKey, location);
    for (int a = 2; id == null && a <= S3ObjectStore.LOOKUP_ATTEMPTS; a++) {
      store.sleep(S3ObjectStore.lookupDelay(a), location);
      id = headPutId(probeFullKey, location);
    }
    return id;
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
        throw S3Errors.classify("create", "s3://" + bucket + "/" + probeFullKey, endpoint,
            credentialsOrigin, e);
      } catch (SdkException e) {
        throw S3Errors.classify("create", "s3://" + bucket + "/" + probeFullKey, endpoint,
            credentialsOrigin, e);
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
            location, endpoint, credentialsOrigin, e);
      } catch (SdkException e) {
        throw S3Errors.classify("create (a second time, to check conditional writes)",
            location, endpoint, credentialsOrigin, e);
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
      throw S3Errors.classify("head", location, endpoint, credentialsOrigin, e);
    } catch (SdkException e) {
      throw S3Errors.classify("head", location, endpoint, credentialsOrigin, e);
    }
  }

  /**
   * Deletes the probe objects with one DeleteObjects. A failure (for example no
   * s3:DeleteObject) is a WARN if the first probe object was created, else a DEBUG (they
   * probably do not exist).
   */
  private void deleteProbe(List<String> keys, String location, boolean created) {
    List<ObjectIdentifier> ids = keys.stream()
        .map(k -> ObjectIdentifier.builder().key(k).build()).toList();
    String what = keys.size() == 1 ? location
        : location + " (and its " + (keys.size() - 1) + " racing siblings " + location
            + "-race<n>)";
    try {
      DeleteObjectsResponse r = s3.deleteObjects(b -> b.bucket(bucket)
          .delete(Delete.builder().objects(ids).quiet(true).build())
          .overrideConfiguration(store::withListener));
      if (created && r.hasErrors() && !r.errors().isEmpty()) {
        S3Error err = r.errors().get(0);
        warnProbeLeft(what, err.code() + " " + err.message());
      }
    } catch (SdkException e) {
      if (created) {
        warnProbeLeft(what, S3Errors.classify("delete", location, endpoint, credentialsOrigin, e)
            .getMessage());
      } else {
        LOG.debug("Cannot delete {} after a failed probe", location, e);
      }
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
