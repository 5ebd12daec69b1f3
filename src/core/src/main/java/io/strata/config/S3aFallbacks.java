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

  private S3aFallbacks() { }

  /**
   * The fallback entries present in {@code lookup}, trimmed; blank values are left out. An
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
  public static Map<String, String> from(UnaryOperator<String> lookup) {
    Map<String, String> m = new HashMap<>();
    if (lookup == null) {
      return m;
    }
    for (String k : KEYS) {
      String v = lookup.apply(k);
      if (v == null || v.isBlank()) {
        continue;
      }
      v = v.trim();
      if (k.equals(ENDPOINT) && !v.contains("://")) {
        String ssl = lookup.apply("fs.s3a.connection.ssl.enabled");
        boolean https = ssl == null || !ssl.trim().equalsIgnoreCase("false");
        v = (https ? "https://" : "http://") + v;
      }
      m.put(k, v);
    }
    encryption(lookup, m);
    return m;
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

  private static String trimmed(String v) {
    return v == null || v.isBlank() ? null : v.trim();
  }
}
