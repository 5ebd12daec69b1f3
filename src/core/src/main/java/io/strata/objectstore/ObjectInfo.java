// SPDX-License-Identifier: Apache-2.0
package io.strata.objectstore;

import java.util.Map;

/**
 * What a HEAD or LIST tells about one object.
 *
 * @param key key relative to the store root
 * @param size size in bytes
 * @param lastModifiedMillis server-side last-modified time, epoch milliseconds (S3 keeps whole
 *     seconds); used only to order attempts and for grace periods, never to decide reachability;
 *     0 when the server returned none (garbage collection then treats the object as too young
 *     to delete)
 * @param metadata user metadata (S3 {@code x-amz-meta-*}, lower-case names without the prefix);
 *     empty from LIST, which does not return it
 */
public record ObjectInfo(String key, long size, long lastModifiedMillis, Map<String, String> metadata) {
  public ObjectInfo {
    metadata = Map.copyOf(metadata);
  }
}
