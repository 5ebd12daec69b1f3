// SPDX-License-Identifier: Apache-2.0
package io.strata.hadoop;

import io.strata.config.S3aFallbacks;
import io.strata.config.StrataConf;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.function.Predicate;
import java.util.function.UnaryOperator;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.security.alias.CredentialProvider;
import org.apache.hadoop.security.alias.CredentialProviderFactory;

/**
 * Reads S3A's keys from a Hadoop {@code Configuration} as S3A reads them, for {@link
 * S3aFallbacks#from}: a secret ({@link S3aFallbacks#isSecret}: the access and secret keys, the
 * session token, the encryption algorithm and key, and their per-bucket forms) as S3A's {@code
 * S3AUtils.lookupPassword} does, from the credential providers first (a JCEKS store named by
 * {@code fs.s3a.security.credential.provider.path}, per bucket or global, then by {@code
 * hadoop.security.credential.provider.path}), then from the configuration; every other key with
 * {@code get}. Used by the state store provider (executors) and the checkpoint file manager
 * (driver), so both read one set of settings.
 *
 * <p>A lookup is meant for one resolution of the settings: it opens the credential providers
 * once, on the first secret asked for, and keeps each answer. Not thread-safe.
 */
public final class HadoopLookup {
  /** Hadoop's credential provider path ({@code CredentialProviderFactory}). */
  static final String PROVIDER_PATH = CredentialProviderFactory.CREDENTIAL_PROVIDER_PATH;
  /** S3A's own provider path, which S3A puts before Hadoop's ({@code S3AUtils}). */
  static final String S3A_PROVIDER_PATH = "fs.s3a.security.credential.provider.path";
  /** Hadoop's switch for reading a secret from the configuration when no provider has it. */
  static final String CLEAR_TEXT_FALLBACK = "hadoop.security.credential.clear-text-fallback";

  private final Configuration conf;
  private final String bucket;
  private final Predicate<String> unused;
  private final Map<String, Optional<String>> secrets = new HashMap<>();
  private List<CredentialProvider> providers;
  private String providerPath;

  private HadoopLookup(Configuration conf, String bucket, Predicate<String> unused) {
    this.conf = conf;
    this.bucket = bucket;
    this.unused = unused;
  }

  /**
   * Strata's settings as the Spark layer reads them, for the state store provider (executors)
   * and the checkpoint file manager (driver) alike: {@code strata}'s keys, then S3A's fallbacks
   * for {@code bucket} read from {@code hadoop} by a lookup of this class, only when the S3
   * settings are first resolved ({@link StrataConf#s3()}) and never for the keys {@code strata}
   * makes unused ({@link StrataConf#unusedFallbacks}).
   *
   * @param strata Strata's keys (full names) and any other Spark SQL settings
   * @param hadoop the job's Hadoop configuration; null for none
   * @param bucket the location's bucket, for S3A's per-bucket keys; null off S3
   * @throws IllegalArgumentException as {@link StrataConf#from(Map, java.util.function.Supplier)}
   */
  public static StrataConf strataConf(Map<String, String> strata, Configuration hadoop,
      String bucket) {
    return StrataConf.from(strata, () -> S3aFallbacks.from(
        of(hadoop, bucket, StrataConf.unusedFallbacks(strata)), bucket));
  }

  /**
   * A key lookup over {@code conf}; null gives null (no Hadoop settings).
   *
   * <p>The returned lookup throws {@link IllegalArgumentException} when a credential provider
   * cannot be read (a missing or damaged keystore, a wrong keystore password: the executors need
   * {@code HADOOP_CREDSTORE_PASSWORD} in their environment for a store with its own password),
   * naming the key and the provider path, never a secret.
   *
   * @param conf the job's Hadoop configuration, not modified
   * @param bucket the checkpoint's bucket, whose {@code fs.s3a.bucket.<bucket>.*} keys S3A reads
   *     first (the provider path and the long per-bucket form of a secret key included); null
   *     for none
   * @param unused the keys Strata's own settings make unused ({@code
   *     StrataConf.unusedFallbacks}): they answer null without opening a credential provider
   */
  public static UnaryOperator<String> of(Configuration conf, String bucket,
      Predicate<String> unused) {
    if (conf == null) {
      return null;
    }
    HadoopLookup lookup = new HadoopLookup(conf, bucket, unused);
    return lookup::get;
  }

