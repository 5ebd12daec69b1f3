// SPDX-License-Identifier: Apache-2.0
package io.strata.objectstore;

import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.TreeSet;

/**
 * The only storage interface the commit protocol talks to: a flat namespace of immutable objects
 * addressed by key, relative to a root (an S3 bucket and prefix, or a local directory).
 *
 * <p>Semantics follow S3 (strong read-after-write consistency, no directories, no rename). Keys
 * are '/'-separated relative paths without a leading '/'. Every method is thread-safe. No AWS
 * type appears here; implementations classify failures into the exceptions below:
 *
 * <ul>
 *   <li>{@link ObjectAlreadyExistsException}: a create-only write found the key taken by
 *       another writer;
 *   <li>{@link ObjectNotFoundException}: a read named a key that does not exist;
 *   <li>{@link ObjectStoreException}: anything else (its {@link ObjectStoreException#retryable()}
 *       tells whether the SDK's retries were exhausted on a transient cause such as 503
 *       SlowDown, 500 or a reset, or whether the cause is permanent such as 403).
 * </ul>
 *
 * <p>Messages read "Cannot &lt;action&gt; &lt;location&gt;: &lt;reason&gt;" and never contain
 * credentials.
 */
public interface ObjectStore extends AutoCloseable {

  /**
   * Writes {@code body} under {@code key} only if no object exists there (S3 {@code If-None-Match:
   * *}; atomic create on a filesystem). The object appears whole or not at all.
   *
   * <p>If a retried request finds the key taken, the implementation decides whether the object
   * is this very write (by a put id stored with the object) and then returns normally.
   *
   * @param key object key relative to the store root
   * @param body the bytes to write; may be opened more than once for retries
   * <p>On S3 the first create-only write of a JVM to a bucket is preceded by {@link
   * ConditionalWriteProbe}'s one-time check that the server refuses a second create-only PUT and
   * lets exactly one of several racing create-only PUTs win.
   *
   * @throws ObjectAlreadyExistsException if another writer created {@code key} first
   * @throws ConditionalWritesUnsupportedException if the S3 server ignores {@code If-None-Match}
   *     (nothing is written; never retryable)
   * @throws ObjectStoreException on any other failure
   */
  void putIfAbsent(String key, ObjectBody body) throws IOException;

  /**
   * Writes {@code body} under {@code key}, replacing any existing object (plain S3 PUT). The
   * commit path never calls this; it exists for callers that own a key outright.
   *
   * @throws ObjectStoreException on failure
   */
  void put(String key, ObjectBody body) throws IOException;

  /**
   * Copies {@code sourceKey} of {@code source} to {@code key} of this store without the bytes
   * passing through this JVM, create-only, where the two stores allow it: on S3 when both use
   * one client (the same endpoint, region and credentials), as a CopyObject with {@code
   * If-None-Match: *} (which AWS S3 honours on CopyObject; S3Proxy ignores it and overwrites,
   * so callers make sure the destination is new) and this store's encryption and storage class.
   * Where they do not, nothing is sent and the caller copies the bytes itself.
   *
   * @return true if copied, false if the stores cannot copy server-side (nothing was done)
   * @throws ObjectAlreadyExistsException if {@code key} exists (on servers that honour it)
   * @throws ObjectNotFoundException if {@code sourceKey} does not exist
   * @throws ObjectStoreException on any other failure
   */
  default boolean copyIfAbsentFrom(ObjectStore source, String sourceKey, String key)
      throws IOException {
    return false;
  }

  /**
   * Opens the whole object for reading. The caller closes the stream.
   *
   * @throws ObjectNotFoundException if {@code key} does not exist
   * @throws ObjectStoreException on any other failure
   */
  InputStream get(String key) throws IOException;

  /**
   * Opens {@code length} bytes of the object starting at byte {@code offset} (S3 ranged GET
   * {@code bytes=offset-(offset+length-1)}). Fewer bytes are returned only if the object is
   * shorter. The caller closes the stream.
   *
   * @param offset first byte, &gt;= 0
   * @param length number of bytes, &gt; 0
   * @throws ObjectNotFoundException if {@code key} does not exist
   * @throws ObjectStoreException on any other failure, including an offset past the end
   */
  InputStream getRange(String key, long offset, long length) throws IOException;

  /**
   * Reads the last {@code length} bytes of the object (S3 suffix range {@code bytes=-length});
   * the whole object if it is shorter.
   *
   * @throws ObjectNotFoundException if {@code key} does not exist
   * @throws ObjectStoreException on any other failure
   */
  byte[] getTail(String key, int length) throws IOException;

  /**
   * Returns the object's size and metadata, or empty if it does not exist (S3 HEAD).
   *
   * @throws ObjectStoreException on failure other than "not found"
   */
  Optional<ObjectInfo> head(String key) throws IOException;

  /**
   * Lists every object whose key starts with {@code prefix}, in ascending key order, following
   * pagination to the end (S3 ListObjectsV2, one request per 1000 keys).
   *
   * @throws ObjectStoreException on failure
   */
  List<ObjectInfo> list(String prefix) throws IOException;

  /**
   * Lists one level under {@code prefix} (S3 ListObjectsV2 with delimiter {@code '/'}, one
   * request per 1000 entries, a common prefix counting as one entry): the objects directly under
   * it and the common prefixes of deeper keys. With {@code prefix} "a/" the result holds "a/x"
   * and "a/sub/" but not "a/sub/y"; with "a" (no trailing '/') it holds the object "a", the
   * common prefix "a/" and siblings such as "ab".
   *
   * <p>The default implementation derives the level from {@link #list}, which reads every key
   * below; the S3 store asks the server for the level only.
   *
   * @throws ObjectStoreException on failure
   */
  default DelimitedListing listDelimited(String prefix) throws IOException {
    List<ObjectInfo> objects = new ArrayList<>();
    TreeSet<String> prefixes = new TreeSet<>(Keys.ORDER);
    for (ObjectInfo info : list(prefix)) {
      int slash = info.key().indexOf('/', prefix.length());
      if (slash < 0) {
        objects.add(info);
      } else {
        prefixes.add(info.key().substring(0, slash + 1));
      }
    }
    return new DelimitedListing(objects, new ArrayList<>(prefixes));
  }

  /**
   * Deletes the objects (S3 DeleteObjects, in batches of at most 1000 keys). Missing keys are
   * not an error.
   *
   * @throws ObjectStoreException if any key could not be deleted
   */
  void delete(List<String> keys) throws IOException;

  /**
   * Aborts the incomplete uploads under {@code prefix} that were started before {@code
   * startedBeforeMillis}, so their parts stop costing storage: on S3 the multipart uploads
   * (ListMultipartUploads, then AbortMultipartUpload for each; an upload completed or aborted
   * meanwhile is skipped), on a local directory the hidden temporary files of writes that never
   * finished (by last-modified time). Objects are never touched.
   *
   * @param prefix key prefix relative to the store root; empty for everything
   * @param startedBeforeMillis epoch ms; only uploads initiated (S3) or last written (local)
   *     strictly before this are aborted
   * @return the number of uploads aborted
   * @throws ObjectStoreException on failure (uploads aborted before it stay aborted)
   */
  int abortIncompleteUploads(String prefix, long startedBeforeMillis) throws IOException;

  /**
   * A human-readable location for messages, for example {@code s3://bucket/prefix} or {@code
   * file:/tmp/ckpt}; never contains credentials.
   */
  String describe(String key);

  /** Releases clients and connections. Idempotent. */
  @Override
  void close();
}
