// SPDX-License-Identifier: Apache-2.0
package io.strata.format.sst;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import net.jpountz.lz4.LZ4Exception;
import net.jpountz.lz4.LZ4Factory;
import net.jpountz.lz4.LZ4SafeDecompressor;

/**
 * Reads every entry of an SST delta, tombstones included, in key order, from its bytes. RocksDB's
 * own readers (Java's {@code SstFileReader}, a database iterator) hide deletions, but a change
 * feed must return them: a delta's tombstone is a removal of that version.
 *
 * <p>Reads RocksDB's block-based table format as {@link SstWriter} writes it, and as {@code
 * SstFileWriter} wrote deltas with Strata's table options before (docs/format.md, "The version
 * object"): footer format versions 0 to 6 (for 6, the
 * metaindex block lies right before the footer and names the index block), a binary-search index
 * ({@code kBinarySearch}, {@code kHashSearch} or {@code kBinarySearchWithFirstKey}; delta-encoded
 * index values from format version 4), data blocks uncompressed or LZ4 (format version 2 and
 * later frame: varint32 uncompressed size, then the LZ4 block). Not read, each refused with a
 * {@link SstFormatException} that says so: a partitioned index, other compressions, a data block
 * hash index, range deletions, merge operands. Block checksums are not verified: the caller
 * verifies the whole delta against its manifest's XXHash64 first.
 *
 * <p>Pure code over a {@link ByteBuffer} (a heap array, or a mapped file for a large delta); not
 * thread-safe. Each entry's key and value are fresh arrays.
 */
public final class SstReader {
  /** What an entry of a delta does to its key. */
  public enum Op {
    /** The key holds {@link Entry#value()} from this version on. */
    PUT,
    /** The key is removed in this version ({@link Entry#value()} is empty). */
    DELETE
  }

  /**
   * One entry of a delta.
   *
   * @param op put or delete
   * @param key the user key (RocksDB's internal-key suffix removed)
   * @param value the value; empty for a delete
   */
  public record Entry(Op op, byte[] key, byte[] value) { }

  static final long MAGIC = 0x88e241b785f4cff7L;
  static final long LEGACY_MAGIC = 0xdb4775248b80fb57L;
  static final int TRAILER = 5;
  private static final int FOOTER_NEW = 53;
  private static final int FOOTER_LEGACY = 48;
  private static final int MAX_FORMAT_VERSION = 6;
  private static final byte[] EXTENDED_MAGIC = {0x3e, 0x00, 0x7a, 0x00};
  private static final String PROPERTIES = "rocksdb.properties";
  private static final String INDEX = "rocksdb.index";
  private static final String RANGE_DEL = "rocksdb.range_del";
  private static final String PROP_INDEX_TYPE = "rocksdb.block.based.table.index.type";
  private static final String PROP_DELTA_VALUES = "rocksdb.index.value.is.delta.encoded";
  private static final String PROP_RANGE_DELETIONS = "rocksdb.num.range-deletions";
  private static final int INDEX_TWO_LEVEL = 2;
  private static final int INDEX_WITH_FIRST_KEY = 3;
  private static final LZ4SafeDecompressor LZ4 = LZ4Factory.fastestInstance().safeDecompressor();

  private final ByteBuffer sst;
  private final int formatVersion;
  private final List<long[]> dataBlocks;
  private final SstLayout layout;
  private int nextBlock;
  private byte[] block;
  private int pos;
  private int entriesEnd;
  private byte[] lastKey = new byte[0];

  private SstReader(ByteBuffer sst, int formatVersion, List<long[]> dataBlocks,
      SstLayout layout) {
    this.sst = sst;
    this.formatVersion = formatVersion;
    this.dataBlocks = dataBlocks;
    this.layout = layout;
  }

