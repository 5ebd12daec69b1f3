// SPDX-License-Identifier: Apache-2.0
/**
 * Storage for Strata: the small {@link io.strata.objectstore.ObjectStore} interface that the
 * commit protocol talks to (put-if-absent, put, get, ranged and tail get, head, list, delete,
 * abort incomplete uploads),
 * with an S3 implementation on the AWS SDK v2 and a local-filesystem one.
 *
 * <p>This package owns:
 *
 * <ul>
 *   <li>choosing the implementation from a checkpoint location ({@link
 *       io.strata.objectstore.ObjectStores});
 *   <li>building S3 clients ({@link io.strata.objectstore.S3ClientFactory}) and sharing them
 *       JVM-wide with reference counting ({@link io.strata.objectstore.SharedS3Clients});
 *   <li>S3 semantics on top of the SDK: conditional create with {@code If-None-Match: *} and
 *       recognition of our own retried writes by a put id; pagination; batched deletes; aborting stale multipart uploads;
 *   <li>proving, once per JVM, endpoint and bucket, that the server refuses a second create-only
 *       PUT before the first create-only write ({@link
 *       io.strata.objectstore.ConditionalWriteProbe}; {@link
 *       io.strata.objectstore.ConditionalWritesUnsupportedException} where it does not);
 *   <li>classifying every storage failure where it is thrown into {@link
 *       io.strata.objectstore.ObjectAlreadyExistsException}, {@link
 *       io.strata.objectstore.ObjectNotFoundException} or {@link
 *       io.strata.objectstore.ObjectStoreException} (retryable or not), with messages that name
 *       the location and endpoint and never credentials;
 *   <li>reporting each HTTP attempt to a {@link io.strata.objectstore.RequestListener}.
 * </ul>
 *
 * <p>It does not know keys' meaning (that is {@code format}) nor when to write them ({@code
 * sync}). It is the only package that imports the AWS SDK, and it imports no Spark, Hadoop or
 * RocksDB. No AWS type appears in {@link io.strata.objectstore.ObjectStore}; {@code S3Client}
 * appears only in {@link io.strata.objectstore.S3ClientFactory} and {@link
 * io.strata.objectstore.SharedS3Clients}.
 */
package io.strata.objectstore;
