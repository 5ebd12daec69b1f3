// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import java.util.Objects;

/**
 * Which state store: the operator, partition and store name (Spark's {@code StateStoreId} minus
 * the checkpoint root), and where its objects live.
 *
 * @param operatorId Spark operator id
 * @param partitionId shuffle partition
 * @param storeName Spark store name ({@code default}, or e.g. {@code left-keyToNumValues})
 * @param location the store's checkpoint location (for messages), e.g. {@code
 *     s3://bucket/ckpt/state/0/3}
 */
public record StoreIdentity(long operatorId, int partitionId, String storeName, String location) {
  public StoreIdentity {
    Objects.requireNonNull(storeName, "storeName");
    Objects.requireNonNull(location, "location");
  }

  /** {@code <operatorId>/<partitionId>/<storeName>}, as written in manifests. */
  public String id() {
    return operatorId + "/" + partitionId + "/" + storeName;
  }

  @Override
  public String toString() {
    return "store " + id() + " at " + location;
  }
}