  /**
   * Opens the SST held by {@code sst} (position 0 to limit; not changed): reads its footer,
   * metaindex, properties and index blocks.
   *
   * @param sst the whole SST file
   * @return a reader positioned before the first entry
   * @throws SstFormatException if the bytes are not an SST this reader reads (message says what)
   */
  public static SstReader open(ByteBuffer sst) throws SstFormatException {
    ByteBuffer b = sst.duplicate().order(ByteOrder.LITTLE_ENDIAN);
    b.position(0);
    long size = b.limit();
    if (size < FOOTER_LEGACY) {
      throw new SstFormatException("file of " + size + " bytes is too short to be an SST");
    }
    long magic = b.getLong((int) size - 8);
    int formatVersion;
    long[] metaindex;
    long[] index = null;
    if (magic == LEGACY_MAGIC) {
      formatVersion = 0;
      Cursor c = new Cursor(b, (int) size - FOOTER_LEGACY);
      metaindex = c.handle();
      index = c.handle();
    } else if (magic == MAGIC) {
      if (size < FOOTER_NEW) {
        throw new SstFormatException("file of " + size + " bytes is too short to be an SST");
      }
      int footer = (int) size - FOOTER_NEW;
      formatVersion = b.getInt((int) size - 12);
      if (formatVersion < 1 || formatVersion > MAX_FORMAT_VERSION) {
        throw new SstFormatException("table format version " + formatVersion
            + " is not read by this build (1 to " + MAX_FORMAT_VERSION + ")");
      }
      if (formatVersion >= 6) {
        for (int i = 0; i < EXTENDED_MAGIC.length; i++) {
          if (b.get(footer + 1 + i) != EXTENDED_MAGIC[i]) {
            throw new SstFormatException("bad extended magic in the footer of a format-version-"
                + formatVersion + " SST");
          }
        }
        long metaSize = Integer.toUnsignedLong(b.getInt(footer + 13));
        metaindex = new long[] {footer - TRAILER - metaSize, metaSize};
      } else {
        Cursor c = new Cursor(b, footer + 1);
        metaindex = c.handle();
        index = c.handle();
      }
    } else {
      throw new SstFormatException(String.format("bad table magic number %016x", magic));
    }
    Map<String, byte[]> meta = entriesOf(readBlock(b, metaindex, formatVersion, "metaindex"));
    if (index == null) {
      byte[] h = meta.get(INDEX);
      if (h == null) {
        throw new SstFormatException("the metaindex names no index block");
      }
      index = new Cursor(ByteBuffer.wrap(h).order(ByteOrder.LITTLE_ENDIAN), 0).handle();
    }
    if (meta.containsKey(RANGE_DEL)) {
      throw new SstFormatException("the SST holds range deletions, which SST deltas never have");
    }
    byte[] propsHandle = meta.get(PROPERTIES);
    Map<String, byte[]> props = propsHandle == null ? Map.of() : entriesOf(readBlock(b,
        new Cursor(ByteBuffer.wrap(propsHandle).order(ByteOrder.LITTLE_ENDIAN), 0).handle(),
        formatVersion, "properties"));
    int indexType = 0;
    byte[] type = props.get(PROP_INDEX_TYPE);
    if (type != null && type.length == 4) {
      indexType = ByteBuffer.wrap(type).order(ByteOrder.LITTLE_ENDIAN).getInt();
    }
    if (indexType == INDEX_TWO_LEVEL) {
      throw new SstFormatException("a partitioned (two-level) index is not read");
    }
    byte[] rangeDeletions = props.get(PROP_RANGE_DELETIONS);
    if (rangeDeletions != null && varint(rangeDeletions) != 0) {
      throw new SstFormatException("the SST holds range deletions, which SST deltas never have");
    }
    byte[] delta = props.get(PROP_DELTA_VALUES);
    boolean deltaValues = delta != null && varint(delta) != 0;
    List<long[]> blocks = indexHandles(readBlock(b, index, formatVersion, "index"), deltaValues,
        indexType == INDEX_WITH_FIRST_KEY);
    long data = 0;
    for (long[] h : blocks) {
      data += h[1] + TRAILER;
    }
    long filter = 0;
    for (Map.Entry<String, byte[]> e : meta.entrySet()) {
      String name = e.getKey();
      if (name.startsWith("fullfilter.") || name.startsWith("filter.")
          || name.startsWith("partitionedfilter.")) {
        filter += blockBytes(e.getValue());
      }
    }
    SstLayout layout = new SstLayout(size, blocks.size(), data, index[1] + TRAILER, filter,
        propsHandle == null ? 0 : blockBytes(propsHandle), metaindex[1] + TRAILER,
        magic == LEGACY_MAGIC ? FOOTER_LEGACY : FOOTER_NEW);
    return new SstReader(b, formatVersion, blocks, layout);
  }

