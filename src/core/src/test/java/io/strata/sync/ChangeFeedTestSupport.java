// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import io.strata.format.Manifest;
import io.strata.objectstore.ObjectStore;
import java.io.IOException;
import java.util.Optional;

/** Reads a version's manifest the way a load does (tests). */
final class ChangeFeedTestSupport {
  private ChangeFeedTestSupport() { }

  static Manifest manifest(StoreIdentity identity, ObjectStore objects, boolean attemptKeys,
      long version) throws IOException {
    return new VersionObjectReader(identity, objects, attemptKeys, new ManifestCache(4))
        .read(version, Optional.empty());
  }
}
