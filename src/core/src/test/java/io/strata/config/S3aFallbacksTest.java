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

  private static StrataConf conf(Map<String, String> strata, Map<String, String> hadoop,
      String bucket) {
    return StrataConf.from(strata, S3aFallbacks.from(hadoop::get, bucket));
  }

  @Test
  void perBucketKeysWinForTheirBucketOnly() {
    Map<String, String> hadoop = Map.of("fs.s3a.endpoint", "http://global:9000",
        "fs.s3a.path.style.access", "false",
        "fs.s3a.bucket.ckpt.endpoint", "ckpt-host:9000",
        "fs.s3a.bucket.ckpt.connection.ssl.enabled", "false",
        "fs.s3a.bucket.ckpt.path.style.access", "true");
    StrataConf ckpt = conf(Map.of(), hadoop, "ckpt");
    assertEquals("http://ckpt-host:9000", ckpt.s3().endpoint().orElseThrow().toString());
    assertTrue(ckpt.s3().pathStyleAccess());
    StrataConf other = conf(Map.of(), hadoop, "other");
    assertEquals("http://global:9000", other.s3().endpoint().orElseThrow().toString());
    assertFalse(other.s3().pathStyleAccess());
  }

  @Test
  void perBucketCredentialsNeverPairWithGlobalOnes() {
    Map<String, String> hadoop = Map.of("fs.s3a.access.key", "GLOBAL-AK",
        "fs.s3a.secret.key", "GLOBAL-SK", "fs.s3a.session.token", "GLOBAL-TOKEN",
        "fs.s3a.bucket.ckpt.access.key", "CKPT-AK", "fs.s3a.bucket.ckpt.secret.key", "CKPT-SK");
    StrataConf ckpt = conf(Map.of(), hadoop, "ckpt");
    assertEquals(Optional.of("CKPT-AK"), ckpt.s3().accessKeyId());
    assertEquals(Optional.of("CKPT-SK"), ckpt.s3().secretAccessKey());
    assertEquals(Optional.empty(), ckpt.s3().sessionToken(),
        "the global session token belongs to the global keys");
    assertEquals(Optional.of("GLOBAL-AK"), conf(Map.of(), hadoop, "other").s3().accessKeyId());

    // A per-bucket provider is taken on its own, as S3A takes it.
    StrataConf role = conf(Map.of(), Map.of("fs.s3a.access.key", "GLOBAL-AK",
        "fs.s3a.secret.key", "GLOBAL-SK",
        "fs.s3a.bucket.ckpt.aws.credentials.provider",
        "com.amazonaws.auth.WebIdentityTokenCredentialsProvider"), "ckpt");
    assertEquals(java.util.List.of(io.strata.objectstore.S3Credentials.Provider.WEB_IDENTITY),
        role.s3().credentials().providers());

    // A blank per-bucket key means none for the bucket (S3A copies it over the global one).
    StrataConf blank = conf(Map.of(), Map.of("fs.s3a.access.key", "GLOBAL-AK",
        "fs.s3a.secret.key", "GLOBAL-SK", "fs.s3a.bucket.pub.access.key", "",
        "fs.s3a.bucket.pub.secret.key", " "), "pub");
    assertEquals(Optional.empty(), blank.s3().accessKeyId(), "never the global key");

    // A lone per-bucket access key with a global secret is refused, not paired.
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> conf(Map.of(), Map.of("fs.s3a.secret.key", "GLOBAL-SK",
            "fs.s3a.bucket.ckpt.access.key", "CKPT-AK"), "ckpt").s3());
    assertTrue(e.getMessage().contains("must be set together"), e.getMessage());
    assertFalse(e.getMessage().contains("GLOBAL-SK"), e.getMessage());
  }

  @Test
  void aGlobalAssumedRoleProviderTakesTheBucketsOwnRole() {
    StrataConf c = conf(Map.of(), Map.of("fs.s3a.aws.credentials.provider",
        "org.apache.hadoop.fs.s3a.auth.AssumedRoleCredentialProvider",
        "fs.s3a.assumed.role.arn", "arn:aws:iam::123456789012:role/global",
        "fs.s3a.bucket.ckpt.assumed.role.arn", "arn:aws:iam::123456789012:role/ckpt"), "ckpt");
    assertEquals(java.util.List.of(io.strata.objectstore.S3Credentials.Provider.ASSUMED_ROLE),
        c.s3().credentials().providers());
    assertEquals("arn:aws:iam::123456789012:role/ckpt",
        c.s3().credentials().assumedRole().orElseThrow().roleArn());
  }

  @Test
  void stratasCredentialKeysReplaceAllOfS3as() {
    StrataConf keys = conf(Map.of(P + "s3.accessKeyId", "OWN-AK", P + "s3.secretAccessKey",
        "OWN-SK"), Map.of("fs.s3a.session.token", "GLOBAL-TOKEN",
        "fs.s3a.bucket.ckpt.session.token", "CKPT-TOKEN",
        "fs.s3a.bucket.ckpt.aws.credentials.provider",
        "org.apache.hadoop.fs.s3a.AnonymousAWSCredentialsProvider"), "ckpt");
    assertEquals(Optional.empty(), keys.s3().sessionToken(), "no S3A token with Strata's keys");
    assertEquals(io.strata.objectstore.S3Credentials.AUTO, keys.s3().credentials(),
        "no S3A provider with Strata's keys");
    StrataConf provider = conf(Map.of(P + "s3.credentialsProvider", "environment"),
        Map.of("fs.s3a.access.key", "GLOBAL-AK", "fs.s3a.secret.key", "GLOBAL-SK"), "ckpt");
    assertEquals(Optional.empty(), provider.s3().accessKeyId());
  }

  @Test
  void aLoneStrataSessionTokenIsRefusedNotSilentlyDropped() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> conf(Map.of(P + "s3.sessionToken", "TOKEN-SECRET"), Map.of("fs.s3a.access.key",
            "AK", "fs.s3a.secret.key", "SK"), "ckpt").s3());
    assertTrue(e.getMessage().contains(P + "s3.accessKeyId"), e.getMessage());
    assertTrue(e.getMessage().contains("are not read"), e.getMessage());
    assertFalse(e.getMessage().contains("TOKEN-SECRET"), e.getMessage());
  }

  @Test
  void s3asProfileKeysSteerOnlyTheProfileProvider() {
    Map<String, String> hadoop = Map.of("fs.s3a.auth.profile.name", "analytics",
        "fs.s3a.auth.profile.file", "/etc/analytics/credentials");
    StrataConf auto = conf(Map.of(), hadoop, "ckpt");
    assertEquals(io.strata.objectstore.S3Credentials.AUTO, auto.s3().credentials(),
        "the default chain keeps the SDK's profile and files");
    StrataConf profile = conf(Map.of(), Map.of("fs.s3a.auth.profile.name", "analytics",
        "fs.s3a.aws.credentials.provider",
        "org.apache.hadoop.fs.s3a.auth.ProfileAWSCredentialsProvider"), "ckpt");
    assertEquals(Optional.of("analytics"), profile.s3().credentials().profileName());
    StrataConf own = conf(Map.of(P + "s3.profile", "mine"), hadoop, "ckpt");
    assertEquals(Optional.of("mine"), own.s3().credentials().profileName(),
        "Strata's own key applies to the default chain too");
  }

  @Test
  void aTooLongPerBucketSessionDurationIsRefusedNamingThePerBucketKey() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> conf(Map.of(), Map.of("fs.s3a.aws.credentials.provider",
            "org.apache.hadoop.fs.s3a.auth.AssumedRoleCredentialProvider",
            "fs.s3a.assumed.role.arn", "arn:aws:iam::123456789012:role/r",
            "fs.s3a.bucket.ckpt.assumed.role.session.duration", "24h"), "ckpt").s3());
    assertTrue(e.getMessage().contains("fs.s3a.bucket.ckpt.assumed.role.session.duration"),
        e.getMessage());
  }

  @Test
  void aBlankPerBucketEncryptionKeepsTheGlobalKmsKeyAway() {
    StrataConf c = conf(Map.of(), Map.of("fs.s3a.encryption.algorithm", "SSE-KMS",
        "fs.s3a.encryption.key", "arn:aws:kms:eu-west-1:123456789012:key/global",
        "fs.s3a.bucket.ckpt.encryption.algorithm", ""), "ckpt");
    assertEquals(S3WriteSettings.SSE_NONE, c.s3().writes().serverSideEncryption());
    assertEquals(Optional.empty(), c.s3().writes().kmsKeyId());
  }

  @Test
  void aBadDeprecatedPerBucketEncryptionKeyIsNamed() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> conf(Map.of(), Map.of("fs.s3a.bucket.ckpt.server-side-encryption-algorithm",
            "SSE-C"), "ckpt").s3());
    assertTrue(e.getMessage().contains("fs.s3a.bucket.ckpt.server-side-encryption-algorithm"),
        e.getMessage());
  }

  @Test
  void stratasOwnKeysStillWinOverPerBucketOnes() {
    StrataConf c = conf(Map.of(P + "s3.accessKeyId", "OWN-AK", P + "s3.secretAccessKey",
        "OWN-SK"), Map.of("fs.s3a.bucket.ckpt.access.key", "CKPT-AK",
        "fs.s3a.bucket.ckpt.secret.key", "CKPT-SK"), "ckpt");
    assertEquals(Optional.of("OWN-AK"), c.s3().accessKeyId());
  }

  @Test
  void aBadPerBucketValueIsRefusedNamingThePerBucketKey() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> conf(Map.of(), Map.of("fs.s3a.path.style.access", "true",
            "fs.s3a.bucket.ckpt.path.style.access", "maybe"), "ckpt").s3());
    assertTrue(e.getMessage().contains("fs.s3a.bucket.ckpt.path.style.access"), e.getMessage());
    IllegalArgumentException global = assertThrows(IllegalArgumentException.class,
        () -> conf(Map.of(), Map.of("fs.s3a.path.style.access", "maybe"), "ckpt").s3());
    assertTrue(global.getMessage().contains("for fs.s3a.path.style.access:"),
        global.getMessage());
  }

  @Test
  void perBucketEncryptionReplacesTheGlobalPair() {
    StrataConf c = conf(Map.of(), Map.of("fs.s3a.encryption.algorithm", "SSE-KMS",
        "fs.s3a.encryption.key", "alias/global",
        "fs.s3a.bucket.ckpt.encryption.algorithm", "SSE-S3"), "ckpt");
    assertEquals(S3WriteSettings.SSE_S3, c.s3().writes().serverSideEncryption());
    assertEquals(Optional.empty(), c.s3().writes().kmsKeyId());
  }
}
