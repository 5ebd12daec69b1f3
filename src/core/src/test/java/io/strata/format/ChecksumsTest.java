// SPDX-License-Identifier: Apache-2.0
package io.strata.format;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

class ChecksumsTest {
  @Test
  void hexIsSixteenLowerCaseDigitsAndParsesBack() {
    // The manifests' form (docs/format.md): unsigned, zero-padded, lower case.
    for (long c : new long[] {0L, 1L, 0xabcdefL, -1L, Long.MIN_VALUE, 0x0123456789abcdefL,
        0xfedcba9876543210L}) {
      String hex = Checksums.hex(c);
      assertEquals(String.format("%016x", c), hex);
      assertEquals(c, Checksums.parseHex(hex));
    }
  }
}
