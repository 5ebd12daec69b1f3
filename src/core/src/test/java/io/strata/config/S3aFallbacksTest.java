package io.strata.config;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.Map;
import org.junit.jupiter.api.Test;

class S3aFallbacksTest {
  @Test
  void readsTheGlobalS3aKeysAndGivesTheEndpointAScheme() {
    Map<String, String> hadoop = Map.of("fs.s3a.endpoint", " minio:9000 ",
        "fs.s3a.connection.ssl.enabled", "false", "fs.s3a.path.style.access", "true",
        "fs.s3a.access.key", "AK", "fs.s3a.secret.key", "SK", "fs.s3a.session.token", " ",
        "fs.s3a.bucket.b.endpoint", "ignored");
    assertEquals(Map.of("fs.s3a.endpoint", "http://minio:9000", "fs.s3a.path.style.access",
        "true", "fs.s3a.access.key", "AK", "fs.s3a.secret.key", "SK"),
        S3aFallbacks.from(hadoop::get));
    assertEquals(Map.of("fs.s3a.endpoint", "https://s3.eu-west-1.amazonaws.com"),
        S3aFallbacks.from(Map.of("fs.s3a.endpoint", "s3.eu-west-1.amazonaws.com")::get));
    assertEquals(Map.of(), S3aFallbacks.from(null));
  }
}
