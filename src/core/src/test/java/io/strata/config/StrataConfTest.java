// SPDX-License-Identifier: Apache-2.0
package io.strata.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.LogCapture;
import java.net.URI;
import java.nio.file.Files;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class StrataConfTest {
  private static final String P = StrataConf.PREFIX;

  @Test
  void defaults() {
    StrataConf c = StrataConf.from(Map.of(), Map.of());
    assertEquals(Optional.empty(), c.localDir());
    assertFalse(c.fileCheckpointShared());
    assertEquals(Optional.empty(), c.s3().endpoint());
    assertEquals("us-east-1", c.s3().region());
    assertFalse(c.s3().pathStyleAccess());
    assertEquals(10, c.s3().maxAttempts());
    assertEquals(Duration.ofMinutes(2), c.s3().apiCallTimeout());
    assertEquals(Duration.ofSeconds(30), c.s3().apiCallAttemptTimeout());
    assertEquals(20, c.snapshotInterval());
    assertEquals(8, c.transferThreads());
    assertEquals(64L << 20, c.spillThresholdBytes());
    assertEquals(Duration.ofSeconds(60), c.lockAcquireTimeout());
    assertTrue(c.memoryBounded());
    assertEquals(Optional.empty(), c.memoryMaxBytes(), "auto");
    assertTrue(c.gcEnabled());
    assertEquals(Duration.ofHours(1), c.gcGracePeriod());
  }

  @Test
  void memorySettings() {
    StrataConf c = StrataConf.from(Map.of(P + "memory.max", "2g", P + "memory.bounded", "false"),
        Map.of());
    assertEquals(Optional.of(2L << 30), c.memoryMaxBytes());
    assertFalse(c.memoryBounded());
    assertEquals(Optional.empty(),
        StrataConf.from(Map.of(P + "memory.max", "AUTO"), Map.of()).memoryMaxBytes());
    assertBad(P + "memory.max", "512k", "at least 1m");
    assertBad(P + "memory.max", "lots", "expected auto or a size");
    assertBad(P + "memory.bounded", "maybe", "true or false");
  }

  @Test
  void fileCheckpointShared() {
    assertTrue(StrataConf.from(Map.of(P + "fileCheckpoint.shared", "TRUE"), Map.of())
        .fileCheckpointShared());
    assertBad(P + "fileCheckpoint.shared", "yes", "true or false");
  }

  @Test
  void garbageCollectionSettings() {
    StrataConf c = StrataConf.from(Map.of(P + "gc.enabled", "false", P + "gc.gracePeriod", "90m"),
        Map.of());
    assertFalse(c.gcEnabled());
    assertEquals(Duration.ofMinutes(90), c.gcGracePeriod());
    assertEquals(Duration.ofMinutes(1),
        StrataConf.from(Map.of(P + "gc.gracePeriod", "60s"), Map.of()).gcGracePeriod());
  }

  @Test
  void parsesUnitsAndFallsBackToS3aSettings() {
    StrataConf c = StrataConf.from(Map.of(P + "s3.apiCallAttemptTimeout", "500ms",
        P + "spillThreshold", "1g", P + "lockAcquireTimeout", "2m"),
        Map.of("fs.s3a.endpoint", "http://127.0.0.1:9000", "fs.s3a.path.style.access", "true",
            "fs.s3a.access.key", "AK", "fs.s3a.secret.key", "SK"));
    assertEquals(Duration.ofMillis(500), c.s3().apiCallAttemptTimeout());
    assertEquals(1L << 30, c.spillThresholdBytes());
    assertEquals(Duration.ofMinutes(2), c.lockAcquireTimeout());
    assertEquals(Optional.of(URI.create("http://127.0.0.1:9000")), c.s3().endpoint());
    assertTrue(c.s3().pathStyleAccess());
    assertEquals(Optional.of("AK"), c.s3().accessKeyId());
  }

  @Test
  void ownSettingsWinOverS3a() {
    StrataConf c = StrataConf.from(Map.of(P + "s3.endpoint", "https://a.example:443"),
        Map.of("fs.s3a.endpoint", "http://b.example"));
    assertEquals(Optional.of(URI.create("https://a.example:443")), c.s3().endpoint());
  }

  @Test
  void badValuesNameTheKeyAndWhatIsAllowed() {
    assertBad(P + "s3.maxAttempts", "0", "expected an integer >= 1");
    assertBad(P + "s3.maxAttempts", "-3", "expected an integer >= 1");
    assertBad(P + "snapshotInterval", "ten", "expected an integer >= 1");
    assertBad(P + "s3.apiCallTimeout", "5 parsecs", "duration");
    assertBad(P + "lockAcquireTimeout", "0s", "not zero");
    assertBad(P + "spillThreshold", "lots", "size");
    assertBad(P + "spillThreshold", "9000000000g", "size below");
    assertBad(P + "s3.apiCallTimeout", "999999999999999d", "fits in 64-bit");
    assertBad(P + "s3.endpoint", "127.0.0.1:9000", "http:// or https://");
    assertBad(P + "s3.endpoint", "ftp://host", "http:// or https://");
    assertBad(P + "s3.region", "US East", "AWS region");
    assertBad(P + "s3.pathStyleAccess", "yes", "true or false");
    assertBad(P + "gc.enabled", "on", "true or false");
    assertBad(P + "gc.gracePeriod", "59s", "at least 1m");
    assertBad(P + "gc.gracePeriod", "0", "not zero");
    assertBad(P + "gc.gracePeriod", "forever", "duration");
  }

  @Test
  void encryptionAndStorageClass() {
    assertEquals(io.strata.objectstore.S3WriteSettings.DEFAULT,
        StrataConf.from(Map.of(), Map.of()).s3().writes());
    StrataConf kms = StrataConf.from(Map.of(P + "s3.sse", "aws:kms", P + "s3.sseKmsKeyId",
        "alias/strata", P + "s3.storageClass", "intelligent_tiering"), Map.of());
    assertEquals("aws:kms", kms.s3().writes().serverSideEncryption());
    assertEquals(Optional.of("alias/strata"), kms.s3().writes().kmsKeyId());
    assertEquals(Optional.of("INTELLIGENT_TIERING"), kms.s3().writes().storageClass());
    assertEquals("AES256", StrataConf.from(Map.of(P + "s3.sse", "SSE-S3"), Map.of()).s3()
        .writes().serverSideEncryption());
    assertEquals("aws:kms", StrataConf.from(Map.of(P + "s3.sse", "sse-kms"), Map.of()).s3()
        .writes().serverSideEncryption());
    assertBad(P + "s3.sse", "AES128", "expected none, AES256 (SSE-S3) or aws:kms (SSE-KMS)");
    assertBad(P + "s3.sse", "kms", "expected none, AES256");
    assertBad(P + "s3.storageClass", "COLD", "expected a storage class, one of STANDARD");
    assertBad(P + "s3.storageClass", "GLACIER", "needs a restore");
    assertBad(P + "s3.storageClass", "deep_archive", "needs a restore");
    assertBad(P + "s3.sseKmsKeyId", " ", "non-empty");
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> StrataConf.from(Map.of(P + "s3.sseKmsKeyId", "alias/strata"), Map.of()).s3());
    assertTrue(e.getMessage().contains(P + "s3.sseKmsKeyId"), e.getMessage());
    assertTrue(e.getMessage().contains(P + "s3.sse=aws:kms"), e.getMessage());
    IllegalArgumentException s3 = assertThrows(IllegalArgumentException.class,
        () -> StrataConf.from(Map.of(P + "s3.sse", "AES256", P + "s3.sseKmsKeyId", "k"),
            Map.of()).s3());
    assertTrue(s3.getMessage().contains("is AES256"), s3.getMessage());
  }

  @Test
  void everyNumericSettingRefusesNegativeZeroAndUnknownUnits() {
    assertBad(P + "s3.maxConnections", "0", "expected an integer >= 1");
    assertBad(P + "s3.maxConnections", "-8", "expected an integer >= 1");
    assertBad(P + "transferThreads", "0", "expected an integer >= 1");
    assertBad(P + "snapshotInterval", "-1", "expected an integer >= 1");
    assertBad(P + "spillThreshold", "-1", "size");
    assertBad(P + "spillThreshold", "64x", "size");
    assertBad(P + "memory.max", "-1g", "expected auto or a size");
    assertBad(P + "memory.max", "0", "at least 1m");
    assertBad(P + "s3.apiCallTimeout", "-5s", "duration");
    assertBad(P + "s3.apiCallTimeout", "0", "not zero");
    assertBad(P + "s3.apiCallAttemptTimeout", "10 fortnights", "duration");
    assertBad(P + "lockAcquireTimeout", "-1s", "duration");
    assertBad(P + "gc.gracePeriod", "1y", "duration");
    assertBad(P + "localDir", " ", "non-empty");
    assertBad(P + "s3.endpoint", "http://", "http:// or https://");
    assertBad(P + "s3.endpoint", "not a url", "http:// or https://");
  }

  @Test
  void unknownRegionWithoutEndpointIsRefused() {
    assertBad(P + "s3.region", "moon-base-1", "expected an AWS region such as us-east-1");
    assertBad(P + "s3.region", "us-east-9", "expected an AWS region such as us-east-1");
    // an S3-compatible server takes any signing region
    assertEquals("moon-base-1", StrataConf.from(Map.of(P + "s3.region", "moon-base-1",
        P + "s3.endpoint", "http://127.0.0.1:9000"), Map.of()).s3().region());
    assertEquals("eu-west-1",
        StrataConf.from(Map.of(P + "s3.region", "eu-west-1"), Map.of()).s3().region());
  }

  @Test
  void aRegionalS3aEndpointWithoutARegionSignsForTheEndpointsRegion() {
    StrataConf c = StrataConf.from(Map.of(),
        S3aFallbacks.from(Map.of("fs.s3a.endpoint", "s3.eu-west-2.amazonaws.com")::get));
    assertEquals("eu-west-2", c.s3().region());
    assertEquals(Optional.of(URI.create("https://s3.eu-west-2.amazonaws.com")), c.s3().endpoint());
    // S3A's own region key, or Strata's, still wins
    assertEquals("eu-west-1", StrataConf.from(Map.of(), S3aFallbacks.from(Map.of(
        "fs.s3a.endpoint", "s3.eu-west-2.amazonaws.com", "fs.s3a.endpoint.region",
        "eu-west-1")::get)).s3().region());
    assertEquals("us-east-1", StrataConf.from(Map.of(P + "s3.endpoint", "http://127.0.0.1:9000"),
        Map.of()).s3().region(), "an S3-compatible server without a region");
  }

  @Test
  void unknownKeyUnderThePrefixIsWarnedAboutOnceWithTheClosestKnownKey() {
    String key = P + "snapshotIntervall" + System.nanoTime(); // new to this JVM
    try (LogCapture log = new LogCapture()) {
      StrataConf c = StrataConf.from(Map.of(key, "3", P + "snapshotInterval", "7"), Map.of());
      assertEquals(7, c.snapshotInterval(), "the known keys still apply");
      StrataConf.from(Map.of(key, "3"), Map.of());
      List<String> warned = log.lines.stream().filter(l -> l.contains(key)).toList();
      assertEquals(1, warned.size(), "one WARN per key per JVM: " + log.lines);
      assertTrue(warned.get(0).startsWith("WARN "), warned.get(0));
      assertTrue(warned.get(0).contains("did you mean " + P + "snapshotInterval?"), warned.get(0));
      assertFalse(warned.get(0).contains(P + "s3.endpoint"), "the closest key only, not all "
          + "of them: " + warned.get(0));
      assertTrue(warned.get(0).length() < 400, "one short line: " + warned.get(0));
      assertFalse(warned.get(0).contains("=3") || warned.get(0).contains("'3'"),
          "the value is not logged: " + warned.get(0));
    }
  }

  @Test
  void aNewerStratasKeyDoesNotStopTheQueryButABadValueOfAKnownKeyStillDoes() {
    StrataConf.from(Map.of(P + "changeFeed.enabled", "true"), Map.of());
    assertBad(P + "snapshotInterval", "often", P + "snapshotInterval");
  }

  @Test
  void closestKnownKeyIsByEditDistanceIgnoringCase() {
    List<String> known = List.of(P + "s3.endpoint", P + "s3.region", P + "snapshotInterval");
    assertEquals(P + "s3.region", UnknownSettings.closest(P + "s3.regoin", known));
    assertEquals(P + "s3.endpoint", UnknownSettings.closest(P + "S3.Endpoint", known));
    assertEquals(P + "snapshotInterval", UnknownSettings.closest(P + "snapshot.interval", known));
    assertEquals(3, UnknownSettings.distance("kitten", "sitting"));
    assertEquals(0, UnknownSettings.distance("", ""));
    assertEquals(4, UnknownSettings.distance("", "abcd"));
  }

  @Test
  void secretsNeverAppearInMessages() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> StrataConf.from(Map.of(P + "s3.accessKeyId", "AKIDSECRETLOOKING"), Map.of()).s3());
    assertFalse(e.getMessage().contains("AKIDSECRETLOOKING"), e.getMessage());
    IllegalArgumentException endpoint = assertThrows(IllegalArgumentException.class,
        () -> StrataConf.from(Map.of(),
            Map.of("fs.s3a.endpoint", "http://AK:SECRETINURL@host:9000")).s3());
    assertFalse(endpoint.getMessage().contains("SECRETINURL"), endpoint.getMessage());
    StrataConf c = StrataConf.from(Map.of(P + "s3.accessKeyId", "AKIDVISIBLE",
        P + "s3.secretAccessKey", "TOPSECRETVALUE"), Map.of());
    assertFalse(c.toString().contains("TOPSECRETVALUE"), c.toString());
    assertFalse(c.s3().toString().contains("TOPSECRETVALUE"), c.s3().toString());
  }

  @Test
  void readmeDocumentsEveryOptionWithItsDefault() throws Exception {
    String readme = Files.readString(OptionsTable.readme());
    for (ConfigOption<?> o : StrataConf.OPTIONS) {
      assertTrue(readme.contains("`" + o.fullKey() + "`"), "README.md lacks " + o.fullKey());
    }
  }

  private static void assertBad(String key, String value, String expected) {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> StrataConf.from(Map.of(key, value), Map.of()).s3(), key + "=" + value);
    assertTrue(e.getMessage().contains(key), e.getMessage());
    assertTrue(e.getMessage().contains(expected), e.getMessage());
  }

  /**
   * Issue 41: S3 settings are read and checked when S3 is first needed ({@code s3()}), so a bad
   * or incomplete S3 setting meant for other jobs never stops a store that is not on S3; on S3
   * the same error names the key, every time it is asked for.
   */
  @Test
  void s3SettingsAreCheckedWhenFirstNeeded() {
    Map<String, String> hadoop = Map.of("fs.s3a.aws.credentials.provider",
        "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider");
    StrataConf c = StrataConf.from(Map.of(P + "s3.maxAttempts", "0"), hadoop);
    assertTrue(c.gcEnabled(), "the other settings resolve");
    IllegalArgumentException first = assertThrows(IllegalArgumentException.class, c::s3);
    IllegalArgumentException again = assertThrows(IllegalArgumentException.class, c::s3);
    assertEquals(first.getMessage(), again.getMessage());
    assertTrue(first.getMessage().contains(P + "s3.maxAttempts"), first.getMessage());
    IllegalArgumentException keys = assertThrows(IllegalArgumentException.class,
        () -> StrataConf.from(Map.of(), hadoop).s3());
    assertTrue(keys.getMessage().contains("fs.s3a.aws.credentials.provider"), keys.getMessage());
    // Settings that are not S3's are still checked at once.
    assertThrows(IllegalArgumentException.class,
        () -> StrataConf.from(Map.of(P + "snapshotInterval", "0"), hadoop));
    // Resolved once, then kept.
    StrataConf fine = StrataConf.from(Map.of(), Map.of());
    assertSame(fine.s3(), fine.s3());
  }

  /** Only S3 options fall back to Hadoop keys, which is why they alone are resolved lazily. */
  @Test
  void onlyS3OptionsHaveFallbackKeys() {
    for (ConfigOption<?> o : StrataConf.OPTIONS) {
      if (o.fallbackKey().isPresent()) {
        assertTrue(o.fullKey().startsWith(P + "s3."), o.fullKey());
      }
    }
  }

  @Test
  void theCredentialsOriginNamesTheKeysThatChoseThem() {
    assertEquals(io.strata.objectstore.S3Settings.DEFAULT_CHAIN,
        StrataConf.from(Map.of(), Map.of()).s3().credentialsOrigin());
    assertEquals("the static keys of " + P + "s3.accessKeyId", StrataConf.from(Map.of(
        P + "s3.accessKeyId", "AKIDEXAMPLE", P + "s3.secretAccessKey", "wJalrEXAMPLE"), Map.of())
        .s3().credentialsOrigin());
    assertEquals("the static keys of fs.s3a.access.key", StrataConf.from(Map.of(), Map.of(
        "fs.s3a.access.key", "AKIDEXAMPLE", "fs.s3a.secret.key", "wJalrEXAMPLE"))
        .s3().credentialsOrigin());
    Map<String, String> perBucket = S3aFallbacks.from(Map.of(
        "fs.s3a.bucket.b1.access.key", "AKIDEXAMPLE",
        "fs.s3a.bucket.b1.secret.key", "wJalrEXAMPLE")::get, "b1");
    String origin = StrataConf.from(Map.of(), perBucket).s3().credentialsOrigin();
    assertEquals("the static keys of fs.s3a.bucket.b1.access.key", origin);
    assertEquals("the credentials providers [profile] of " + P + "s3.credentialsProvider",
        StrataConf.from(Map.of(P + "s3.credentialsProvider", "profile"), Map.of())
            .s3().credentialsOrigin());
    for (String s : List.of(origin, StrataConf.from(Map.of(P + "s3.accessKeyId", "AKIDEXAMPLE",
        P + "s3.secretAccessKey", "wJalrEXAMPLE"), Map.of()).s3().credentialsOrigin())) {
      assertFalse(s.contains("AKIDEXAMPLE") || s.contains("wJalrEXAMPLE"), s);
    }
  }
}
