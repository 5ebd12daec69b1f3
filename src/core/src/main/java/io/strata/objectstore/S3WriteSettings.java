// SPDX-License-Identifier: Apache-2.0
package io.strata.objectstore;

import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Optional;

/**
 * Server-side encryption and storage class that every PUT Strata makes carries (S3's {@code
 * x-amz-server-side-encryption}, {@code x-amz-server-side-encryption-aws-kms-key-id} and {@code
 * x-amz-storage-class} request headers). Strata makes no multipart uploads; every object is one
 * PutObject.
 *
 * @param serverSideEncryption {@link #SSE_NONE} (send no header: the bucket's default
 *     encryption applies), {@link #SSE_S3} ({@code AES256}, S3-managed keys) or {@link #SSE_KMS}
 *     ({@code aws:kms}, keys in AWS KMS)
 * @param kmsKeyId the KMS key id, alias or ARN for {@link #SSE_KMS}; empty for the account's
 *     default {@code aws/s3} key; must be empty for the other modes
 * @param storageClass S3 storage class such as {@code STANDARD} or {@code INTELLIGENT_TIERING};
 *     empty to send none (S3's default, {@code STANDARD}). Classes whose objects cannot be read
 *     without a restore ({@code GLACIER}, {@code DEEP_ARCHIVE}) are refused: a checkpoint must be
 *     readable at once
 * @param payloadChecksums true to have the SDK send a CRC32 of every PUT body (an aws-chunked
 *     trailer, {@code RequestChecksumCalculation.WHEN_SUPPORTED}), which S3 verifies before it
 *     stores the object; false to send only the checksums S3 requires ({@code WHEN_REQUIRED}).
 *     Either way every object Strata reads is verified against the XXHash64 its manifest
 *     records, the payload is signed (SigV4) over http and protected by TLS over https
 * @param legacyMd5 true to also send {@code Content-MD5} on the requests S3 requires a checksum
 *     of (for Strata: DeleteObjects), with the SDK's {@code LegacyMd5Plugin}: SDK 2.30 and later
 *     send only a flexible checksum (CRC32) there, which some S3-compatible stores reject. It
 *     costs one MD5 of a DeleteObjects body (at most 1000 keys) per garbage-collection batch
 *     and changes no other request
 */
public record S3WriteSettings(String serverSideEncryption, Optional<String> kmsKeyId,
    Optional<String> storageClass, boolean payloadChecksums, boolean legacyMd5) {

  /** No encryption header. */
  public static final String SSE_NONE = "none";
  /** SSE-S3: {@code x-amz-server-side-encryption: AES256}. */
  public static final String SSE_S3 = "AES256";
  /** SSE-KMS: {@code x-amz-server-side-encryption: aws:kms}. */
  public static final String SSE_KMS = "aws:kms";
  /** Storage classes S3 accepts on PutObject whose objects are readable without a restore. */
  public static final List<String> STORAGE_CLASSES = List.of("STANDARD", "REDUCED_REDUNDANCY",
      "STANDARD_IA", "ONEZONE_IA", "INTELLIGENT_TIERING", "GLACIER_IR", "OUTPOSTS",
      "EXPRESS_ONEZONE");
  /** Storage classes refused because a GET needs a restore first. */
  public static final List<String> ARCHIVE_CLASSES = List.of("GLACIER", "DEEP_ARCHIVE");

  /** No encryption header, no storage class (the bucket's defaults), no payload checksum. */
  public static final S3WriteSettings DEFAULT =
      new S3WriteSettings(SSE_NONE, Optional.empty(), Optional.empty());

  /**
   * Settings without payload checksums.
   *
   * @throws IllegalArgumentException as the canonical constructor
   */
  public S3WriteSettings(String serverSideEncryption, Optional<String> kmsKeyId,
      Optional<String> storageClass) {
    this(serverSideEncryption, kmsKeyId, storageClass, false);
  }

  /**
   * Settings with {@code Content-MD5} on DeleteObjects (the default of {@code s3.legacyMd5}).
   *
   * @throws IllegalArgumentException as the canonical constructor
   */
  public S3WriteSettings(String serverSideEncryption, Optional<String> kmsKeyId,
      Optional<String> storageClass, boolean payloadChecksums) {
    this(serverSideEncryption, kmsKeyId, storageClass, payloadChecksums, true);
  }

  /**
   * Checks the combination.
   *
   * @throws IllegalArgumentException if the encryption mode or storage class is not one listed
   *     above, or a KMS key id comes without {@link #SSE_KMS}
   */
  public S3WriteSettings {
    Objects.requireNonNull(serverSideEncryption, "serverSideEncryption");
    Objects.requireNonNull(kmsKeyId, "kmsKeyId");
    Objects.requireNonNull(storageClass, "storageClass");
    if (!List.of(SSE_NONE, SSE_S3, SSE_KMS).contains(serverSideEncryption)) {
      throw new IllegalArgumentException("server-side encryption must be " + SSE_NONE + ", "
          + SSE_S3 + " or " + SSE_KMS + ", was '" + serverSideEncryption + "'");
    }
    if (kmsKeyId.isPresent() && !serverSideEncryption.equals(SSE_KMS)) {
      throw new IllegalArgumentException("a KMS key id needs server-side encryption " + SSE_KMS
          + ", was " + serverSideEncryption);
    }
    storageClass.ifPresent(S3WriteSettings::checkStorageClass);
  }

  /**
   * Checks one storage class name (upper case, as S3 spells it).
   *
   * @throws IllegalArgumentException saying what is allowed
   */
  public static void checkStorageClass(String s) {
    if (ARCHIVE_CLASSES.contains(s)) {
      throw new IllegalArgumentException("storage class " + s + " needs a restore before "
          + "objects can be read, so a checkpoint in it cannot be loaded; use one of "
          + String.join(", ", STORAGE_CLASSES));
    }
    if (!STORAGE_CLASSES.contains(s)) {
      throw new IllegalArgumentException("expected a storage class, one of "
          + String.join(", ", STORAGE_CLASSES));
    }
  }

  /**
   * Parses a server-side encryption mode: {@code none}, {@code AES256} (or {@code SSE-S3}),
   * {@code aws:kms} (or {@code SSE-KMS}), case-insensitive.
   *
   * @throws IllegalArgumentException saying what is allowed
   */
  public static String parseServerSideEncryption(String s) {
    String t = s.trim().toLowerCase(Locale.ROOT);
    return switch (t) {
      case "none", "" -> SSE_NONE;
      case "aes256", "sse-s3" -> SSE_S3;
      case "aws:kms", "sse-kms" -> SSE_KMS;
      default -> throw new IllegalArgumentException(
          "expected none, AES256 (SSE-S3) or aws:kms (SSE-KMS)");
    };
  }

  /** Never prints more than the KMS key's presence is worth: the id itself is not secret. */
  @Override
  public String toString() {
    return "sse=" + serverSideEncryption + kmsKeyId.map(k -> ", kmsKeyId=" + k).orElse("")
        + storageClass.map(c -> ", storageClass=" + c).orElse("")
        + (payloadChecksums ? ", payloadChecksums=true" : "")
        + (legacyMd5 ? "" : ", legacyMd5=false");
  }
}
