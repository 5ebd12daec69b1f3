// SPDX-License-Identifier: Apache-2.0
package io.strata.objectstore;

import java.util.List;

/**
 * One level of the key tree under a prefix, as S3 ListObjectsV2 with delimiter {@code '/'}
 * returns it: the objects whose key has no further '/' after the prefix, and the common
 * prefixes (the "subdirectories") that group all deeper keys.
 *
 * @param objects objects directly under the prefix, in ascending key order (keys relative to
 *     the store root; metadata empty, as LIST does not return it)
 * @param commonPrefixes distinct prefixes of deeper keys, each ending with '/', relative to the
 *     store root, in ascending order
 */
public record DelimitedListing(List<ObjectInfo> objects, List<String> commonPrefixes) {
  public DelimitedListing {
    objects = List.copyOf(objects);
    commonPrefixes = List.copyOf(commonPrefixes);
  }
}
