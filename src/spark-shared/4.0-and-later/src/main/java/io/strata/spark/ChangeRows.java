// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import io.strata.format.ColumnFamily;
import io.strata.format.sst.SstReader;
import io.strata.objectstore.ObjectStore;
import io.strata.sync.ChangeFeed;
import java.io.IOException;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.streaming.state.RecordType$;
import scala.Enumeration;
import scala.Tuple4;

/**
 * The rows of Spark's state data source change feed ({@code readChangeFeed}) for one column
 * family of one store, decoded from a {@link ChangeFeed}: {@code (recordType, key, value,
 * batchId)} with {@code PUT_RECORD} and the new value, or {@code DELETE_RECORD} and a null value;
 * batch id = version - 1, as Spark's providers return it. Each key appears once per version (its
 * last change in that batch), in key order within the version; Spark's changelog providers list
 * every write in write order, so a key written twice in one batch appears twice there.
 *
 * <p>Owns the object store it reads from; {@link #close()} closes it. Not thread-safe.
 */
final class ChangeRows implements AutoCloseable {
  private final ChangeFeed feed;
  private final ObjectStore objects;
  private final FamilyCodec codec;
  private final int familyId;
  private final String store;

  /**
   * @param feed the changes, read lazily
   * @param objects the object store the feed reads, closed by {@link #close()}
   * @param codec decodes the family's keys and values
   * @param family the column family's name, as the end version's manifest names it
   * @param store the store, for messages
   * @throws IllegalArgumentException if the end version has no family of that name
   */
  ChangeRows(ChangeFeed feed, ObjectStore objects, FamilyCodec codec, String family,
      String store) {
    this.feed = feed;
    this.objects = objects;
    this.codec = codec;
    this.store = store;
    if (feed.endManifest().columnFamilies().isNone()
        || ColumnFamily.DEFAULT_NAME.equals(family)) {
      this.familyId = 0; // the default family's id in every store (docs/format.md)
    } else {
      this.familyId = feed.endManifest().columnFamilies().byName(family)
          .map(ColumnFamily::id).orElseThrow(() -> new IllegalArgumentException("Change feed of "
              + store + ": version " + feed.endManifest().version() + " has no column family '"
              + family + "'"));
    }
  }

  /**
   * The next row, or null after the last.
   *
   * @throws IOException as {@link ChangeFeed#next()}
   */
  Tuple4<Enumeration.Value, UnsafeRow, UnsafeRow, Object> next() throws IOException {
    for (ChangeFeed.Change c = feed.next(); c != null; c = feed.next()) {
      byte[] k = c.key();
      if (k.length < 2 || (((k[0] & 0xff) << 8) | (k[1] & 0xff)) != familyId) {
        continue;
      }
      UnsafeRow key = codec.decodeKey(k).copy();
      Long batchId = c.version() - 1;
      if (c.op() == SstReader.Op.DELETE) {
        return new Tuple4<>(RecordType$.MODULE$.DELETE_RECORD(), key, null, batchId);
      }
      UnsafeRow value = codec.decodeValue(c.value());
      return new Tuple4<>(RecordType$.MODULE$.PUT_RECORD(), key,
          value == null ? null : value.copy(), batchId);
    }
    return null;
  }

  /**
   * {@link #next()} for Spark's iterators: a failure is thrown as Spark's {@code
   * CANNOT_LOAD_STATE_STORE} error, undeclared.
   */
  Tuple4<Enumeration.Value, UnsafeRow, UnsafeRow, Object> nextForSpark() {
    try {
      return next();
    } catch (IOException e) {
      throw SparkErrors.cannotLoad(e);
    }
  }

  @Override
  public void close() {
    objects.close();
  }

  @Override
  public String toString() {
    return "ChangeRows[" + store + "]";
  }
}
