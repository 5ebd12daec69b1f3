// SPDX-License-Identifier: Apache-2.0
package io.strata.objectstore;

import java.io.IOException;
import java.io.InputStream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import software.amazon.awssdk.http.ContentStreamProvider;

/**
 * Re-opens {@link ObjectBody} for each SDK attempt and closes the previous stream; the SDK
 * closes neither reliably on every version.
 */
final class BodyProvider implements ContentStreamProvider, AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(BodyProvider.class);
  private final ObjectBody body;
  private InputStream current;

  BodyProvider(ObjectBody body) {
    this.body = body;
  }

  @Override
  public synchronized InputStream newStream() {
    closeCurrent();
    try {
      current = body.open();
    } catch (IOException e) {
      throw new S3Errors.BodyReadException(e);
    }
    return current;
  }

  @Override
  public synchronized void close() {
    closeCurrent();
  }

  private void closeCurrent() {
    if (current != null) {
      try {
        current.close();
      } catch (IOException e) {
        LOG.debug("Cannot close upload body stream: {}", e.toString());
      }
      current = null;
    }
  }
}
