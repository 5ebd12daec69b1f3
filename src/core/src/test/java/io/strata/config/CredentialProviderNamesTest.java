// SPDX-License-Identifier: Apache-2.0
package io.strata.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.objectstore.S3Credentials;
import io.strata.objectstore.S3Credentials.Provider;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class CredentialProviderNamesTest {
  private static final String P = StrataConf.PREFIX;

  @Test
  void theClassNamesS3aUsersSetMapToTheProvidersOfTheSameSource() {
    Map<String, List<Provider>> expected = Map.of(
        "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider", List.of(Provider.STATIC),
        "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider", List.of(Provider.TEMPORARY),
        "com.amazonaws.auth.EnvironmentVariableCredentialsProvider",
        List.of(Provider.ENVIRONMENT),
        "org.apache.hadoop.fs.s3a.auth.IAMInstanceCredentialsProvider",
        List.of(Provider.CONTAINER, Provider.INSTANCE_PROFILE),
        "com.amazonaws.auth.InstanceProfileCredentialsProvider",
        List.of(Provider.CONTAINER, Provider.INSTANCE_PROFILE),
        "software.amazon.awssdk.auth.credentials.WebIdentityTokenFileCredentialsProvider",
        List.of(Provider.WEB_IDENTITY),
        "com.amazonaws.auth.WebIdentityTokenCredentialsProvider", List.of(Provider.WEB_IDENTITY),
        "org.apache.hadoop.fs.s3a.auth.AssumedRoleCredentialProvider",
        List.of(Provider.ASSUMED_ROLE),
        "software.amazon.awssdk.auth.credentials.ProfileCredentialsProvider",
        List.of(Provider.PROFILE),
        "org.apache.hadoop.fs.s3a.AnonymousAWSCredentialsProvider", List.of(Provider.ANONYMOUS));
    expected.forEach((name, providers) ->
        assertEquals(providers, CredentialProviderNames.parse(name), name));
    expected = Map.of(
        "org.apache.hadoop.fs.s3a.auth.ProfileAWSCredentialsProvider", List.of(Provider.PROFILE),
        "org.apache.hadoop.fs.s3a.SharedInstanceCredentialProvider",
        List.of(Provider.CONTAINER, Provider.INSTANCE_PROFILE),
        "com.amazonaws.auth.AnonymousAWSCredentials", List.of(Provider.ANONYMOUS));
    expected.forEach((name, providers) ->
        assertEquals(providers, CredentialProviderNames.parse(name), name));
    for (Provider p : Provider.values()) {
      assertEquals(List.of(p), CredentialProviderNames.parse(p.id()));
    }
  }

  @Test
  void s3asDefaultListReadsAsAChainInOrderWithoutRepeats() {
    // Hadoop 3.4's fs.s3a.aws.credentials.provider default, as core-default.xml spells it.
    String hadoopDefault = "\n  org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider,\n"
        + "  org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider,\n"
        + "  software.amazon.awssdk.auth.credentials.EnvironmentVariableCredentialsProvider,\n"
        + "  org.apache.hadoop.fs.s3a.auth.IAMInstanceCredentialsProvider\n";
    assertEquals(List.of(Provider.TEMPORARY, Provider.STATIC, Provider.ENVIRONMENT,
        Provider.CONTAINER, Provider.INSTANCE_PROFILE),
        CredentialProviderNames.parse(hadoopDefault));
    assertEquals("temporary,static", CredentialProviderNames.format(
        List.of(Provider.TEMPORARY, Provider.STATIC)));
  }

  @Test
  void anUnknownProviderIsRefusedNamingTheKeyTheEntryAndTheKnownNames() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> StrataConf.from(Map.of(), Map.of("fs.s3a.aws.credentials.provider",
            "com.example.MyProvider")).s3());
    assertTrue(e.getMessage().contains("fs.s3a.aws.credentials.provider"), e.getMessage());
    assertTrue(e.getMessage().contains("com.example.MyProvider"), e.getMessage());
    assertTrue(e.getMessage().contains("web-identity"), e.getMessage());
    assertThrows(IllegalArgumentException.class,
        () -> StrataConf.from(Map.of(P + "s3.credentialsProvider", " , "), Map.of()).s3());
  }

  @Test
  void providersThatNeedSettingsAreRefusedWithoutThemNamingTheKeysNeverTheSecrets() {
    IllegalArgumentException temporary = assertThrows(IllegalArgumentException.class,
        () -> StrataConf.from(Map.of(), Map.of("fs.s3a.aws.credentials.provider",
            "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider",
            "fs.s3a.access.key", "AK", "fs.s3a.secret.key", "TOP-SECRET")).s3());
    assertTrue(temporary.getMessage().contains("fs.s3a.session.token"), temporary.getMessage());
    assertFalse(temporary.getMessage().contains("TOP-SECRET"), temporary.getMessage());
    IllegalArgumentException simple = assertThrows(IllegalArgumentException.class,
        () -> StrataConf.from(Map.of(P + "s3.credentialsProvider", "static"), Map.of()).s3());
    assertTrue(simple.getMessage().contains(P + "s3.accessKeyId"), simple.getMessage());
    IllegalArgumentException role = assertThrows(IllegalArgumentException.class,
        () -> StrataConf.from(Map.of(P + "s3.credentialsProvider", "assumed-role"), Map.of()).s3());
    assertTrue(role.getMessage().contains("fs.s3a.assumed.role.arn"), role.getMessage());
    IllegalArgumentException longSession = assertThrows(IllegalArgumentException.class,
        () -> StrataConf.from(Map.of(), Map.of("fs.s3a.aws.credentials.provider",
            "org.apache.hadoop.fs.s3a.auth.AssumedRoleCredentialProvider",
            "fs.s3a.assumed.role.arn", "arn:aws:iam::123456789012:role/r",
            "fs.s3a.assumed.role.session.duration", "13h")).s3());
    assertTrue(longSession.getMessage().contains("for fs.s3a.assumed.role.session.duration:"),
        "names the key that was set: " + longSession.getMessage());
  }

  @Test
  void s3asAssumedRoleKeysReachTheRole() {
    StrataConf c = StrataConf.from(Map.of(P + "s3.credentialsFile", "/etc/strata/credentials",
        P + "s3.profile", "ckpt"), S3aFallbacks.from(Map.of("fs.s3a.aws.credentials.provider",
        "org.apache.hadoop.fs.s3a.auth.AssumedRoleCredentialProvider",
        "fs.s3a.assumed.role.arn", "arn:aws:iam::123456789012:role/r",
        "fs.s3a.assumed.role.session.name", "etl", "fs.s3a.assumed.role.session.duration", "30m",
        "fs.s3a.assumed.role.sts.endpoint", "sts.eu-west-1.amazonaws.com")::get));
    S3Credentials creds = c.s3().credentials();
    assertEquals(List.of(Provider.ASSUMED_ROLE), creds.providers());
    S3Credentials.AssumedRole role = creds.assumedRole().orElseThrow();
    assertEquals("arn:aws:iam::123456789012:role/r", role.roleArn());
    assertEquals("etl", role.sessionName());
    assertEquals(Duration.ofMinutes(30), role.sessionDuration());
    assertEquals("https://sts.eu-west-1.amazonaws.com", role.stsEndpoint().orElseThrow()
        .toString());
    assertEquals(Optional.of(Path.of("/etc/strata/credentials")), creds.profileFile());
    assertEquals(Optional.of("ckpt"), creds.profileName());
  }

  @Test
  void hadoopsShippedDefaultListCountsAsUnset() {
    // What every Hadoop Configuration returns for the key when nobody set it (core-default.xml).
    String shipped = "\n    org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider,\n"
        + "    org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider,\n"
        + "    software.amazon.awssdk.auth.credentials.EnvironmentVariableCredentialsProvider,\n"
        + "    org.apache.hadoop.fs.s3a.auth.IAMInstanceCredentialsProvider\n  ";
    StrataConf c = StrataConf.from(Map.of(), S3aFallbacks.from(
        Map.of("fs.s3a.aws.credentials.provider", shipped)::get, "b"));
    assertEquals(S3Credentials.AUTO, c.s3().credentials(),
        "Strata's default, which also reads web identity");
    StrataConf reordered = StrataConf.from(Map.of(), S3aFallbacks.from(Map.of(
        "fs.s3a.aws.credentials.provider",
        "org.apache.hadoop.fs.s3a.auth.IAMInstanceCredentialsProvider")::get, "b"));
    assertEquals(List.of(Provider.CONTAINER, Provider.INSTANCE_PROFILE),
        reordered.s3().credentials().providers(), "a list someone set is honoured");
  }

  @Test
  void inAChainKeyProvidersWithoutTheirKeysAreSkippedAsS3aSkipsThem() {
    StrataConf none = StrataConf.from(Map.of(P + "s3.credentialsProvider",
        "temporary,static,environment"), Map.of());
    assertEquals(List.of(Provider.ENVIRONMENT), none.s3().credentials().providers());
    StrataConf keys = StrataConf.from(Map.of(P + "s3.credentialsProvider",
        "temporary,static,environment", P + "s3.accessKeyId", "AK", P + "s3.secretAccessKey",
        "SK"), Map.of());
    assertEquals(List.of(Provider.STATIC, Provider.ENVIRONMENT),
        keys.s3().credentials().providers(), "no session token: temporary yields nothing");
    IllegalArgumentException both = assertThrows(IllegalArgumentException.class,
        () -> StrataConf.from(Map.of(P + "s3.credentialsProvider", "temporary,static"),
            Map.of()).s3());
    assertTrue(both.getMessage().contains(P + "s3.accessKeyId"), both.getMessage());
  }

  @Test
  void withoutAProviderListTheDefaultIsUnchanged() {
    assertEquals(S3Credentials.AUTO, StrataConf.from(Map.of(), Map.of()).s3().credentials());
  }

  /**
   * Issue 41: the class names come from a resource (shading rewrites string constants that look
   * like SDK class names), every entry maps to known providers, and S3A's secret keys are named.
   */
  @Test
  void theNamesResourceCoversS3asAndBothSdksNamesAndTheSecretKeysAreKnown() {
    assertEquals(24, CredentialProviderNames.CLASSES.size(),
        "entries of the resource (S3A 7, SDK 2.x 8, SDK 1.x 9)");
    assertTrue(CredentialProviderNames.CLASSES.keySet().stream().anyMatch(
        n -> n.startsWith("software.amazon.awssdk.auth.credentials.")));
    assertEquals(2, S3aFallbacks.HADOOP_DEFAULT_PROVIDERS.size());
    for (List<String> list : S3aFallbacks.HADOOP_DEFAULT_PROVIDERS) {
      assertEquals(4, list.size(), list.toString());
      list.forEach(n -> assertTrue(CredentialProviderNames.CLASSES.containsKey(n), n));
    }
    for (String secret : List.of("fs.s3a.access.key", "fs.s3a.secret.key",
        "fs.s3a.session.token", "fs.s3a.encryption.key", "fs.s3a.bucket.b.secret.key",
        "fs.s3a.bucket.my.bucket.access.key", "fs.s3a.server-side-encryption.key")) {
      assertTrue(S3aFallbacks.isSecret(secret), secret);
    }
    for (String plain : List.of("fs.s3a.endpoint", "fs.s3a.bucket.b.endpoint",
        "fs.s3a.bucket.access.key", "fs.s3a.access.key.extra")) {
      assertFalse(S3aFallbacks.isSecret(plain), plain);
    }
  }
}