  /** The bytes of the block an encoded handle names, with its trailer. */
  private static long blockBytes(byte[] handle) throws SstFormatException {
    return new Cursor(ByteBuffer.wrap(handle).order(ByteOrder.LITTLE_ENDIAN), 0).handle()[1]
        + TRAILER;
  }

  /**
   * The next entry in key order, or null after the last.
   *
   * @throws SstFormatException if a block is malformed or holds an entry type a delta never has
   */
  public Entry next() throws SstFormatException {
    while (block == null || pos >= entriesEnd) {
      if (nextBlock >= dataBlocks.size()) {
        return null;
      }
      block = readBlock(sst, dataBlocks.get(nextBlock++), formatVersion, "data");
      entriesEnd = restartsOffset(block);
      pos = 0;
      lastKey = new byte[0];
    }
    Cursor c = new Cursor(ByteBuffer.wrap(block).order(ByteOrder.LITTLE_ENDIAN), pos);
    int shared = c.varint32();
    int nonShared = c.varint32();
    int valueLength = c.varint32();
    if (shared > lastKey.length || c.pos + nonShared + valueLength > entriesEnd) {
      throw new SstFormatException("malformed entry in data block " + (nextBlock - 1));
    }
    byte[] internal = new byte[shared + nonShared];
    System.arraycopy(lastKey, 0, internal, 0, shared);
    System.arraycopy(block, c.pos, internal, shared, nonShared);
    int valueAt = c.pos + nonShared;
    pos = valueAt + valueLength;
    lastKey = internal;
    if (internal.length < 8) {
      throw new SstFormatException("internal key shorter than 8 bytes in data block "
          + (nextBlock - 1));
    }
    int kind = internal[internal.length - 8] & 0xff;
    byte[] key = java.util.Arrays.copyOf(internal, internal.length - 8);
    switch (kind) {
      case 0x1: // kTypeValue
        return new Entry(Op.PUT, key, java.util.Arrays.copyOfRange(block, valueAt, pos));
      case 0x0: // kTypeDeletion
      case 0x7: // kTypeSingleDeletion
        return new Entry(Op.DELETE, key, new byte[0]);
      default:
        throw new SstFormatException("entry of value type " + kind + " (not a put or a delete) in"
            + " data block " + (nextBlock - 1));
    }
  }

  /** The table format version of the footer (0 for the legacy footer). */
  public int formatVersion() {
    return formatVersion;
  }

  /** Bytes at the end of an SST that {@link #footerFormatVersion} reads: 12. */
  public static final int FOOTER_TAIL_BYTES = 12;

  /**
   * The table format version an SST's footer declares, from its last {@value
   * #FOOTER_TAIL_BYTES} bytes alone (the version, int32, then the magic number, int64, both
   * little-endian): what decides whether a RocksDB build can open the file at all, read without
   * reading the rest of it. The version is not checked against what this reader reads.
   *
   * @param tail the file's last {@value #FOOTER_TAIL_BYTES} bytes or more, from position 0 to
   *     its limit (not changed); only the last {@value #FOOTER_TAIL_BYTES} are read
   * @return the format version, 0 for the legacy footer
   * @throws SstFormatException if {@code tail} is shorter than {@value #FOOTER_TAIL_BYTES}
   *     bytes or the magic number is not a block-based table's
   */
  public static int footerFormatVersion(ByteBuffer tail) throws SstFormatException {
    ByteBuffer b = tail.duplicate().order(ByteOrder.LITTLE_ENDIAN);
    int end = b.limit();
    if (end < FOOTER_TAIL_BYTES) {
      throw new SstFormatException("file of " + end + " bytes is too short to be an SST");
    }
    long magic = b.getLong(end - 8);
    if (magic == LEGACY_MAGIC) {
      return 0;
    }
    if (magic != MAGIC) {
      throw new SstFormatException(String.format("bad table magic number %016x", magic));
    }
    return b.getInt(end - FOOTER_TAIL_BYTES);
  }

