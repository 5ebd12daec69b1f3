// SPDX-License-Identifier: Apache-2.0
package io.strata.config;

import io.strata.objectstore.S3WriteSettings;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.UnaryOperator;

/**
 * The Hadoop S3A settings Strata falls back to when its own S3 settings are not set, read from
 * any key lookup (a Hadoop {@code Configuration}'s {@code get}), so this package needs no Hadoop
 * import. Both the state store provider (executors) and the checkpoint file manager (driver)
 * resolve their S3 settings through {@link StrataConf#from} with these fallbacks, so one set of
 * settings reaches both.
 */
public final class S3aFallbacks {
  /**
   * Global S3A keys read as fallbacks (not per-bucket {@code fs.s3a.bucket.*} keys): every
   * option's {@link ConfigOption#fallbackKey}, in {@link StrataConf#OPTIONS} order.
   */
  static final List<String> KEYS = StrataConf.OPTIONS.stream()
      .flatMap(o -> o.fallbackKey().stream()).toList();
  /** The endpoint's fallback key, {@code fs.s3a.endpoint}, which may come without a scheme. */
  private static final String ENDPOINT = StrataConf.S3_ENDPOINT.fallbackKey().orElseThrow();
  /** S3A's encryption algorithm, {@code fs.s3a.encryption.algorithm}. */
  private static final String SSE = StrataConf.S3_SSE.fallbackKey().orElseThrow();
  /** S3A's encryption key, {@code fs.s3a.encryption.key}. */
  private static final String SSE_KEY = StrataConf.S3_SSE_KMS_KEY_ID.fallbackKey().orElseThrow();
  /** The names S3A had for them before Hadoop 3.3 (still read by S3A, as deprecated keys). */
  static final String OLD_SSE = "fs.s3a.server-side-encryption-algorithm";
  static final String OLD_SSE_KEY = "fs.s3a.server-side-encryption.key";
  /** S3A's STS endpoint key, which may come without a scheme as the endpoint may. */
  private static final String STS_ENDPOINT =
      StrataConf.S3_ROLE_STS_ENDPOINT.fallbackKey().orElseThrow();
  /** S3A's prefix, and the prefix of its per-bucket keys ({@code fs.s3a.bucket.<bucket>.}). */
  static final String PREFIX = "fs.s3a.";
  static final String BUCKET_PREFIX = "fs.s3a.bucket.";
  /** S3A's credentials provider list key. */
  static final String PROVIDERS = "fs.s3a.aws.credentials.provider";
  /**
   * Hadoop's shipped values of {@link #PROVIDERS} ({@code core-default.xml} of Hadoop 3.4 and
   * 3.5, and of 3.3 with the SDK v1 name), which every Hadoop {@code Configuration} returns when
   * nobody set the key. Read as unset: Strata's default (the static keys if set, else the SDK's
   * default chain) reads every source they list, and web identity too. Read from the resource
   * {@code hadoop-default-providers.txt}, not written as constants: the runtime jars' shading
   * would rewrite the SDK class name in a constant (see {@link CredentialProviderNames}).
   */
  static final List<List<String>> HADOOP_DEFAULT_PROVIDERS =
      CredentialProviderNames.resourceLines("hadoop-default-providers.txt").stream()
          .map(S3aFallbacks::entries).toList();
  /** S3A's encryption keys, current and deprecated names (algorithm, then key). */
  static final List<String> ENCRYPTION_KEYS = List.of(SSE, SSE_KEY, OLD_SSE, OLD_SSE_KEY);
  /** S3A's credential keys among {@link #SECRET_KEYS}: the static keys and session token. */
  public static final List<String> CREDENTIAL_KEYS = List.of("fs.s3a.access.key",
      "fs.s3a.secret.key", "fs.s3a.session.token");

  /**
   * The S3A keys S3A reads with {@code Configuration.getPassword} (its {@code
   * S3AUtils.lookupPassword}): from the credential providers of {@code
   * hadoop.security.credential.provider.path} (a JCEKS store, say) first, then from the
   * configuration itself. The credential keys, and the encryption algorithm and key (current
   * and deprecated names). A lookup handed to {@link #from} reads these (and their per-bucket
   * forms, see {@link #isSecret}) the same way.
   */
  public static final List<String> SECRET_KEYS = java.util.stream.Stream.concat(
      CREDENTIAL_KEYS.stream(), ENCRYPTION_KEYS.stream()).toList();

  /**
   * Whether S3A reads {@code key} as a secret ({@code getPassword}): one of {@link
   * #SECRET_KEYS}, or its per-bucket form {@code fs.s3a.bucket.<bucket>.<rest>}.
   */
  public static boolean isSecret(String key) {
    return oneOf(key, SECRET_KEYS);
  }

