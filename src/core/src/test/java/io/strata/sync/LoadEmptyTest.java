// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import io.strata.objectstore.ObjectStore;
import io.strata.objectstore.ObjectStores;
import io.strata.objectstore.RequestListener;

/** {@link LoadEmptyContract} on the local filesystem. */
class LoadEmptyTest extends LoadEmptyContract {
  @Override
  ObjectStore objects(String root) {
    return ObjectStores.open(root, SyncedStoreTest.UNUSED_S3, RequestListener.NONE);
  }

  @Override
  String root(String test) {
    return tmp.resolve("remote-" + test).resolve("state/0/1").toUri().toString();
  }
}
