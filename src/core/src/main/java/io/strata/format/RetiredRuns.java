// SPDX-License-Identifier: Apache-2.0
package io.strata.format;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;

/**
 * The query runs of one store whose epoch claims garbage collection retired (checkpoint format
 * 1): the body of {@link StoreLayout#retiredRuns}, written once with a create-only PUT. Each
 * query run leaves a claim and a marker under {@code runs/}; without collection they would grow
 * by two objects per run forever. The run that holds the newest claim records every older run's
 * id here, then deletes their claims and markers: one object (and the newest claim's pair)
 * remains, and a later list replaces an earlier one. An executor of a retired run that opens a
 * new instance of the store finds no marker of its run, and finds its run id here instead of
 * claiming a new epoch (which would let a zombie supersede the live run): it is fenced. See
 * docs/format.md, "Query runs, epochs and generations".
 *
 * <p>JSON, one object: {@code {"formatVersion": 1, "storeId": ..., "throughEpoch": n,
 * "runIds": [...], "createdAtMillis": t}}. A reader refuses a greater format version. The list
 * grows by one run id (at most 64 characters) per retired run.
 *
 * @param storeId {@code <operatorId>/<partitionId>/<storeName>}
 * @param throughEpoch every run with an epoch up to this one is listed, at least 1
 * @param runIds the retired runs' ids (Spark's {@code sql.streaming.runId}), sorted, distinct
 * @param createdAtMillis the writer's clock, for people; never used for decisions
 */
public record RetiredRuns(String storeId, long throughEpoch, List<String> runIds,
    long createdAtMillis) {
  /** The format version this build writes and the greatest it reads. */
  public static final int FORMAT_VERSION = 1;
  private static final ObjectMapper MAPPER = new ObjectMapper();

  /** Validates the store id, the epoch and every run id; sorts and deduplicates the ids. */
  public RetiredRuns {
    Objects.requireNonNull(storeId, "storeId");
    Set<String> sorted = new TreeSet<>();
    for (String id : runIds) {
      StoreLayout.runMarker(throughEpoch, id); // validates both
      sorted.add(id);
    }
    StoreLayout.retiredRuns(throughEpoch);
    runIds = List.copyOf(sorted);
  }

  /** True if {@code runId} is retired. */
  public boolean contains(String runId) {
    return java.util.Collections.binarySearch(runIds, runId) >= 0;
  }

  /** The list as the bytes of its object. */
  public byte[] encode() {
    ObjectNode root = MAPPER.createObjectNode();
    root.put("formatVersion", FORMAT_VERSION);
    root.put("storeId", storeId);
    root.put("throughEpoch", throughEpoch);
    ArrayNode ids = root.putArray("runIds");
    runIds.forEach(ids::add);
    root.put("createdAtMillis", createdAtMillis);
    return root.toString().getBytes(StandardCharsets.UTF_8);
  }

  /**
   * Decodes a list.
   *
   * @throws ManifestFormatException if the bytes are not a list this build can read
   */
  public static RetiredRuns decode(byte[] bytes) throws ManifestFormatException {
    JsonNode root;
    try {
      root = MAPPER.readTree(bytes);
    } catch (java.io.IOException e) {
      throw new ManifestFormatException("retired-runs list is not valid JSON: "
          + e.getMessage(), e);
    }
    if (root == null || !root.isObject()) {
      throw new ManifestFormatException("retired-runs list is not a JSON object", null);
    }
    long fv = number(root, "formatVersion");
    if (fv > FORMAT_VERSION || fv < 1) {
      throw new ManifestFormatException("retired-runs list format version " + fv + "; this "
          + "build reads format versions 1 to " + FORMAT_VERSION, null);
    }
    JsonNode store = root.get("storeId");
    JsonNode ids = root.get("runIds");
    if (store == null || !store.isTextual() || ids == null || !ids.isArray()) {
      throw new ManifestFormatException("retired-runs list lacks storeId or runIds", null);
    }
    List<String> runIds = new ArrayList<>();
    for (JsonNode id : ids) {
      if (!id.isTextual()) {
        throw new ManifestFormatException("retired-runs list has a run id that is not a "
            + "string", null);
      }
      runIds.add(id.asText());
    }
    try {
      return new RetiredRuns(store.asText(), number(root, "throughEpoch"), runIds,
          number(root, "createdAtMillis"));
    } catch (IllegalArgumentException e) {
      throw new ManifestFormatException("invalid retired-runs list: " + e.getMessage(), e);
    }
  }

  private static long number(JsonNode root, String field) throws ManifestFormatException {
    JsonNode n = root.get(field);
    if (n == null || !n.isIntegralNumber()) {
      throw new ManifestFormatException("retired-runs list field '" + field + "' missing or "
          + "not an integer", null);
    }
    return n.asLong();
  }
}
