// SPDX-License-Identifier: Apache-2.0
package io.strata.tools;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.testkit.S3ProxyServer;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.services.s3.model.ListObjectsV2Request;
import software.amazon.awssdk.services.s3.model.S3Object;

/**
 * {@code strata copy} to a bucket on another endpoint than the source's: the destination is
 * opened with its own bucket's settings ({@code fs.s3a.bucket.<bucket>.endpoint}), not the
 * source's. The source is a local checkpoint ({@link ToolFixtures#mergedCheckpoint}) whose
 * settings name an endpoint where nothing listens; the destination bucket's per-bucket endpoint
 * is a real S3 server (S3Proxy, started by the test, about 5 s). Then a copy within that server
 * (one client for both): server-side, the same objects, and the copy verifies.
 */
class CopyAcrossEndpointsIT {
  @TempDir Path tmp;

  @Test
  void theDestinationIsWrittenThroughItsOwnBucketsEndpoint() throws Exception {
    try (S3ProxyServer server = S3ProxyServer.start(tmp.resolve("s3"), Map.of())) {
      server.createBucket("fork-bucket");
      Path source = ToolFixtures.mergedCheckpoint(tmp);
      ToolFixtures.Run copy = ToolFixtures.tool("copy", source.toUri().toString(),
          "s3://fork-bucket/fork",
          "--conf", "spark.hadoop.fs.s3a.endpoint=http://127.0.0.1:9", // nothing listens
          "--conf", "spark.hadoop.fs.s3a.bucket.fork-bucket.endpoint=" + server.endpoint(),
          "--conf", "spark.hadoop.fs.s3a.access.key=" + S3ProxyServer.ACCESS_KEY,
          "--conf", "spark.hadoop.fs.s3a.secret.key=" + S3ProxyServer.SECRET_KEY,
          "--conf", "spark.hadoop.fs.s3a.path.style.access=true",
          "--conf", "spark.sql.streaming.stateStore.strata.s3.maxAttempts=1");
      assertEquals(StrataTool.EXIT_OK, copy.code(), copy::toString);
      List<String> keys = server.client().listObjectsV2Paginator(ListObjectsV2Request.builder()
          .bucket("fork-bucket").prefix("fork/").build()).contents().stream()
          .map(S3Object::key).toList();
      assertTrue(keys.contains("fork/commits/21")
          && keys.stream().anyMatch(k -> k.startsWith("fork/state/0/0/v/")), keys::toString);

      // Within one server and one set of settings the copy is server-side: a CopyObject per
      // object, no byte through the tool; the copy verifies (every file's checksum).
      String[] settings = {"--conf", "spark.hadoop.fs.s3a.endpoint=" + server.endpoint(),
          "--conf", "spark.hadoop.fs.s3a.access.key=" + S3ProxyServer.ACCESS_KEY,
          "--conf", "spark.hadoop.fs.s3a.secret.key=" + S3ProxyServer.SECRET_KEY,
          "--conf", "spark.hadoop.fs.s3a.path.style.access=true"};
      List<String> args = new java.util.ArrayList<>(List.of("copy", "s3://fork-bucket/fork",
          "s3://fork-bucket/again", "--json"));
      args.addAll(List.of(settings));
      ToolFixtures.Run again = ToolFixtures.tool(args.toArray(new String[0]));
      assertEquals(StrataTool.EXIT_OK, again.code(), again::toString);
      com.fasterxml.jackson.databind.JsonNode j = new com.fasterxml.jackson.databind.ObjectMapper()
          .readTree(again.out());
      assertEquals(j.path("objects").asInt(), j.path("serverSideCopies").asInt(), again.out());
      assertEquals(0, j.path("bytesThroughTheTool").asLong(), again.out());
      List<String> copied = server.client().listObjectsV2Paginator(ListObjectsV2Request.builder()
          .bucket("fork-bucket").prefix("again/").build()).contents().stream()
          .map(o -> o.key().substring("again/".length())).toList();
      assertEquals(keys.stream().map(k -> k.substring("fork/".length())).sorted().toList(),
          copied.stream().sorted().toList(), "the same objects");
      List<String> verify = new java.util.ArrayList<>(List.of("verify", "s3://fork-bucket/again"));
      verify.addAll(List.of(settings));
      ToolFixtures.Run verified = ToolFixtures.tool(verify.toArray(new String[0]));
      assertEquals(StrataTool.EXIT_OK, verified.code(), verified::toString);
    }
  }
}
