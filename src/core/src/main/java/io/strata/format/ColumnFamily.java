// SPDX-License-Identifier: Apache-2.0
package io.strata.format;

import java.util.Objects;

/**
 * One virtual column family of a state store: a name Spark uses ({@code
 * createColFamilyIfAbsent}) mapped to the 2-byte id that prefixes every RocksDB key of the family
 * (see docs/format.md, "Keys and values inside the SSTs"). The family {@code default} always has
 * id 0 and is never listed.
 *
 * @param name the family's name as Spark gave it (non-empty, no leading or trailing whitespace,
 *     not {@code default})
 * @param id the key prefix, 1 to {@link #MAX_ID}, written big-endian as the first 2 key bytes
 * @param internal true for families Spark creates for itself (names starting with {@code $}, or
 *     the stream-stream join's families), false for user state variables
 */
public record ColumnFamily(String name, int id, boolean internal) {
  /** The id of the {@code default} family, which every store has. */
  public static final int DEFAULT_ID = 0;
  /** The name of the family with id 0. */
  public static final String DEFAULT_NAME = "default";
  /** The greatest id 2 key bytes can hold. */
  public static final int MAX_ID = 0xFFFF;

  public ColumnFamily {
    Objects.requireNonNull(name, "name");
    if (name.isEmpty() || !name.trim().equals(name) || name.equals(DEFAULT_NAME)) {
      throw new IllegalArgumentException("invalid column family name '" + name + "'");
    }
    if (id < 1 || id > MAX_ID) {
      throw new IllegalArgumentException("column family id of '" + name + "' must be 1.."
          + MAX_ID + ", was " + id);
    }
  }

  /** The 2 bytes (big-endian id) every key of this family starts with. */
  public byte[] keyPrefix() {
    return keyPrefix(id);
  }

  /**
   * The 2 bytes (big-endian) every key of the family with {@code id} starts with.
   *
   * @throws IllegalArgumentException if {@code id} is not 0..{@link #MAX_ID}
   */
  public static byte[] keyPrefix(int id) {
    if (id < 0 || id > MAX_ID) {
      throw new IllegalArgumentException("column family id must be 0.." + MAX_ID + ", was " + id);
    }
    return new byte[] {(byte) (id >>> 8), (byte) id};
  }
}