  /** Whether {@code key} is one of {@link #CREDENTIAL_KEYS}, or its per-bucket form. */
  public static boolean isCredential(String key) {
    return oneOf(key, CREDENTIAL_KEYS);
  }

  /** Whether {@code key} is one of S3A's encryption keys (current or deprecated), or per bucket. */
  public static boolean isEncryption(String key) {
    return oneOf(key, ENCRYPTION_KEYS);
  }

  private static boolean oneOf(String key, List<String> keys) {
    if (keys.contains(key)) {
      return true;
    }
    if (!key.startsWith(BUCKET_PREFIX)) {
      return false;
    }
    String rest = key.substring(BUCKET_PREFIX.length());
    return keys.stream().anyMatch(k -> rest.endsWith("." + k.substring(PREFIX.length()))
        && rest.length() > k.length() - PREFIX.length() + 1);
  }

  /** The entry naming the bucket whose per-bucket keys answered (not an S3A key). */
  static final String BUCKET_ENTRY = "fs.s3a.bucket";
  /**
   * Keys that are taken as one group: if any of a group's keys is set for the bucket (blank
   * included), the group's global keys are all ignored, so a global {@code fs.s3a.access.key}
   * meant for other buckets never pairs with this bucket's secret key, and a global KMS key never
   * encrypts this bucket's objects. The other keys (the provider list, the assumed-role keys)
   * are taken one by one, as S3A's {@code propagateBucketOptions} does.
   */
  static final List<List<String>> GROUPS = List.of(
      List.of("fs.s3a.access.key", "fs.s3a.secret.key", "fs.s3a.session.token"),
      List.of(SSE, SSE_KEY, OLD_SSE, OLD_SSE_KEY));
  /** Deprecated per-bucket names that answer for a key, for messages. */
  private static final Map<String, String> OLD_NAMES = Map.of(SSE, OLD_SSE, SSE_KEY, OLD_SSE_KEY);

  private S3aFallbacks() { }

  /**
   * As {@link #from(UnaryOperator, String)} without per-bucket keys.
   *
   * @param lookup returns the value of a key, or null if unset; null means no Hadoop settings
   * @return entries for {@link StrataConf#from}'s {@code hadoop} argument
   */
  public static Map<String, String> from(UnaryOperator<String> lookup) {
    return from(lookup, null);
  }

  /**
   * The fallback entries present in {@code lookup} for {@code bucket}, trimmed; blank values are
   * left out. S3A's per-bucket keys come first: {@code fs.s3a.bucket.<bucket>.<option>} wins
   * over {@code fs.s3a.<option>} (S3A's {@code S3AUtils.propagateBucketOptions}), a blank one
   * meaning none for the bucket; and for the static keys and the encryption keys ({@link
   * #GROUPS}), one per-bucket key of the group set means no global key of that group is read.
   * A value taken from a per-bucket key
   * is also returned under that key, so errors can name it. Hadoop's shipped default of {@code
   * fs.s3a.aws.credentials.provider} ({@link #HADOOP_DEFAULT_PROVIDERS}) counts as unset. An
   * {@code fs.s3a.endpoint} without a scheme gets {@code https://}, or {@code http://} when
   * {@code fs.s3a.connection.ssl.enabled} is {@code false} (S3A's own rule).
   *
   * <p>S3A's encryption settings are translated: {@code fs.s3a.encryption.algorithm} (or the
   * deprecated {@code fs.s3a.server-side-encryption-algorithm}) {@code SSE-S3} becomes {@code
   * AES256} and {@code SSE-KMS} becomes {@code aws:kms} (S3A's {@code S3AEncryptionMethods}
   * names); other values pass through, so {@link StrataConf#from} refuses them naming the S3A
   * key. The key ({@code fs.s3a.encryption.key}, or the deprecated {@code
   * fs.s3a.server-side-encryption.key}) is kept only with {@code SSE-KMS}, as S3A reads it only
   * then for a KMS key (with {@code SSE-C} it would be the customer's secret key).
   *
   * @param lookup returns the value of a key, or null if unset; null means no Hadoop settings
   * @return entries for {@link StrataConf#from}'s {@code hadoop} argument
   */
  public static Map<String, String> from(UnaryOperator<String> lookup, String bucket) {
    Map<String, String> m = new HashMap<>();
    if (lookup == null) {
      return m;
    }
    Map<String, String> perBucket = new HashMap<>();
    UnaryOperator<String> forBucket = bucketView(lookup, bucket, perBucket);
    for (String k : KEYS) {
      String v = trimmed(forBucket.apply(k));
      if (v == null) {
        continue;
      }
      if ((k.equals(ENDPOINT) || k.equals(STS_ENDPOINT)) && !v.contains("://")) {
        String ssl = forBucket.apply("fs.s3a.connection.ssl.enabled");
        boolean https = ssl == null || !ssl.trim().equalsIgnoreCase("false");
        v = (https ? "https://" : "http://") + v;
      }
      m.put(k, v);
    }
    encryption(forBucket, m);
    if (m.containsKey(PROVIDERS) && HADOOP_DEFAULT_PROVIDERS.contains(entries(m.get(PROVIDERS)))) {
      m.remove(PROVIDERS);
      perBucket.remove(PROVIDERS);
    }
    // A deprecated per-bucket encryption key answered for the current name: name it in errors.
    OLD_NAMES.forEach((current, deprecated) -> {
      if (perBucket.containsKey(deprecated) && !perBucket.containsKey(current)) {
        perBucket.put(current, perBucket.get(deprecated));
      }
    });
    perBucket.forEach((global, bucketKey) -> {
      if (m.containsKey(global)) {
        m.put(bucketKey, m.get(global));
        m.put(BUCKET_ENTRY, bucket);
      }
    });
    return m;
  }

