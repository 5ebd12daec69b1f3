// SPDX-License-Identifier: Apache-2.0
package io.strata.config;

import java.net.URI;
import java.net.URISyntaxException;
import java.time.Duration;
import java.util.Locale;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Value parsers shared by the options; each throws IllegalArgumentException saying what is allowed. */
final class Parsers {
  private static final Pattern DURATION = Pattern.compile("(\\d+)\\s*(ms|s|m|min|h|d)?");

  private Parsers() { }

  static Function<String, Integer> intAtLeast(int min) {
    return s -> {
      int v;
      try {
        v = Integer.parseInt(s.trim());
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException("expected an integer >= " + min);
      }
      if (v < min) {
        throw new IllegalArgumentException("expected an integer >= " + min);
      }
      return v;
    };
  }

  static Boolean bool(String s) {
    String t = s.trim().toLowerCase(Locale.ROOT);
    if (t.equals("true")) {
      return true;
    }
    if (t.equals("false")) {
      return false;
    }
    throw new IllegalArgumentException("expected true or false");
  }

  /**
   * A positive duration: a number with unit ms, s, m/min, h or d (Spark's style); a bare number
   * means milliseconds.
   */
  static Duration positiveDuration(String s) {
    Matcher m = DURATION.matcher(s.trim().toLowerCase(Locale.ROOT));
    if (!m.matches()) {
      throw new IllegalArgumentException(
          "expected a positive duration such as 500ms, 30s, 5m, 1h (bare numbers are ms)");
    }
    String unit = m.group(2) == null ? "ms" : m.group(2);
    Duration d;
    try {
      long n = Long.parseLong(m.group(1));
      d = switch (unit) {
        case "ms" -> Duration.ofMillis(n);
        case "s" -> Duration.ofSeconds(n);
        case "m", "min" -> Duration.ofMinutes(n);
        case "h" -> Duration.ofHours(n);
        case "d" -> Duration.ofDays(n);
        default -> throw new IllegalArgumentException("unknown unit " + unit);
      };
      d.toMillis(); // must fit in milliseconds
    } catch (NumberFormatException | ArithmeticException e) {
      throw new IllegalArgumentException("expected a duration that fits in 64-bit milliseconds");
    }
    if (d.isZero()) {
      throw new IllegalArgumentException("expected a positive duration, not zero");
    }
    return d;
  }

  /** A {@link #positiveDuration} of at least {@code min}. */
  static Duration durationAtLeast(String s, Duration min) {
    Duration d = positiveDuration(s);
    if (d.compareTo(min) < 0) {
      throw new IllegalArgumentException("expected a duration of at least " + text(min));
    }
    return d;
  }

  /**
   * A duration as text {@link #positiveDuration} reads back: the largest unit (h, m, s, ms) that
   * divides it exactly, for example {@code 1h}, {@code 2m}, {@code 30s}, {@code 500ms}.
   */
  static String text(Duration d) {
    long ms = d.toMillis();
    if (ms != 0 && ms % 3_600_000 == 0) {
      return ms / 3_600_000 + "h";
    }
    if (ms != 0 && ms % 60_000 == 0) {
      return ms / 60_000 + "m";
    }
    return ms % 1000 == 0 ? ms / 1000 + "s" : ms + "ms";
  }

  /**
   * A size in bytes: a number with unit b, k/kb, m/mb, g/gb (binary multiples, Spark's style);
   * a bare number means bytes; 0 is allowed where the caller treats it as "off".
   */
  static Long bytes(String s) {
    Matcher m = Pattern.compile("(\\d+)\\s*(b|k|kb|m|mb|g|gb)?")
        .matcher(s.trim().toLowerCase(Locale.ROOT));
    if (!m.matches()) {
      throw new IllegalArgumentException(
          "expected a size such as 64m, 512k or 1g (bare numbers are bytes)");
    }
    String unit = m.group(2) == null ? "b" : m.group(2);
    int shift = switch (unit) {
      case "b" -> 0;
      case "k", "kb" -> 10;
      case "m", "mb" -> 20;
      default -> 30;
    };
    try {
      long n = Long.parseLong(m.group(1));
      if (n > (Long.MAX_VALUE >> shift)) {
        throw new NumberFormatException();
      }
      return n << shift;
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("expected a size below 8 EiB");
    }
  }

  /**
   * {@code auto} (empty) or a size as {@link #bytes} of at least {@code minBytes}.
   */
  static Function<String, java.util.Optional<Long>> sizeOrAuto(long minBytes) {
    return s -> {
      if (s.trim().equalsIgnoreCase("auto")) {
        return java.util.Optional.empty();
      }
      long v;
      try {
        v = bytes(s);
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException("expected auto or a size such as 512m or 2g "
            + "(bare numbers are bytes)");
      }
      if (v < minBytes) {
        throw new IllegalArgumentException("expected auto or a size of at least "
            + (minBytes >> 20) + "m");
      }
      return java.util.Optional.of(v);
    };
  }

  /** An absolute http(s) URI with a host, for an S3 endpoint. */
  static URI endpoint(String s) {
    URI uri;
    try {
      uri = new URI(s.trim());
    } catch (URISyntaxException e) {
      throw new IllegalArgumentException("expected an http:// or https:// URL such as "
          + "http://127.0.0.1:9000 (" + e.getReason() + ")");
    }
    String scheme = uri.getScheme() == null ? "" : uri.getScheme().toLowerCase(Locale.ROOT);
    if (!(scheme.equals("http") || scheme.equals("https")) || uri.getHost() == null) {
      throw new IllegalArgumentException(
          "expected an http:// or https:// URL with a host, such as http://127.0.0.1:9000");
    }
    if (uri.getUserInfo() != null) {
      throw new IllegalArgumentException("credentials must not be embedded in the endpoint URL");
    }
    return uri;
  }

  /** An AWS region name such as us-east-1 (lower case letters, digits and dashes). */
  static String region(String s) {
    String t = s.trim();
    if (!t.matches("[a-z]{2}(-[a-z0-9]+)+-\\d+|[a-z0-9-]+")) {
      throw new IllegalArgumentException("expected an AWS region name such as us-east-1");
    }
    return t;
  }

  /** An S3 storage class name, case-insensitive (see {@code S3WriteSettings}). */
  static String storageClass(String s) {
    String t = s.trim().toUpperCase(Locale.ROOT);
    io.strata.objectstore.S3WriteSettings.checkStorageClass(t);
    return t;
  }

  static String nonBlank(String s) {
    if (s.isBlank()) {
      throw new IllegalArgumentException("expected a non-empty value");
    }
    return s.trim();
  }
}
