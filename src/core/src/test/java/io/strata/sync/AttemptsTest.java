// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import io.strata.objectstore.ObjectStore;
import io.strata.objectstore.ObjectStores;
import io.strata.objectstore.RequestListener;

/** {@link AttemptsContract} on the local-filesystem object store. */
class AttemptsTest extends AttemptsContract {
  @Override
  ObjectStore objects(String root) {
    return ObjectStores.open(root, SyncedStoreTest.UNUSED_S3, RequestListener.NONE);
  }

  @Override
  String root(String test) {
    return tmp.resolve("remote-" + test).toUri().toString();
  }
}
