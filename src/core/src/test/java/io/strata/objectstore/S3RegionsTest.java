// SPDX-License-Identifier: Apache-2.0
package io.strata.objectstore;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.net.URI;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class S3RegionsTest {
  private static Optional<String> region(String endpoint) {
    return S3Regions.fromEndpoint(URI.create(endpoint));
  }

  @Test
  void awsEndpointsNameTheirRegion() {
    assertEquals(Optional.of("eu-west-1"), region("https://s3.eu-west-1.amazonaws.com"));
    assertEquals(Optional.of("eu-west-1"), region("https://s3-eu-west-1.amazonaws.com"));
    assertEquals(Optional.of("ap-southeast-2"),
        region("https://s3.dualstack.ap-southeast-2.amazonaws.com"));
    assertEquals(Optional.of("us-gov-west-1"),
        region("https://s3-fips.us-gov-west-1.amazonaws.com"));
    assertEquals(Optional.of("us-east-2"),
        region("https://bucket.vpce-1a2b3c4d-5e6f.s3.us-east-2.vpce.amazonaws.com"));
    assertEquals(Optional.of("cn-north-1"), region("https://s3.cn-north-1.amazonaws.com.cn"));
    assertEquals(Optional.of("eu-central-1"),
        region("https://my-bucket.s3.eu-central-1.amazonaws.com"));
    assertEquals(Optional.of("eu-west-1"), region("https://S3.EU-WEST-1.AMAZONAWS.COM"));
  }

  @Test
  void otherEndpointsNameNone() {
    assertEquals(Optional.empty(), region("https://s3.amazonaws.com"));
    assertEquals(Optional.empty(), region("http://127.0.0.1:9000"));
    assertEquals(Optional.empty(), region("http://minio.internal:9000"));
    assertEquals(Optional.empty(), region("https://s3.eu-west-1.example.com"));
    assertEquals(Optional.empty(), region("https://objects.amazonaws.com.evil.example"));
  }

  @Test
  void resolutionOrderConfiguredThenEndpointThenSdkChainThenDefault() {
    Optional<URI> regional = Optional.of(URI.create("https://s3.eu-west-1.amazonaws.com"));
    Optional<URI> compatible = Optional.of(URI.create("http://127.0.0.1:9000"));
    assertEquals("ap-south-1",
        S3Regions.resolve(Optional.of("ap-south-1"), regional, () -> Optional.of("sa-east-1")));
    assertEquals("eu-west-1",
        S3Regions.resolve(Optional.empty(), regional, () -> Optional.of("sa-east-1")));
    assertEquals("us-east-1",
        S3Regions.resolve(Optional.empty(), compatible, () -> Optional.of("sa-east-1")),
        "an S3-compatible server: the default, not the machine's AWS region");
    assertEquals("sa-east-1",
        S3Regions.resolve(Optional.empty(), Optional.empty(), () -> Optional.of("sa-east-1")));
    assertEquals("us-east-1",
        S3Regions.resolve(Optional.empty(), Optional.empty(), Optional::empty));
  }

  @Test
  void theSdkChainReadsTheAwsRegionSystemProperty() {
    String before = System.getProperty("aws.region");
    System.setProperty("aws.region", "eu-north-1");
    try {
      assertEquals(Optional.of("eu-north-1"), S3Regions.fromSdkChain());
      assertEquals("eu-north-1", S3Regions.resolve(Optional.empty(), Optional.empty()));
    } finally {
      if (before == null) {
        System.clearProperty("aws.region");
      } else {
        System.setProperty("aws.region", before);
      }
    }
  }
}
