// SPDX-License-Identifier: Apache-2.0
package io.strata.format.sst;

/**
 * Where an SST's bytes lie, by part, as its footer, metaindex and index name its blocks
 * ({@link SstReader#layout()}): what a version object's delta spends on data and what on the
 * table's own structure (issue 45, "the bytes of a commit"). Every block is counted with its
 * 5-byte trailer (compression type and checksum), so the parts add up to the file.
 *
 * @param fileBytes the whole file, bytes
 * @param dataBlocks the data blocks the index lists
 * @param dataBytes those data blocks, as stored (LZ4-compressed or not), bytes
 * @param indexBytes the index block (binary search: one entry per data block), bytes
 * @param filterBytes the filter block the metaindex names ({@code fullfilter.*}, {@code
 *     filter.*} or the top level of a {@code partitionedfilter.*}), bytes; 0 without a filter
 * @param propertiesBytes the properties block, bytes; 0 without one
 * @param metaindexBytes the metaindex block, bytes
 * @param footerBytes the footer (53 bytes; 48 for the legacy footer of format version 0)
 */
public record SstLayout(long fileBytes, int dataBlocks, long dataBytes, long indexBytes,
    long filterBytes, long propertiesBytes, long metaindexBytes, long footerBytes) {

  /**
   * Bytes no part above accounts for: 0 for the SSTs Strata writes; other meta blocks (a
   * compression dictionary, a hash index's prefixes, filter partitions) in RocksDB's.
   */
  public long otherBytes() {
    return fileBytes - dataBytes - indexBytes - filterBytes - propertiesBytes - metaindexBytes
        - footerBytes;
  }

  /** The properties and metaindex blocks and the footer: the table's fixed metadata, bytes. */
  public long tableMetaBytes() {
    return propertiesBytes + metaindexBytes + footerBytes;
  }
}