  /** Number of data blocks, from the index. */
  public int dataBlockCount() {
    return dataBlocks.size();
  }

  /**
   * Where the file's bytes lie by part (data blocks, index, filter, properties, metaindex,
   * footer), from the handles {@link #open} read; reads nothing more.
   *
   * @return the layout; its parts add up to the file's size for every SST this reader opens
   *     whose meta blocks are only a filter and properties ({@link SstLayout#otherBytes()} holds
   *     any others)
   */
  public SstLayout layout() {
    return layout;
  }

  /** The uncompressed contents of the block at {@code handle} (offset, size), trailer checked. */
  static byte[] readBlock(ByteBuffer b, long[] handle, int formatVersion, String what)
      throws SstFormatException {
    long offset = handle[0];
    long size = handle[1];
    if (offset < 0 || size < 0 || offset + size + TRAILER > b.limit()) {
      throw new SstFormatException("the " + what + " block at " + offset + " (+" + size
          + " bytes) lies outside the file of " + b.limit() + " bytes");
    }
    byte[] raw = new byte[(int) size];
    b.get((int) offset, raw);
    int compression = b.get((int) (offset + size)) & 0xff;
    switch (compression) {
      case 0:
        return raw;
      case 4: // LZ4
      case 5: // LZ4HC: the same block format
        if (formatVersion < 2) {
          throw new SstFormatException("LZ4 blocks of table format version " + formatVersion
              + " are not read");
        }
        Cursor c = new Cursor(ByteBuffer.wrap(raw).order(ByteOrder.LITTLE_ENDIAN), 0);
        int length = c.varint32();
        if (length > 255L * raw.length + 16) { // LZ4 expands at most 255-fold
          throw new SstFormatException("the " + what + " block at " + offset + " claims "
              + length + " bytes uncompressed from " + raw.length + ", more than LZ4 can give");
        }
        byte[] out = new byte[length];
        try {
          int n = LZ4.decompress(raw, c.pos, raw.length - c.pos, out, 0, length);
          if (n != length) {
            throw new SstFormatException("the " + what + " block at " + offset
                + " decompressed to " + n + " bytes, its header says " + length);
          }
        } catch (LZ4Exception e) {
          throw new SstFormatException("the " + what + " block at " + offset
              + " is not valid LZ4: " + e.getMessage());
        }
        return out;
      default:
        throw new SstFormatException("the " + what + " block at " + offset
            + " has compression type " + compression + "; only none and LZ4 are read");
    }
  }

  /** Offset of a block's restart array: where its entries end. */
  static int restartsOffset(byte[] block) throws SstFormatException {
    if (block.length < 4) {
      throw new SstFormatException("block of " + block.length + " bytes has no restart count");
    }
    int footer = ByteBuffer.wrap(block).order(ByteOrder.LITTLE_ENDIAN).getInt(block.length - 4);
    if (footer < 0) { // the top bit marks a data block hash index
      throw new SstFormatException("blocks with a hash index are not read");
    }
    long end = block.length - 4 - 4L * footer;
    if (end < 0) {
      throw new SstFormatException("block of " + block.length + " bytes claims " + footer
          + " restart points");
    }
    return (int) end;
  }

