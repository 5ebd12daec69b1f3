// SPDX-License-Identifier: Apache-2.0
/**
 * The remote format as pure code: object keys ({@link io.strata.format.StoreLayout}), {@link
 * io.strata.format.Manifest} records, the manifest codec with its format version, published
 * snapshots and their lineage rule ({@link io.strata.format.PublishedSnapshot}, {@link
 * io.strata.format.PublishedSnapshotCodec}), the version
 * object layout, checksums, and the reachability rule garbage collection applies ({@link
 * io.strata.format.Reachability}). No I/O; see docs/format.md.
 */
package io.strata.format;