  private String get(String key) {
    if (unused.test(key)) {
      return null;
    }
    if (!S3aFallbacks.isSecret(key)) {
      return conf.get(key);
    }
    Optional<String> known = secrets.get(key);
    if (known == null) {
      known = Optional.ofNullable(lookupPassword(key));
      secrets.put(key, known);
    }
    return known.orElse(null);
  }

  /**
   * A secret as S3A reads it: for a per-bucket key, its long form {@code
   * fs.s3a.bucket.<bucket>.fs.s3a.<option>} first (S3A's {@code lookupPassword}), then the key.
   */
  private String lookupPassword(String key) {
    String perBucket = bucket == null ? null : "fs.s3a.bucket." + bucket + ".";
    if (perBucket != null && key.startsWith(perBucket)) {
      String longForm = perBucket + "fs.s3a." + key.substring(perBucket.length());
      String v = password(longForm, key);
      if (v != null && !v.isEmpty()) {
        return v;
      }
    }
    return password(key, key);
  }

  /**
   * As {@code Configuration.getPassword}, with the providers opened once.
   *
   * @param asked the key the settings asked for, named in an error
   */
  private String password(String key, String asked) {
    try {
      for (CredentialProvider p : providers()) {
        CredentialProvider.CredentialEntry entry = p.getCredentialEntry(key);
        if (entry != null && entry.getCredential() != null) {
          return new String(entry.getCredential());
        }
      }
    } catch (IOException | RuntimeException e) {
      throw new IllegalArgumentException("Cannot read " + asked + " from the credential "
          + "providers " + providerPath + " (" + S3A_PROVIDER_PATH + ", then " + PROVIDER_PATH
          + "): " + e.getMessage(), e);
    }
    return conf.getBoolean(CLEAR_TEXT_FALLBACK, true) ? conf.get(key) : null;
  }

  /**
   * The credential providers as S3A sees them for the bucket: its per-bucket provider path (or
   * the global one) before Hadoop's, without providers kept in S3 itself (S3A excludes those,
   * which would need S3A to read), opened on first use.
   */
  private List<CredentialProvider> providers() throws IOException {
    if (providers != null) {
      return providers;
    }
    String s3aPath = bucket == null ? null
        : conf.getTrimmed("fs.s3a.bucket." + bucket + ".security.credential.provider.path");
    if (s3aPath == null) {
      s3aPath = conf.getTrimmed(S3A_PROVIDER_PATH, "");
    }
    String hadoopPath = conf.getTrimmed(PROVIDER_PATH, "");
    List<String> entries = new ArrayList<>();
    for (String path : List.of(s3aPath, hadoopPath)) {
      for (String e : path.split(",")) {
        if (!e.isBlank() && !inS3(e.strip())) {
          entries.add(e.strip());
        }
      }
    }
    providerPath = entries.isEmpty() ? "(none)" : redacted(String.join(",", entries));
    if (entries.isEmpty()) {
      providers = List.of();
      return providers;
    }
    Configuration only = new Configuration(conf);
    only.set(PROVIDER_PATH, String.join(",", entries));
    providers = CredentialProviderFactory.getProviders(only);
    return providers;
  }

  /**
   * Whether a provider URI keeps its store where S3A would have to read it ({@code
   * jceks://s3a@bucket/path}): S3A leaves those out ({@code
   * ProviderUtils.excludeIncompatibleCredentialProviders}), those whose nested scheme's file
   * system is S3A's ({@code fs.<scheme>.impl}, as Hadoop's {@code unnestUri} reads the scheme).
   */
  private boolean inS3(String provider) {
    int start = provider.indexOf("://");
    int at = provider.indexOf('@');
    int slash = provider.indexOf('/', start + 3);
    if (start < 0 || at < 0 || slash >= 0 && at > slash) {
      return false; // no nested scheme: a local file, say
    }
    String nested = provider.substring(start + 3, at).toLowerCase(Locale.ROOT);
    String impl = conf.getTrimmed("fs." + nested + ".impl", "");
    return impl.equals("org.apache.hadoop.fs.s3a.S3AFileSystem")
        || nested.equals("s3a") && impl.isEmpty();
  }

  /** A provider path for messages, without user info ({@code user:password@}) in a URI. */
  static String redacted(String path) {
    return path.replaceAll("(://[^@/,]*@)[^/,]*@", "$1<redacted>@");
  }
}
