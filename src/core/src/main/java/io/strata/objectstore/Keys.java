// SPDX-License-Identifier: Apache-2.0
package io.strata.objectstore;

import java.util.Comparator;

/**
 * Rules for object keys shared by every {@link ObjectStore}: one validation and one order, so
 * code tested against the local store behaves the same on S3.
 */
final class Keys {
  /**
   * Ascending key order as S3 lists it: by UTF-8 bytes, which is the same as by Unicode code
   * points (not by UTF-16 code units, as {@link String#compareTo} would).
   */
  static final Comparator<String> ORDER = Keys::compare;

  private Keys() { }

  /**
   * Checks that {@code key} is a '/'-separated relative path: not empty, no leading or trailing
   * '/', no empty, "." or ".." segment, no backslash and no NUL.
   *
   * @return {@code key}
   * @throws IllegalArgumentException naming the key and the rule it breaks
   */
  static String validate(String key) {
    if (key == null || key.isEmpty()) {
      throw new IllegalArgumentException("Invalid object key '" + key + "': must not be empty");
    }
    if (key.indexOf('\\') >= 0 || key.indexOf('\0') >= 0) {
      throw new IllegalArgumentException(
          "Invalid object key '" + key + "': must not contain '\\' or NUL");
    }
    if (key.startsWith("/")) {
      throw new IllegalArgumentException(
          "Invalid object key '" + key + "': must be relative (no leading '/')");
    }
    for (String segment : key.split("/", -1)) {
      if (segment.isEmpty() || segment.equals(".") || segment.equals("..")) {
        throw new IllegalArgumentException("Invalid object key '" + key
            + "': segments must not be empty, '.' or '..'");
      }
    }
    return key;
  }

  /**
   * Checks a listing prefix: empty (everything), or a key prefix that may end with '/' but
   * otherwise follows {@link #validate}'s rules for its complete segments.
   *
   * @return {@code prefix}
   * @throws IllegalArgumentException naming the prefix
   */
  static String validatePrefix(String prefix) {
    if (prefix == null) {
      throw new IllegalArgumentException("Invalid list prefix: null");
    }
    if (prefix.isEmpty()) {
      return prefix;
    }
    String body = prefix.endsWith("/") ? prefix.substring(0, prefix.length() - 1) : prefix;
    try {
      validate(body);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("Invalid list prefix '" + prefix + "': "
          + "must be empty or a relative key prefix without empty, '.' or '..' segments", e);
    }
    return prefix;
  }

  /** Compares by Unicode code points (equivalently by UTF-8 bytes), as S3 orders keys. */
  static int compare(String a, String b) {
    int i = 0;
    int j = 0;
    while (i < a.length() && j < b.length()) {
      int ca = a.codePointAt(i);
      int cb = b.codePointAt(j);
      if (ca != cb) {
        return Integer.compare(ca, cb);
      }
      i += Character.charCount(ca);
      j += Character.charCount(cb);
    }
    return Integer.compare(a.length() - i, b.length() - j);
  }
}
