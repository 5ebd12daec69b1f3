// SPDX-License-Identifier: Apache-2.0
package io.strata.config;

import io.strata.objectstore.S3Settings;
import java.util.function.Supplier;

/**
 * The S3 settings of a {@link StrataConf}, resolved on first use: only a store or checkpoint on
 * S3 reads and checks them, so S3A settings a cluster sets for other jobs (a provider list naming
 * static keys that are not set, say) never stop a query whose checkpoint is not on S3. A
 * successful resolution is kept; a failed one is tried again on the next call and fails the
 * same way (the settings do not change), so every caller gets the error, naming the key.
 * Thread-safe: concurrent first calls may each resolve, and one result is kept.
 */
public final class S3Source {
  private final Supplier<S3Settings> resolve;
  private volatile S3Settings resolved;

  /**
   * A source that resolves with {@code resolve}.
   *
   * @param resolve reads and validates the S3 settings; throws {@link IllegalArgumentException}
   *     naming the key for a bad one
   */
  S3Source(Supplier<S3Settings> resolve) {
    this.resolve = resolve;
  }

  /**
   * The S3 settings, resolved on the first call.
   *
   * @throws IllegalArgumentException naming the key, the value (unless secret) and what is
   *     allowed, for the first bad S3 setting or credentials source
   */
  public S3Settings get() {
    S3Settings s = resolved;
    if (s == null) {
      s = resolve.get();
      resolved = s;
    }
    return s;
  }

  /** Never resolves, never prints settings: {@code S3Source[resolved]} or {@code [unresolved]}. */
  @Override
  public String toString() {
    return "S3Source[" + (resolved != null ? "resolved" : "unresolved") + "]";
  }
}