  /** The entries of a metaindex or properties block (restart interval 1 or any), by key. */
  static Map<String, byte[]> entriesOf(byte[] block)
      throws SstFormatException {
    Map<String, byte[]> out = new HashMap<>();
    int end = restartsOffset(block);
    Cursor c = new Cursor(ByteBuffer.wrap(block).order(ByteOrder.LITTLE_ENDIAN), 0);
    byte[] last = new byte[0];
    while (c.pos < end) {
      int shared = c.varint32();
      int nonShared = c.varint32();
      int valueLength = c.varint32();
      if (shared > last.length || c.pos + nonShared + valueLength > end) {
        throw new SstFormatException("malformed entry in a meta block");
      }
      byte[] key = new byte[shared + nonShared];
      System.arraycopy(last, 0, key, 0, shared);
      System.arraycopy(block, c.pos, key, shared, nonShared);
      c.pos += nonShared;
      out.put(new String(key, java.nio.charset.StandardCharsets.ISO_8859_1),
          java.util.Arrays.copyOfRange(block, c.pos, c.pos + valueLength));
      c.pos += valueLength;
      last = key;
    }
    return out;
  }

  /** The data block handles an index block lists, in order. */
  static List<long[]> indexHandles(byte[] block, boolean deltaValues, boolean firstKeys)
      throws SstFormatException {
    int end = restartsOffset(block);
    ByteBuffer bb = ByteBuffer.wrap(block).order(ByteOrder.LITTLE_ENDIAN);
    List<long[]> out = new ArrayList<>();
    Cursor c = new Cursor(bb, 0);
    long[] previous = null;
    while (c.pos < end) {
      // RocksDB's BlockBuilder delta-encodes a value only when its key shares bytes with the
      // previous key, so the decoder can tell by the shared length alone.
      int shared = c.varint32();
      int nonShared = c.varint32();
      int valueLength = deltaValues ? -1 : c.varint32();
      c.pos += nonShared;
      int valueStart = c.pos;
      long[] handle;
      if (deltaValues && shared != 0 && previous != null) {
        long delta = zigzag(c.varint64());
        handle = new long[] {previous[0] + previous[1] + TRAILER, previous[1] + delta};
      } else {
        handle = c.handle();
      }
      if (firstKeys) {
        int keyLength = c.varint32();
        c.pos += keyLength;
      }
      if (valueLength >= 0) {
        c.pos = valueStart + valueLength;
      }
      if (c.pos > end) {
        throw new SstFormatException("malformed entry in the index block");
      }
      out.add(handle);
      previous = handle;
    }
    return out;
  }

  private static long zigzag(long n) {
    return (n >>> 1) ^ -(n & 1);
  }

  private static long varint(byte[] bytes) throws SstFormatException {
    return new Cursor(ByteBuffer.wrap(bytes), 0).varint64();
  }

  /** Varint and block-handle decoding at an absolute position of a buffer. */
  static final class Cursor {
    private final ByteBuffer b;
    int pos;

    Cursor(ByteBuffer b, int pos) {
      this.b = b;
      this.pos = pos;
    }

    long varint64() throws SstFormatException {
      long result = 0;
      for (int shift = 0; shift <= 63; shift += 7) {
        if (pos >= b.limit()) {
          throw new SstFormatException("truncated varint");
        }
        int x = b.get(pos++) & 0xff;
        result |= (long) (x & 0x7f) << shift;
        if ((x & 0x80) == 0) {
          return result;
        }
      }
      throw new SstFormatException("varint longer than 10 bytes");
    }

    int varint32() throws SstFormatException {
      long v = varint64();
      if (v < 0 || v > Integer.MAX_VALUE) {
        throw new SstFormatException("varint32 out of range: " + v);
      }
      return (int) v;
    }

    long[] handle() throws SstFormatException {
      return new long[] {varint64(), varint64()};
    }
  }

  /**
   * Reads every entry left.
   *
   * @throws SstFormatException as {@link #next()}
   */
  public List<Entry> readAll() throws SstFormatException {
    List<Entry> out = new ArrayList<>();
    for (Entry e = next(); e != null; e = next()) {
      out.add(e);
    }
    return out;
  }
}
