// SPDX-License-Identifier: Apache-2.0
package io.strata.checkpoint;

import io.strata.config.S3aFallbacks;
import java.io.IOException;
import java.util.function.UnaryOperator;
import org.apache.hadoop.conf.Configuration;

/**
 * Reads S3A's keys from a Hadoop {@code Configuration} as S3A reads them, for {@link
 * S3aFallbacks#from}: a secret ({@link S3aFallbacks#isSecret}: the access and secret keys, the
 * session token, the encryption key, and their per-bucket forms) through {@code
 * Configuration.getPassword}, so one kept in a credential provider (a JCEKS store named by {@code
 * hadoop.security.credential.provider.path}, or S3A's own {@code
 * fs.s3a.security.credential.provider.path}) is found as S3A finds it; every other key with
 * {@code get}. Used by the state store provider (executors) and the checkpoint file manager
 * (driver), so both read one set of settings.
 */
public final class HadoopLookup {
  /** Hadoop's credential provider path ({@code CredentialProviderFactory}). */
  static final String PROVIDER_PATH = "hadoop.security.credential.provider.path";
  /** S3A's own provider path, which S3A puts before Hadoop's ({@code S3AUtils}). */
  static final String S3A_PROVIDER_PATH = "fs.s3a.security.credential.provider.path";

  private HadoopLookup() { }

  /**
   * A key lookup over {@code conf}; null gives null (no Hadoop settings).
   *
   * <p>The returned lookup throws {@link IllegalArgumentException} when a credential provider
   * cannot be read (a missing or damaged keystore, a wrong keystore password), naming the key
   * and the provider path setting, never a secret.
   *
   * @param conf the job's Hadoop configuration, not modified
   */
  public static UnaryOperator<String> of(Configuration conf) {
    if (conf == null) {
      return null;
    }
    Configuration passwords = conf;
    String s3aPath = conf.getTrimmed(S3A_PROVIDER_PATH, "");
    if (!s3aPath.isEmpty()) {
      // As S3AUtils.patchSecurityCredentialProviders: S3A's path first, then Hadoop's.
      passwords = new Configuration(conf);
      String hadoopPath = conf.getTrimmed(PROVIDER_PATH, "");
      passwords.set(PROVIDER_PATH, hadoopPath.isEmpty() ? s3aPath : s3aPath + "," + hadoopPath);
    }
    Configuration secrets = passwords;
    return key -> S3aFallbacks.isSecret(key) ? password(secrets, key) : conf.get(key);
  }

  private static String password(Configuration conf, String key) {
    try {
      char[] value = conf.getPassword(key);
      return value == null ? null : new String(value);
    } catch (IOException e) {
      throw new IllegalArgumentException("Cannot read " + key + " from the credential providers "
          + "of " + PROVIDER_PATH + " (or " + S3A_PROVIDER_PATH + "): " + e.getMessage(), e);
    }
  }
}
