package io.strata.config;

import java.util.HashMap;
import java.util.List;
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

  private S3aFallbacks() { }

  /**
   * The fallback entries present in {@code lookup}, trimmed; blank values are left out. An
   * {@code fs.s3a.endpoint} without a scheme gets {@code https://}, or {@code http://} when
   * {@code fs.s3a.connection.ssl.enabled} is {@code false} (S3A's own rule).
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
    return m;
  }
}
