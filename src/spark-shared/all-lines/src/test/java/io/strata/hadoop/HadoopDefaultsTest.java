// SPDX-License-Identifier: Apache-2.0
package io.strata.hadoop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.config.S3aFallbacks;
import io.strata.config.StrataConf;
import io.strata.objectstore.S3Settings;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.security.alias.CredentialProvider;
import org.apache.hadoop.security.alias.CredentialProviderFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What Strata reads from a Hadoop configuration, read from the defaults the line's own Hadoop
 * ships ({@code core-default.xml} of Hadoop 3.3 on Spark 3.5, 3.4 and 3.5 on 4.x), as a user's
 * job has them (issue 41), and secrets kept in a JCEKS credential store, as S3A reads them.
 */
class HadoopDefaultsTest {
  @TempDir Path dir;

  @Test
  void hadoopsShippedDefaultsResolveToStratasDefaults() {
    Configuration defaults = new Configuration();
    assertNotNull(defaults.get("fs.s3a.aws.credentials.provider"),
        "Hadoop ships a provider list (core-default.xml)");
    Map<String, String> fallbacks = fallbacks(defaults, "bucket");
    assertFalse(fallbacks.containsKey("fs.s3a.aws.credentials.provider"),
        "Hadoop's shipped provider list reads as unset: " + fallbacks);
    S3Settings s3 = StrataConf.from(Map.of(), fallbacks).s3();
    assertEquals(List.of(), s3.credentials().providers(), "the default: static keys, else the "
        + "SDK's default chain");
    assertTrue(s3.endpoint().isEmpty(), "AWS's endpoint: " + s3.endpoint());
    assertTrue(s3.accessKeyId().isEmpty(), "no keys");
    assertFalse(s3.pathStyleAccess(), "virtual-hosted style, as S3A's default");
  }

