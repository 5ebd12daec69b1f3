// SPDX-License-Identifier: Apache-2.0
package io.strata.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import org.junit.jupiter.api.Test;

/** How the benchmark's {@link S3Gateway} classifies S3 requests by kind, scope and bytes. */
class S3GatewayTest {
  private static S3Request of(String requestLine, String... headers) throws IOException {
    StringBuilder sb = new StringBuilder(requestLine).append("\r\n");
    for (String h : headers) {
      sb.append(h).append("\r\n");
    }
    return S3Gateway.classifyForTest(sb.append("\r\n").toString());
  }

  @Test
  void putOfAStateObjectCountsItsDecodedPayload() throws IOException {
    S3Request r = of("PUT /strata-bench/run/ckpt/state/0/3/v/00000000000000000007.svo HTTP/1.1",
        "Host: 127.0.0.1:1234", "Content-Length: 1100", "x-amz-decoded-content-length: 1024");
    assertEquals(S3Kind.PUT, r.kind());
    assertTrue(r.state());
    assertEquals(1024, r.bytesUp());
  }

  @Test
  void copySourceMakesAPutACopy() throws IOException {
    S3Request r = of("PUT /b/run/ckpt/offsets/3 HTTP/1.1", "x-amz-copy-source: /b/run/ckpt/x.tmp",
        "Content-Length: 0");
    assertEquals(S3Kind.COPY, r.kind());
    assertFalse(r.state(), "offsets are Spark's log, not state");
    assertEquals(0, r.bytesUp());
  }

  @Test
  void bucketGetIsAListScopedByItsPrefix() throws IOException {
    S3Request r = of("GET /b/?list-type=2&prefix=run%2Fckpt%2Fstate%2F0%2F1%2F&delimiter=%2F "
        + "HTTP/1.1");
    assertEquals(S3Kind.LIST, r.kind());
    assertTrue(r.state());
    assertEquals(S3Kind.GET, of("GET /b/run/ckpt/commits/4 HTTP/1.1").kind());
    assertEquals(S3Kind.HEAD, of("HEAD /b/run/ckpt/state/0/0/1.zip HTTP/1.1").kind());
  }

  @Test
  void deletesIncludingMultiObjectDeleteAndMultipartPosts() throws IOException {
    assertEquals(S3Kind.DELETE, of("DELETE /b/k HTTP/1.1").kind());
    assertEquals(S3Kind.DELETE, of("POST /b/?delete HTTP/1.1", "Content-Length: 10").kind());
    assertEquals(S3Kind.PUT, of("POST /b/k?uploads HTTP/1.1").kind());
    assertEquals(S3Kind.PUT, of("POST /b/k?uploadId=abc HTTP/1.1", "Content-Length: 5").kind());
  }

  @Test
  void stateScopeIsTheCheckpointsStateDirectory() {
    assertTrue(S3Gateway.isStateKey("run/ckpt/state/0/0/v/1.svo"));
    assertTrue(S3Gateway.isStateKey("run/ckpt/state"));
    assertFalse(S3Gateway.isStateKey("run/ckpt/sources/0/0"));
    assertFalse(S3Gateway.isStateKey("run/ckpt/statefoo/x"));
  }
}
