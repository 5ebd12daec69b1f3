// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import io.strata.objectstore.DelimitedListing;
import io.strata.objectstore.ObjectBody;
import io.strata.objectstore.ObjectInfo;
import io.strata.objectstore.ObjectStore;
import java.io.IOException;
import java.io.InputStream;
import java.util.List;
import java.util.Optional;

/**
 * An {@link ObjectStore} that forwards every call to a real one after {@link #before}: the base
 * of the tests' recording and fault-injecting stores, which override {@code before} (or a
 * method, calling {@code super}).
 */
class ForwardingObjectStore implements ObjectStore {
  final ObjectStore real;

  ForwardingObjectStore(ObjectStore real) {
    this.real = real;
  }

  /**
   * Runs before each request.
   *
   * @param method {@code PUT}, {@code GET} (whole or ranged), {@code TAIL}, {@code HEAD}, {@code
   *     LIST}, {@code DELETE} or {@code ABORT}
   * @param key the key, or the prefix of a LIST or ABORT, or the keys of a DELETE as a list
   * @throws IOException to fail the request
   */
  void before(String method, String key) throws IOException {
  }

  @Override
  public void putIfAbsent(String key, ObjectBody body) throws IOException {
    before("PUT", key);
    real.putIfAbsent(key, body);
  }

  @Override
  public void put(String key, ObjectBody body) throws IOException {
    before("PUT", key);
    real.put(key, body);
  }

  @Override
  public InputStream get(String key) throws IOException {
    before("GET", key);
    return real.get(key);
  }

  @Override
  public InputStream getRange(String key, long offset, long length) throws IOException {
    before("GET", key);
    return real.getRange(key, offset, length);
  }

  @Override
  public byte[] getTail(String key, int length) throws IOException {
    before("TAIL", key);
    return real.getTail(key, length);
  }

  @Override
  public Optional<ObjectInfo> head(String key) throws IOException {
    before("HEAD", key);
    return real.head(key);
  }

  @Override
  public List<ObjectInfo> list(String prefix) throws IOException {
    before("LIST", prefix);
    return real.list(prefix);
  }

  @Override
  public DelimitedListing listDelimited(String prefix) throws IOException {
    before("LIST", prefix);
    return real.listDelimited(prefix);
  }

  @Override
  public void delete(List<String> keys) throws IOException {
    before("DELETE", String.valueOf(keys));
    real.delete(keys);
  }

  @Override
  public int abortIncompleteUploads(String prefix, long startedBeforeMillis)
      throws IOException {
    before("ABORT", prefix);
    return real.abortIncompleteUploads(prefix, startedBeforeMillis);
  }

  @Override
  public String describe(String key) {
    return real.describe(key);
  }

  @Override
  public void close() {
    real.close();
  }
}
