// SPDX-License-Identifier: Apache-2.0
package io.strata.checkpoint;

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
    Map<String, String> fallbacks = S3aFallbacks.from(HadoopLookup.of(defaults), "bucket");
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
        S3aFallbacks.from(HadoopLookup.of(conf), "bucket"));
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

    S3Settings s3 = StrataConf.from(Map.of(), S3aFallbacks.from(HadoopLookup.of(conf), "b")).s3();
    assertEquals("AKIDJCEKS", s3.accessKeyId().orElseThrow());
    assertEquals("secret-from-jceks", s3.secretAccessKey().orElseThrow());
    // A bucket's own keys, one in the store and one in the configuration, as S3A pairs them.
    S3Settings other = StrataConf.from(Map.of(),
        S3aFallbacks.from(HadoopLookup.of(conf), "other")).s3();
    assertEquals("AKIDOTHER", other.accessKeyId().orElseThrow());
    assertEquals("other-secret", other.secretAccessKey().orElseThrow());

    // S3A's own provider path, without Hadoop's.
    Configuration s3aPath = new Configuration();
    s3aPath.set("fs.s3a.security.credential.provider.path", "jceks://file" + jceks);
    assertEquals("AKIDJCEKS", StrataConf.from(Map.of(),
        S3aFallbacks.from(HadoopLookup.of(s3aPath), "b")).s3().accessKeyId().orElseThrow());
  }

  @Test
  void anUnreadableCredentialStoreIsAnErrorNamingTheSettingNotASecret() throws Exception {
    Path damaged = dir.resolve("damaged.jceks");
    Files.writeString(damaged, "not a keystore");
    Configuration conf = new Configuration();
    conf.set(CredentialProviderFactory.CREDENTIAL_PROVIDER_PATH, "jceks://file" + damaged);
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> S3aFallbacks.from(HadoopLookup.of(conf), "b"));
    // The first key read: the bucket's own access key (S3A reads it before the global one).
    assertTrue(e.getMessage().contains("fs.s3a.bucket.b.access.key")
        && e.getMessage().contains("hadoop.security.credential.provider.path"), e.getMessage());
  }
}