  /**
   * {@code lookup} as S3A sees it for {@code bucket}: a per-bucket key before the global one,
   * and no global key of a group with a per-bucket key set.
   *
   * @param used receives, for each global key answered from a per-bucket key, that key
   */
  private static UnaryOperator<String> bucketView(UnaryOperator<String> lookup, String bucket,
      Map<String, String> used) {
    if (bucket == null || bucket.isEmpty()) {
      return lookup;
    }
    String prefix = BUCKET_PREFIX + bucket + ".";
    // A per-bucket key set to blank is set: S3A copies it over the global one, meaning "none for
    // this bucket", so it hides the global key (and its group) and yields no value.
    UnaryOperator<String> own = k -> lookup.apply(prefix + k.substring(PREFIX.length()));
    return k -> {
      String v = own.apply(k);
      if (v != null) {
        if (v.isBlank()) {
          return null;
        }
        used.put(k, prefix + k.substring(PREFIX.length()));
        return v;
      }
      for (List<String> group : GROUPS) {
        if (group.contains(k) && group.stream().anyMatch(g -> own.apply(g) != null)) {
          return null;
        }
      }
      return lookup.apply(k);
    };
  }

  /**
   * The key a fallback value was read from, for messages: the per-bucket key that {@link
   * #from(UnaryOperator, String)} returned beside {@code globalKey} with the same value, else
   * {@code globalKey}.
   */
  static String sourceKey(Map<String, String> fallbacks, String globalKey) {
    String bucket = fallbacks.get(BUCKET_ENTRY);
    if (bucket == null || !globalKey.startsWith(PREFIX)) {
      return globalKey;
    }
    String key = BUCKET_PREFIX + bucket + "." + globalKey.substring(PREFIX.length());
    if (fallbacks.containsKey(key)) {
      return key;
    }
    String deprecated = OLD_NAMES.get(globalKey);
    if (deprecated != null) {
      String old = BUCKET_PREFIX + bucket + "." + deprecated.substring(PREFIX.length());
      if (fallbacks.containsKey(old)) {
        return old;
      }
    }
    return globalKey;
  }

  private static void encryption(UnaryOperator<String> lookup, Map<String, String> m) {
    String algorithm = m.containsKey(SSE) ? m.get(SSE) : trimmed(lookup.apply(OLD_SSE));
    String key = m.containsKey(SSE_KEY) ? m.get(SSE_KEY) : trimmed(lookup.apply(OLD_SSE_KEY));
    m.remove(SSE);
    m.remove(SSE_KEY);
    if (algorithm == null) {
      return;
    }
    String strata = switch (algorithm.toUpperCase(Locale.ROOT)) {
      case "SSE-S3", "AES256" -> S3WriteSettings.SSE_S3;
      case "SSE-KMS", "AWS:KMS" -> S3WriteSettings.SSE_KMS;
      case "NONE" -> S3WriteSettings.SSE_NONE;
      default -> algorithm; // refused by StrataConf.from, naming fs.s3a.encryption.algorithm
    };
    m.put(SSE, strata);
    if (strata.equals(S3WriteSettings.SSE_KMS) && key != null) {
      m.put(SSE_KEY, key);
    }
  }

  /** A comma-separated list's entries, stripped, blank ones left out. */
  private static List<String> entries(String list) {
    return java.util.Arrays.stream(list.split(",")).map(String::strip)
        .filter(e -> !e.isEmpty()).toList();
  }

  private static String trimmed(String v) {
    return v == null || v.isBlank() ? null : v.trim();
  }
}
