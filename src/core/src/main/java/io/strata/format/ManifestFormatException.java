// SPDX-License-Identifier: Apache-2.0
package io.strata.format;

/**
 * Bytes that should hold a manifest or a version object do not: corrupt, truncated, a checksum
 * mismatch, or written by a newer format version. The message says what was wrong; the caller
 * adds the store, version and object key.
 */
public class ManifestFormatException extends Exception {
  private static final long serialVersionUID = 1L;

  public ManifestFormatException(String message, Throwable cause) {
    super(message, cause);
  }
}
