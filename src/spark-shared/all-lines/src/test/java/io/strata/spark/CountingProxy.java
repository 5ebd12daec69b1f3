// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import io.strata.testkit.S3Relay;
import java.io.IOException;
import java.net.URI;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.regex.Pattern;

/**
 * Counts the requests of any S3 client (Strata's SDK client, Hadoop S3A) the same way: a view of
 * the tests' {@link S3Relay} in front of an S3-compatible server, forwarding everything
 * unchanged, as the kinds Strata counts. Path-style addressing only.
 */
final class CountingProxy implements AutoCloseable {
  /** One request: when its headers arrived, its method and its decoded object key or prefix. */
  record Request(long nanos, String method, String key, boolean list, boolean copy) {
    /** The S3 operation kind as Strata counts it (approximate for S3A's multipart calls). */
    String kind() {
      return switch (method) {
        case "PUT" -> copy ? "COPY" : "PUT";
        case "HEAD" -> "HEAD";
        case "DELETE" -> "DELETE";
        case "POST" -> key.isEmpty() ? "DELETE" : "POST"; // DeleteObjects is POST /bucket?delete
        default -> list ? "LIST" : "GET";
      };
    }
  }

  /** Keys of a state store's own objects: state/op/partition/..., except Spark's _metadata. */
  private static final Pattern STATE_STORE =
      Pattern.compile(".*(^|/)state/\\d+/\\d+(/(?!_metadata(/|$)).*|/?)$");

  private final S3Relay relay;
  private final List<Request> requests = new CopyOnWriteArrayList<>();

  CountingProxy(URI upstream) throws IOException {
    this.relay = new S3Relay(upstream, null);
    relay.reuseUpstream(true);
    relay.listener(r -> {
      boolean list = r.isList() && r.hasParam("list-type");
      requests.add(new Request(r.nanos(), r.method(), list ? r.param("prefix") : r.key(), list,
          r.copy()));
    });
  }

  URI endpoint() {
    return relay.endpoint();
  }

  /** Every request so far, in arrival order: a live list (it grows as requests arrive). */
  List<Request> requests() {
    return requests;
  }

  /** True for objects a state store writes itself (not Spark's checkpoint files). */
  static boolean isStateStoreKey(String key) {
    return STATE_STORE.matcher(key).matches();
  }

  @Override
  public void close() throws IOException {
    relay.close();
  }
}
