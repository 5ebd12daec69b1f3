// SPDX-License-Identifier: Apache-2.0
package io.strata.objectstore;

import io.strata.testkit.S3TestServer;

/**
 * Issue 17: every test of {@link S3ObjectStoreIT} against a second, independent S3
 * implementation, Adobe's S3Mock 4.11.0 ({@link io.strata.testkit.S3MockServer}), started as a
 * child JVM. S3Mock checks no signatures, so the wrong-key test is skipped here.
 */
class S3MockObjectStoreIT extends S3ObjectStoreIT {
  @Override
  S3TestServer.Kind kind() {
    return S3TestServer.Kind.S3MOCK;
  }
}
