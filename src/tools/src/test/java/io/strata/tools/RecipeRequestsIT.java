// SPDX-License-Identifier: Apache-2.0
package io.strata.tools;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.testkit.S3Relay;
import io.strata.testkit.S3ProxyServer;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 44: the S3 requests of docs/operations.md's recipes, measured, not derived. A checkpoint
 * of 8 stores (versions 1 to 6 each, no base snapshot, batches 0 to 5 committed) is put on
 * S3Proxy; then each recipe's command runs through a counting relay
 * ({@link S3Relay} without faults) in front of the same server, and the requests it sent are
 * counted by kind. The table is printed and written to {@code
 * target/recipe-requests.md}; the test asserts what the docs promise of each (the copy within
 * one server sends no GET of state, one request per object after its listing), not numbers.
 */
class RecipeRequestsIT {
  private static final int STORES = 8;
  @TempDir Path tmp;

  /** Settings for a tool run against {@code endpoint}. */
  private static List<String> settings(URI endpoint) {
    return List.of("--conf", "spark.hadoop.fs.s3a.endpoint=" + endpoint,
        "--conf", "spark.hadoop.fs.s3a.access.key=" + S3ProxyServer.ACCESS_KEY,
        "--conf", "spark.hadoop.fs.s3a.secret.key=" + S3ProxyServer.SECRET_KEY,
        "--conf", "spark.hadoop.fs.s3a.path.style.access=true");
  }

  private static ToolFixtures.Run tool(URI endpoint, String... args) {
    List<String> all = new ArrayList<>(List.of(args));
    all.addAll(settings(endpoint));
    ToolFixtures.Run r = ToolFixtures.tool(all.toArray(new String[0]));
    assertEquals(StrataTool.EXIT_OK, r.code(), r::toString);
    return r;
  }

  /** Runs {@code args} through the relay; returns its requests by kind. */
  private static Map<String, Integer> measure(S3Relay relay, String... args) {
    int before = relay.seen().size();
    tool(relay.endpoint(), args);
    Map<String, Integer> kinds = new TreeMap<>();
    for (S3Relay.Seen s : relay.seen().subList(before, relay.seen().size())) {
      S3Relay.Request r = s.request();
      // A CopyObject is a PUT too (the relay sees no x-amz-copy-source): "PUT" counts both.
      String kind = r.method().equals("GET") && (r.key().isEmpty() || r.query().contains(
          "list-type")) ? "LIST" : r.method();
      kinds.merge(kind, 1, Integer::sum);
    }
    return kinds;
  }

  @Test
  void theRecipesRequestsAreMeasured() throws Exception {
    try (S3ProxyServer server = S3ProxyServer.start(tmp.resolve("s3"), Map.of());
        S3Relay relay = new S3Relay(server.endpoint(), (b, k) -> { })) {
      server.createBucket("bkt");
      Path local = ToolFixtures.checkpoint(tmp, STORES);
      try (var client = server.client(); var files = Files.walk(local)) {
        for (Path f : files.filter(Files::isRegularFile).toList()) {
          client.putObject(b -> b.bucket("bkt").key("ckpt/" + local.relativize(f)
              .toString().replace('\\', '/')), f);
        }
      }
      Map<String, Map<String, Integer>> table = new java.util.LinkedHashMap<>();
      table.put("strata describe s3://bkt/ckpt", measure(relay, "describe", "s3://bkt/ckpt"));
      table.put("strata savepoint create s3://bkt/ckpt --name before-deploy",
          measure(relay, "savepoint", "create", "s3://bkt/ckpt", "--name", "before-deploy",
              "--idle-minutes", "0"));
      table.put("strata copy s3://bkt/ckpt s3://bkt/rollback --savepoint before-deploy",
          measure(relay, "copy", "s3://bkt/ckpt", "s3://bkt/rollback", "--savepoint",
              "before-deploy"));
      table.put("strata copy s3://bkt/ckpt s3://bkt/fork --new-query-id",
          measure(relay, "copy", "s3://bkt/ckpt", "s3://bkt/fork", "--new-query-id"));
      table.put("strata rewind s3://bkt/ckpt --to-batch 4 --force",
          measure(relay, "rewind", "s3://bkt/ckpt", "--to-batch", "4", "--force"));
      table.put("strata verify s3://bkt/rollback", measure(relay, "verify", "s3://bkt/rollback"));

      StringBuilder md = new StringBuilder("| command (" + STORES + " stores) | requests | by "
          + "kind |\n|---|---|---|\n");
      table.forEach((cmd, kinds) -> md.append("| `").append(cmd).append("` | ")
          .append(kinds.values().stream().mapToInt(Integer::intValue).sum()).append(" | ")
          .append(kinds).append(" |\n"));
      Path out = Path.of("target", "recipe-requests.md");
      Files.createDirectories(out.getParent());
      Files.writeString(out, md);
      System.out.println(md);

      Map<String, Integer> copy = table.get(
          "strata copy s3://bkt/ckpt s3://bkt/rollback --savepoint before-deploy");
      assertTrue(copy.getOrDefault("GET", 0) <= 2 * STORES + 2,
          "a server-side copy reads manifests and Spark's savepoint record, no state: " + copy);
    }
  }
}