  @Test
  void aCheckpointOffS3NeverReadsS3Settings() {
    // S3A's provider list naming static keys that are not set, for other jobs: a store whose
    // checkpoint is not on S3 never resolves it; one on S3 fails naming the keys.
    Configuration conf = new Configuration();
    conf.set("fs.s3a.aws.credentials.provider",
        "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider");
    StrataConf strata = StrataConf.from(Map.of(),
        fallbacks(conf, "bucket"));
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, strata::s3);
    assertTrue(e.getMessage().contains("fs.s3a.aws.credentials.provider")
        && e.getMessage().contains("accessKeyId"), e.getMessage());
    try (var store = io.strata.objectstore.ObjectStores.open(dir.toUri().toString(),
        strata::s3, null)) {
      assertNotNull(store);
    }
  }

  @Test
  void secretsComeFromAJceksStoreAsS3aReadsThem() throws Exception {
    Path jceks = dir.resolve("s3.jceks");
    Configuration conf = new Configuration();
    conf.set(CredentialProviderFactory.CREDENTIAL_PROVIDER_PATH, "jceks://file" + jceks);
    CredentialProvider provider = CredentialProviderFactory.getProviders(conf).get(0);
    provider.createCredentialEntry("fs.s3a.access.key", "AKIDJCEKS".toCharArray());
    provider.createCredentialEntry("fs.s3a.secret.key", "secret-from-jceks".toCharArray());
    provider.createCredentialEntry("fs.s3a.bucket.other.secret.key", "other-secret".toCharArray());
    provider.flush();
    conf.set("fs.s3a.bucket.other.access.key", "AKIDOTHER");

    S3Settings s3 = StrataConf.from(Map.of(), fallbacks(conf, "b")).s3();
    assertEquals("AKIDJCEKS", s3.accessKeyId().orElseThrow());
    assertEquals("secret-from-jceks", s3.secretAccessKey().orElseThrow());
    // A bucket's own keys, one in the store and one in the configuration, as S3A pairs them.
    S3Settings other = StrataConf.from(Map.of(),
        fallbacks(conf, "other")).s3();
    assertEquals("AKIDOTHER", other.accessKeyId().orElseThrow());
    assertEquals("other-secret", other.secretAccessKey().orElseThrow());

    // S3A's own provider path, without Hadoop's.
    Configuration s3aPath = new Configuration();
    s3aPath.set("fs.s3a.security.credential.provider.path", "jceks://file" + jceks);
    assertEquals("AKIDJCEKS", StrataConf.from(Map.of(),
        fallbacks(s3aPath, "b")).s3().accessKeyId().orElseThrow());
  }

  @Test
  void anUnreadableCredentialStoreIsAnErrorNamingTheSettingNotASecret() throws Exception {
    Configuration conf = damagedStore("damaged.jceks");
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> fallbacks(conf, "b"));
    // The first key asked for: the bucket's own access key (S3A reads it before the global one).
    assertTrue(e.getMessage().contains("Cannot read fs.s3a.bucket.b.access.key ")
        && e.getMessage().contains("hadoop.security.credential.provider.path"), e.getMessage());
    assertEquals("jceks://https@<redacted>@example.invalid/x.jceks,jceks://file/tmp/y.jceks",
        HadoopLookup.redacted("jceks://https@user:pw@example.invalid/x.jceks,"
            + "jceks://file/tmp/y.jceks"));
    // A store kept in S3 is skipped, as S3A skips it (reading it would need S3A).
    Configuration inS3 = new Configuration();
    inS3.set(CredentialProviderFactory.CREDENTIAL_PROVIDER_PATH,
        "jceks://s3a@my_bucket/x.jceks");
    inS3.set("fs.s3a.access.key", "AKIDPLAIN");
    inS3.set("fs.s3a.secret.key", "plain-secret");
    assertEquals("AKIDPLAIN",
        StrataConf.from(Map.of(), fallbacks(inS3, "b")).s3().accessKeyId().orElseThrow());
  }

  /** S3A reads the encryption algorithm and key through getPassword too (S3AUtils). */
  @Test
  void anEncryptionAlgorithmAndKeyInAJceksStoreAreRead() throws Exception {
    Configuration conf = jceks("sse.jceks", Map.of("fs.s3a.encryption.algorithm", "SSE-KMS",
        "fs.s3a.encryption.key", "arn:aws:kms:us-east-1:123456789012:key/k"));
    S3Settings s3 = StrataConf.from(Map.of(), fallbacks(conf, "b")).s3();
    assertEquals("aws:kms", s3.writes().serverSideEncryption());
    assertEquals("arn:aws:kms:us-east-1:123456789012:key/k", s3.writes().kmsKeyId().orElseThrow());
  }

  /**
   * S3A's per-bucket provider path replaces the global one for that bucket, and a per-bucket
   * secret's long form ({@code fs.s3a.bucket.<b>.fs.s3a.access.key}) is read first.
   */
  @Test
  void aPerBucketCredentialStoreAndTheLongPerBucketFormAreReadAsS3aReadsThem() throws Exception {
    Configuration conf = jceks("bucket.jceks", Map.of("fs.s3a.access.key", "AKIDBUCKET",
        "fs.s3a.secret.key", "bucket-secret"));
    String path = conf.get(CredentialProviderFactory.CREDENTIAL_PROVIDER_PATH);
    conf.unset(CredentialProviderFactory.CREDENTIAL_PROVIDER_PATH);
    conf.set("fs.s3a.bucket.b.security.credential.provider.path", path);
    assertEquals("AKIDBUCKET", StrataConf.from(Map.of(),
        fallbacks(conf, "b")).s3().accessKeyId()
        .orElseThrow());
    assertTrue(StrataConf.from(Map.of(), fallbacks(conf, "other")).s3().accessKeyId().isEmpty(),
        "another bucket does not read b's store");

    Configuration longForm = new Configuration();
    longForm.set("fs.s3a.bucket.b.fs.s3a.access.key", "AKIDLONG");
    longForm.set("fs.s3a.bucket.b.fs.s3a.secret.key", "long-secret");
    longForm.set("fs.s3a.bucket.b.access.key", "AKIDSHORT");
    longForm.set("fs.s3a.bucket.b.secret.key", "short-secret");
    assertEquals("AKIDLONG", StrataConf.from(Map.of(),
        fallbacks(longForm, "b")).s3().accessKeyId()
        .orElseThrow());
  }

  /**
   * With Strata's own keys and encryption set, S3A's credential and encryption keys are never
   * looked up, so a credential store this job cannot read (a cluster-wide one) does not concern
   * it; nor does any S3A setting a store off S3. With only its own keys, S3A's encryption keys
   * still apply and are read, so the unreadable store fails it, as it would S3A.
   */
  @Test
  void anUnreadableStoreDoesNotConcernAJobWithItsOwnKeysOrOffS3() throws Exception {
    Configuration conf = damagedStore("cluster.jceks");
    Map<String, String> own = Map.of(StrataConf.PREFIX + "s3.accessKeyId", "AKIDOWN",
        StrataConf.PREFIX + "s3.secretAccessKey", "own-secret", StrataConf.PREFIX + "s3.sse",
        "none");
    S3Settings s3 = StrataConf.from(own, () -> S3aFallbacks.from(HadoopLookup.of(conf, "b",
        StrataConf.unusedFallbacks(own)), "b")).s3();
    assertEquals("AKIDOWN", s3.accessKeyId().orElseThrow());
    Map<String, String> keysOnly = Map.of(StrataConf.PREFIX + "s3.accessKeyId", "AKIDOWN",
        StrataConf.PREFIX + "s3.secretAccessKey", "own-secret");
    StrataConf needsStore = StrataConf.from(keysOnly, () -> S3aFallbacks.from(
        HadoopLookup.of(conf, "b", StrataConf.unusedFallbacks(keysOnly)), "b"));
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, needsStore::s3);
    assertTrue(e.getMessage().contains("encryption") && !e.getMessage().contains("own-secret"),
        e.getMessage());
    // Off S3, the fallbacks are never asked for.
    StrataConf offS3 = StrataConf.from(Map.of(), () -> {
      throw new AssertionError("S3A's settings read for a store off S3");
    });
    try (var store = io.strata.objectstore.ObjectStores.open(dir.toUri().toString(),
        offS3::s3, null)) {
      assertNotNull(store);
    }
  }

  /** A configuration whose credential provider path names a new JCEKS store of {@code secrets}. */
  private Configuration jceks(String name, Map<String, String> secrets) throws Exception {
    Configuration conf = new Configuration();
    conf.set(CredentialProviderFactory.CREDENTIAL_PROVIDER_PATH,
        "jceks://file" + dir.resolve(name));
    CredentialProvider provider = CredentialProviderFactory.getProviders(conf).get(0);
    for (Map.Entry<String, String> e : secrets.entrySet()) {
      provider.createCredentialEntry(e.getKey(), e.getValue().toCharArray());
    }
    provider.flush();
    return conf;
  }

  /** S3A's fallbacks for {@code bucket} as the provider reads them, every key read. */
  private static Map<String, String> fallbacks(Configuration conf, String bucket) {
    return S3aFallbacks.from(HadoopLookup.of(conf, bucket, k -> false), bucket);
  }

  /** A configuration whose credential provider path names a file that is no keystore. */
  private Configuration damagedStore(String name) throws Exception {
    Path damaged = dir.resolve(name);
    Files.writeString(damaged, "not a keystore");
    Configuration conf = new Configuration();
    conf.set(CredentialProviderFactory.CREDENTIAL_PROVIDER_PATH, "jceks://file" + damaged);
    return conf;
  }
}
