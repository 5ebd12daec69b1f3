// SPDX-License-Identifier: Apache-2.0
package io.strata.format;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;
import java.util.Objects;

/**
 * A query run's claim of an epoch in one store (layout 2, checkpoint format 1): the body of
 * {@link StoreLayout#runClaim}, written once with a create-only PUT. The epoch orders Spark's
 * query runs (whose run ids are random UUIDs): a run's version objects record its epoch in their
 * manifest (a version re-committed by a later run is a new generation, {@link
 * StoreLayout#generationVersionObject}), and a load takes the greatest epoch of a version.
 * See docs/format.md, "Query runs and epochs".
 *
 * <p>JSON, one object: {@code {"formatVersion": 1, "storeId": ..., "epoch": n, "runId": ...,
 * "createdAtMillis": t, "loadsVersion": v}}. A reader refuses a greater format version;
 * {@code loadsVersion} is optional (claims of builds before 0.4 lack it: -1).
 *
 * @param storeId {@code <operatorId>/<partitionId>/<storeName>}
 * @param epoch the claimed epoch, at least 1
 * @param runId Spark's query run id ({@code sql.streaming.runId})
 * @param createdAtMillis the claimer's clock, for people; never used for decisions
 * @param loadsVersion the version the run's load that claimed the epoch loads (its first in
 *     the store: the rewind point after a rewind; for a store opened empty, the version it
 *     stands at), which the garbage collection of an earlier run's instances keeps, with the
 *     spill deltas of the version after it, while the claim is listed (docs/format.md, "What a
 *     stale or concurrent instance can delete"); -1 if unknown
 */
public record RunClaim(String storeId, long epoch, String runId, long createdAtMillis,
    long loadsVersion) {
  /** The format version this build writes and the greatest it reads. */
  public static final int FORMAT_VERSION = 1;
  private static final ObjectMapper MAPPER = new ObjectMapper();

  /**
   * @throws IllegalArgumentException if {@code epoch} or {@code runId} is not valid in a key,
   *     or {@code loadsVersion} is below -1
   */
  public RunClaim {
    Objects.requireNonNull(storeId, "storeId");
    Objects.requireNonNull(runId, "runId");
    StoreLayout.runMarker(epoch, runId); // validates both
    if (loadsVersion < -1) {
      throw new IllegalArgumentException("loadsVersion " + loadsVersion + " is below -1");
    }
  }

  /** A claim whose load's version is unknown ({@code loadsVersion} -1). */
  public RunClaim(String storeId, long epoch, String runId, long createdAtMillis) {
    this(storeId, epoch, runId, createdAtMillis, -1);
  }

  /** The claim as the bytes of its object. */
  public byte[] encode() {
    ObjectNode root = MAPPER.createObjectNode();
    root.put("formatVersion", FORMAT_VERSION);
    root.put("storeId", storeId);
    root.put("epoch", epoch);
    root.put("runId", runId);
    root.put("createdAtMillis", createdAtMillis);
    if (loadsVersion >= 0) {
      root.put("loadsVersion", loadsVersion);
    }
    return root.toString().getBytes(StandardCharsets.UTF_8);
  }

  /**
   * Decodes a claim.
   *
   * @throws ManifestFormatException if the bytes are not a claim this build can read
   */
  public static RunClaim decode(byte[] bytes) throws ManifestFormatException {
    JsonNode root;
    try {
      root = MAPPER.readTree(bytes);
    } catch (java.io.IOException e) {
      throw new ManifestFormatException("run claim is not valid JSON: " + e.getMessage(), e);
    }
    if (root == null || !root.isObject()) {
      throw new ManifestFormatException("run claim is not a JSON object", null);
    }
    long fv = number(root, "formatVersion");
    if (fv > FORMAT_VERSION || fv < 1) {
      throw new ManifestFormatException("run claim format version " + fv + "; this build reads "
          + "format versions 1 to " + FORMAT_VERSION, null);
    }
    JsonNode store = root.get("storeId");
    JsonNode run = root.get("runId");
    if (store == null || !store.isTextual() || run == null || !run.isTextual()) {
      throw new ManifestFormatException("run claim lacks storeId or runId", null);
    }
    try {
      return new RunClaim(store.asText(), number(root, "epoch"), run.asText(),
          number(root, "createdAtMillis"), root.has("loadsVersion")
              ? number(root, "loadsVersion") : -1);
    } catch (IllegalArgumentException e) {
      throw new ManifestFormatException("invalid run claim: " + e.getMessage(), e);
    }
  }

  private static long number(JsonNode root, String field) throws ManifestFormatException {
    JsonNode n = root.get(field);
    if (n == null || !n.isIntegralNumber()) {
      throw new ManifestFormatException("run claim field '" + field + "' missing or not an "
          + "integer", null);
    }
    return n.asLong();
  }
}
