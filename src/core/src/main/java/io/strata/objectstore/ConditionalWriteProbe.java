// SPDX-License-Identifier: Apache-2.0
package io.strata.objectstore;

import java.io.IOException;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.ExecutionException;

/**
 * Proves, once per JVM, S3 endpoint and bucket, that the server's create-only PUT ({@code
 * If-None-Match: *}) is honoured and atomic, before Strata's first create-only write to that
 * bucket. An S3-compatible server that ignores the header answers 200 and overwrites; one whose
 * check and write are not atomic (S3Mock 4.11 lets 1 to 8 of 8 racing writers win) refuses a
 * second PUT sent after the first yet lets several racing PUTs win. Either would let a zombie
 * task replace a committed version object or two drivers both write {@code offsets/N}.
 *
 * <p>The probe itself ({@link S3ObjectStore}) writes a tiny object under a reserved key ending in
 * {@link #PREFIX}{@code <uuid>} (see docs/format.md, "Reserved keys"), PUTs it create-only a
 * second time and checks with a HEAD that the object is unchanged. Then it runs {@value #RACES}
 * races, {@code RACES / ROUNDS} at once in each of {@value #ROUNDS} rounds: in a race {@value
 * #RACERS} threads PUT one fresh key {@code <probe key>-race<n>} create-only at once; at most one
 * may get 200 and the others 412. Then one HEAD per raced key, all at once, must show its race's
 * winner's object. Last, one DeleteObjects removes every probe object (best effort). On a server
 * that honours the header that is {@value #REQUESTS} requests in 5 + {@value #ROUNDS} round
 * trips: PUT 200, PUT 412, HEAD 200, per race {@value #RACERS} PUTs (one 200, the rest 412), a HEAD
 * 200 per race, then DELETE 200 (a store whose reads lag behind its writes may take a few more
 * HEADs, and waits out its lag twice). Writes after a verified probe cost nothing more.
 *
 * <p>A race cannot prove atomicity, only catch its absence: one race caught S3Mock 4.11 in about
 * {@value #MEASURED_CATCH_PERCENT}% of tries (43 to 63% in runs of 30, with 8 or 16 writers and
 * bodies of 50 B to 64 KiB alike, on a loaded 2-core machine), so {@value #RACES} races let a
 * server like it pass in roughly 1 probe in 8,000 (at 43%) to 65,000 (at 50%); {@code
 * ConditionalWriteProbeRaceIT} refuses it in every one of its fresh probes. The cost is paid once
 * per JVM and bucket.
 *
 * <p>This class keeps the verdicts: a JVM-wide map from (endpoint, bucket) to a future, so that
 * concurrent first writers wait on one probe instead of each sending their own. A verdict
 * (supported, or {@link ConditionalWritesUnsupportedException}) is kept until the JVM exits; a
 * probe that could not decide (403, the bucket does not exist, S3 unavailable after the SDK's
 * retries, an interrupt) is forgotten, so the next create-only write probes again. Thread-safe.
 */
public final class ConditionalWriteProbe {
  /**
   * The reserved key prefix of probe objects, relative to where the probe writes (see {@link
   * S3ObjectStore}): {@code _strata/probe/<uuid>}.
   */
  public static final String PREFIX = "_strata/probe/";

  /** Concurrent create-only PUTs of one fresh key per race. */
  public static final int RACERS = 8;

  /** Races per probe, each for its own fresh key; a multiple of {@link #ROUNDS}. */
  public static final int RACES = 16;

  /** Rounds per probe: each runs {@code RACES / ROUNDS} races at once. */
  public static final int ROUNDS = 4;

  /** Share of single races that caught S3Mock 4.11 when last measured, percent. */
  static final int MEASURED_CATCH_PERCENT = 50;

  /**
   * Requests of one probe on a server that honours conditional writes and shows a write at once:
   * PUT, PUT, HEAD, then per race {@value #RACERS} PUTs and a HEAD, then one DELETE.
   */
  public static final int REQUESTS = 3 + RACES * (RACERS + 1) + 1;

  /** One endpoint and bucket (the endpoint as {@link S3ClientFactory#describeEndpoint} prints it). */
  record Target(String endpoint, String bucket) {
    Target {
      Objects.requireNonNull(endpoint, "endpoint");
      Objects.requireNonNull(bucket, "bucket");
    }
  }

  /** The probe's requests; throws {@link ConditionalWritesUnsupportedException} on a verdict. */
  @FunctionalInterface
  interface Probe {
    void run() throws IOException;
  }

  /** Verdicts and probes in flight; a failed future here always holds a verdict. */
  private static final ConcurrentMap<Target, CompletableFuture<Void>> VERDICTS =
      new ConcurrentHashMap<>();

  private ConditionalWriteProbe() { }

