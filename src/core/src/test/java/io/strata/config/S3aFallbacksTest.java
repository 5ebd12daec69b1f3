// SPDX-License-Identifier: Apache-2.0
package io.strata.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.objectstore.S3WriteSettings;
import java.util.Map;
import java.util.Optional;
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

  private static final String P = StrataConf.PREFIX;

  private static S3WriteSettings writes(Map<String, String> strata, Map<String, String> hadoop) {
    return StrataConf.from(strata, S3aFallbacks.from(hadoop::get)).s3().writes();
  }

  @Test
  void s3aEncryptionAppliesWhenStratasOwnKeysAreUnset() {
    S3WriteSettings kms = writes(Map.of(), Map.of("fs.s3a.encryption.algorithm", "SSE-KMS",
        "fs.s3a.encryption.key", "arn:aws:kms:eu-west-1:123456789012:key/k1"));
    assertEquals(S3WriteSettings.SSE_KMS, kms.serverSideEncryption());
    assertEquals(Optional.of("arn:aws:kms:eu-west-1:123456789012:key/k1"), kms.kmsKeyId());
    S3WriteSettings s3 = writes(Map.of(), Map.of("fs.s3a.encryption.algorithm", "sse-s3"));
    assertEquals(S3WriteSettings.SSE_S3, s3.serverSideEncryption());
    assertEquals(Optional.empty(), s3.kmsKeyId());
    // S3A reads the key only for KMS: with SSE-S3 it is ignored, not an error
    assertEquals(S3WriteSettings.SSE_S3, writes(Map.of(), Map.of("fs.s3a.encryption.algorithm",
        "SSE-S3", "fs.s3a.encryption.key", "stray")).serverSideEncryption());
    // the deprecated names S3A still reads
    S3WriteSettings old = writes(Map.of(), Map.of("fs.s3a.server-side-encryption-algorithm",
        "SSE-KMS", "fs.s3a.server-side-encryption.key", "alias/old"));
    assertEquals(S3WriteSettings.SSE_KMS, old.serverSideEncryption());
    assertEquals(Optional.of("alias/old"), old.kmsKeyId());
    assertEquals(S3WriteSettings.SSE_NONE, writes(Map.of(), Map.of()).serverSideEncryption());
  }

  @Test
  void stratasOwnEncryptionKeysReplaceS3asAsAPair() {
    Map<String, String> s3a = Map.of("fs.s3a.encryption.algorithm", "SSE-KMS",
        "fs.s3a.encryption.key", "alias/s3a");
    S3WriteSettings own = writes(Map.of(P + "s3.sse", "AES256"), s3a);
    assertEquals(S3WriteSettings.SSE_S3, own.serverSideEncryption());
    assertEquals(Optional.empty(), own.kmsKeyId(), "no key from S3A under Strata's algorithm");
    S3WriteSettings ownKey = writes(Map.of(P + "s3.sse", "aws:kms", P + "s3.sseKmsKeyId",
        "alias/strata"), s3a);
    assertEquals(Optional.of("alias/strata"), ownKey.kmsKeyId());
    assertEquals(S3WriteSettings.SSE_NONE,
        writes(Map.of(P + "s3.sse", "none"), s3a).serverSideEncryption());
  }

  @Test
  void s3aEncryptionModesStrataCannotHonourAreRefusedNamingTheS3aKeyAndNeverTheSecret() {
    for (String mode : java.util.List.of("SSE-C", "DSSE-KMS", "CSE-KMS")) {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
          () -> writes(Map.of(), Map.of("fs.s3a.encryption.algorithm", mode,
              "fs.s3a.encryption.key", "Q1VTVE9NRVJTRUNSRVRLRVk=")), mode);
      assertTrue(e.getMessage().contains("fs.s3a.encryption.algorithm"), e.getMessage());
      assertTrue(e.getMessage().contains(mode), e.getMessage());
      assertFalse(e.getMessage().contains("Q1VTVE9NRVJTRUNSRVRLRVk="), e.getMessage());
    }
  }
}
