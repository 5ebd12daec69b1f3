// SPDX-License-Identifier: Apache-2.0
package io.strata.objectstore;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class ObjectStoresTest {
  /** Settings for a server nobody listens on; opening a store does no I/O. */
  static final S3Settings S3 = new S3Settings(Optional.of(URI.create("http://127.0.0.1:9")),
      "us-east-1", true, Optional.of("id"), Optional.of("secret"), Optional.empty(), 1,
      Duration.ofSeconds(5), Duration.ofSeconds(2), 4);

  @Test
  void s3SchemesParseBucketAndNormalizedPrefix() {
    assertEquals(new ObjectStores.S3Location("b", "ckpt/q1/"),
        ObjectStores.parseS3("s3://b/ckpt/q1"));
    assertEquals(new ObjectStores.S3Location("b", "ckpt/q1/"),
        ObjectStores.parseS3("s3a://b/ckpt/q1/"));
    assertEquals(new ObjectStores.S3Location("b", "ckpt/"), ObjectStores.parseS3("s3n://b/ckpt"));
    assertEquals(new ObjectStores.S3Location("b", ""), ObjectStores.parseS3("s3://b"));
    assertEquals(new ObjectStores.S3Location("b", ""), ObjectStores.parseS3("s3://b/"));
  }

  @Test
  void badS3LocationsAreRejectedWithTheLocation() {
    for (String bad : new String[] {"s3:///prefix", "s3://", "s3:b/p", "s3://b/a//c",
        "s3://b/a/../c"}) {
      IllegalArgumentException e =
          assertThrows(IllegalArgumentException.class, () -> ObjectStores.parseS3(bad), bad);
      assertTrue(e.getMessage().contains(bad), e.getMessage());
    }
  }

  @Test
  void openS3ReturnsAStoreRootedAtBucketAndPrefixAndReleasesItsLease() {
    int before = SharedS3Clients.leases(S3);
    try (ObjectStore store = ObjectStores.open("S3A://bucket/a/b/", S3, null)) {
      S3ObjectStore s3 = assertInstanceOf(S3ObjectStore.class, store);
      assertEquals("bucket", s3.bucket());
      assertEquals("a/b/", s3.prefix());
      assertEquals("s3://bucket/a/b/x/1", store.describe("x/1"));
      assertEquals(before + 1, SharedS3Clients.leases(S3));
    }
    assertEquals(before, SharedS3Clients.leases(S3), "close released the client lease");
  }

  @Test
  void s3WithoutSettingsIsRejected() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> ObjectStores.open("s3://b/p", (S3Settings) null, null));
    assertTrue(e.getMessage().contains("s3://b/p"), e.getMessage());
  }

  @Test
  void fileLocationsAndPlainPathsAreLocal() {
    assertEquals(Path.of("/tmp/ckpt"), localRoot("file:/tmp/ckpt"));
    assertEquals(Path.of("/tmp/ckpt"), localRoot("file:///tmp/ckpt"));
    assertEquals(Path.of("/tmp/ckpt"), localRoot("file://localhost/tmp/ckpt/"));
    assertEquals(Path.of("/tmp/a b"), localRoot("file:///tmp/a%20b"));
    assertEquals(Path.of("/tmp/a b"), localRoot("file:/tmp/a b"), "unencoded space");
    assertEquals(Path.of("/tmp/ckpt"), localRoot("/tmp/ckpt"));
    assertEquals(Path.of("rel/ckpt").toAbsolutePath(), localRoot("rel/ckpt"));
    assertThrows(IllegalArgumentException.class, () -> localRoot("file://otherhost/tmp"));
    assertThrows(IllegalArgumentException.class, () -> localRoot("file:relative"));
  }

  @Test
  void otherSchemesAreRejectedNamingLocationAndSupportedSchemes() {
    for (String loc : new String[] {"hdfs://nn:8020/ckpt", "gs://b/p", "abfs://c@a/p"}) {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
          () -> ObjectStores.open(loc, S3, null), loc);
      assertTrue(e.getMessage().contains(loc), e.getMessage());
      assertTrue(e.getMessage().contains("s3a://"), e.getMessage());
      assertTrue(e.getMessage().contains("file:"), e.getMessage());
    }
  }

  @Test
  void schemeDetection() {
    assertEquals("s3a", ObjectStores.scheme("S3A://b"));
    assertEquals("file", ObjectStores.scheme("file:/x"));
    assertNull(ObjectStores.scheme("/tmp/x"));
    assertNull(ObjectStores.scheme("C:\\ckpt"), "a drive letter is not a scheme");
  }

  @Test
  void childJoinsWithOneSlash() {
    assertEquals("s3://b/ckpt/state/0", ObjectStores.child("s3://b/ckpt/", "state/0"));
    assertEquals("s3://b/ckpt/state/0", ObjectStores.child("s3://b/ckpt", "state/0"));
    assertEquals("/tmp/x/y", ObjectStores.child("/tmp/x", "y"));
    assertThrows(IllegalArgumentException.class, () -> ObjectStores.child("/tmp", "/y"));
    assertThrows(IllegalArgumentException.class, () -> ObjectStores.child("/tmp", ""));
  }

  private static Path localRoot(String location) {
    try (ObjectStore store = ObjectStores.open(location, (S3Settings) null, null)) {
      return assertInstanceOf(LocalObjectStore.class, store).root();
    }
  }

  @Test
  void locationWithEmbeddedCredentialsIsRejectedWithoutEchoingThem() {
    IllegalArgumentException e = org.junit.jupiter.api.Assertions.assertThrows(
        IllegalArgumentException.class,
        () -> ObjectStores.open("s3a://AKID:SECRETKEY@bucket/ckpt", (S3Settings) null, null));
    org.junit.jupiter.api.Assertions.assertFalse(e.getMessage().contains("SECRETKEY"),
        e.getMessage());
  }
}