  /**
   * Returns once {@code target} is known to honour conditional writes, running {@code probe} on
   * the calling thread if no verdict is known and no other thread is probing; otherwise waits for
   * that thread's probe.
   *
   * @throws ConditionalWritesUnsupportedException if the server ignores conditional writes (now
   *     or in an earlier probe of this JVM)
   * @throws ObjectStoreInterruptedException if the calling thread is interrupted while waiting
   * @throws IOException whatever an inconclusive probe of this thread threw (not kept)
   */
  static void ensure(Target target, Probe probe) throws IOException {
    while (true) {
      CompletableFuture<Void> mine = new CompletableFuture<>();
      CompletableFuture<Void> known = VERDICTS.putIfAbsent(target, mine);
      if (known == null) {
        runProbe(target, probe, mine);
        return;
      }
      try {
        known.get();
        return;
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new ObjectStoreInterruptedException("Cannot use S3 endpoint " + target.endpoint()
            + " bucket " + target.bucket() + ": interrupted while waiting for the check that "
            + "the server's create-only PUT is honoured and atomic", e);
      } catch (ExecutionException e) {
        if (e.getCause() instanceof ConditionalWritesUnsupportedException verdict) {
          // A new exception per caller: this thread's stack, the verdict as cause.
          throw new ConditionalWritesUnsupportedException(verdict.getMessage(), verdict);
        }
        // The other thread's probe could not decide and was forgotten: try again ourselves.
      }
    }
  }

  private static void runProbe(Target target, Probe probe, CompletableFuture<Void> mine)
      throws IOException {
    try {
      probe.run();
      mine.complete(null);
    } catch (ConditionalWritesUnsupportedException verdict) {
      mine.completeExceptionally(verdict); // kept: every later write fails at once
      throw verdict;
    } catch (IOException | RuntimeException | Error e) {
      VERDICTS.remove(target, mine); // not a verdict: the next writer probes again
      mine.completeExceptionally(e);
      throw e;
    }
  }

  /**
   * Forgets the verdict for (endpoint, bucket), so the next create-only write probes again. For
   * tests that probe one server many times.
   */
  static void forget(String endpoint, String bucket) {
    VERDICTS.remove(new Target(endpoint, bucket));
  }

  /**
   * Records the verdict "supported" for (endpoint, bucket) without a probe. Only for tests that
   * exercise other behaviour against a server known to fail the racing rounds (S3Mock 4.11).
   */
  static void assumeSupported(String endpoint, String bucket) {
    VERDICTS.put(new Target(endpoint, bucket), CompletableFuture.completedFuture(null));
  }

  /** True if a verdict "supported" is known for (endpoint, bucket). For tests. */
  static boolean verified(String endpoint, String bucket) {
    CompletableFuture<Void> f = VERDICTS.get(new Target(endpoint, bucket));
    return f != null && f.isDone() && !f.isCompletedExceptionally();
  }

  /**
   * The message of the verdict "drops user metadata": the probe object came back without the
   * {@code x-amz-meta-strata-put-id} header its PUT sent. Strata needs that header to tell its
   * own retried create-only PUT (applied, then answered 412 on the SDK's retry) from another
   * writer's object.
   *
   * @param location {@code s3://bucket/key} of the probe object
   */
  static String metadataDropped(Target target, String location) {
    return "Cannot use S3 endpoint " + target.endpoint() + " bucket " + target.bucket()
        + " for Strata: " + location + " was created with the user metadata header "
        + "x-amz-meta-" + S3ObjectStore.PUT_ID + " but a HEAD of it returns no such metadata; "
        + "Strata needs user metadata to tell its own retried create-only PUT from another "
        + "writer's object. Nothing else was written. Use a server or version that keeps "
        + "x-amz-meta-* headers (see docs/operations.md#a-server-that-ignores-conditional-writes)";
  }

  /**
   * The message of the verdict "not atomic": more than one of {@value #RACERS} racing create-only
   * PUTs of one fresh key won.
   *
   * @param location {@code s3://bucket/key} of the raced object
   * @param won how many writers won (200, or 412 with their object in place)
   * @param race the race (1 to {@value #RACES}) that saw it
   */
  static String notAtomic(Target target, String location, int won, int race) {
    return "Cannot use S3 endpoint " + target.endpoint() + " bucket " + target.bucket()
        + " for Strata: " + won + " of " + RACERS + " racing create-only PUTs (If-None-Match: *)"
        + " of the new key " + location + " won (race " + race + " of " + RACES
        + "); exactly 1 must win and the others get 412 Precondition Failed. This server's"
        + " create-only write is not atomic (it refuses a PUT sent after another, not one racing"
        + " it), which Strata needs so that a committed object is never overwritten (a zombie or"
        + " retried task could replace a committed state version, and two drivers on one"
        + " checkpoint could both write offsets/N). Nothing else was written. Use a server or"
        + " version whose conditional writes are atomic (see"
        + " docs/operations.md#a-server-that-ignores-conditional-writes)";
  }

  /**
   * The message of a verdict: names the endpoint, the bucket, the probe object and what was
   * expected; never credentials.
   *
   * @param location {@code s3://bucket/key} of the probe object
   * @param replacedDespite412 true if the server answered 412 but the object was replaced
   */
  static String unsupported(Target target, String location, boolean replacedDespite412) {
    String what = replacedDespite412
        ? "a second create-only PUT (If-None-Match: *) of " + location + " was answered 412 "
            + "Precondition Failed but replaced the object anyway"
        : "a second create-only PUT (If-None-Match: *) of " + location + " succeeded instead of "
            + "failing with 412 Precondition Failed";
    return "Cannot use S3 endpoint " + target.endpoint() + " bucket " + target.bucket()
        + " for Strata: " + what + "; this server ignores conditional writes, which Strata needs "
        + "so that a committed object is never overwritten (a zombie or retried task could "
        + "replace a committed state version, and two drivers on one checkpoint could both "
        + "write offsets/N). Nothing else was written. Use a server or version that supports "
        + "conditional writes (see docs/operations.md#a-server-that-ignores-conditional-writes)";
  }
}
