// SPDX-License-Identifier: Apache-2.0
package io.strata.format.sst;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.util.Arrays;
import java.util.Map;
import java.util.TreeMap;
import java.util.zip.CRC32C;
import net.jpountz.lz4.LZ4Compressor;
import net.jpountz.lz4.LZ4Factory;

/**
 * Writes an SST delta in RocksDB's block-based table format from Java, in one pass over entries
 * given in key order: what RocksDB's {@code SstFileWriter} makes of the same entries, without a
 * JNI call per entry, a file write, an fdatasync and a read-back (docs/format.md, "The version
 * object", lists what a delta holds).
 *
 * <p>The file it writes, and what each part is for:
 * <ul>
 *   <li><b>Data blocks</b> of about {@value #BLOCK_SIZE} bytes: entries prefix-compressed against
 *       the previous key, a restart point every {@value #RESTART_INTERVAL} entries (binary-search
 *       blocks, no hash index); each key is RocksDB's internal key, the user key then 8 bytes of
 *       sequence number 0 and type ({@code kTypeValue} 1 for a put, {@code kTypeDeletion} 0 for a
 *       tombstone), as {@code SstFileWriter} writes them. A block is LZ4-compressed (table format
 *       2 framing: varint32 uncompressed size, then the LZ4 block) when that saves at least an
 *       eighth, RocksDB's own rule; otherwise stored as is.
 *   <li><b>A full filter</b> over the user keys: RocksDB's legacy cache-local Bloom filter (the
 *       one RocksDB writes for table format versions below 5), 10 bits per key, 6 probes, hash
 *       {@code BloomHash} (RocksDB's 32-bit MurmurHash1 variant, seed {@code 0xbc9f1d34});
 *       metaindex name {@code fullfilter.rocksdb.BuiltinBloomFilter}, so a database configured
 *       with {@code BloomFilter} uses it for point reads.
 *   <li><b>A binary-search index</b>: one entry per data block, keyed by the block's last internal
 *       key, valued by the block's handle (varint64 offset, varint64 size).
 *   <li><b>Properties</b>, including the two {@code SstFileWriter} adds, which ingestion
 *       requires ({@code rocksdb.external_sst_file.version} 2, {@code
 *       rocksdb.external_sst_file.global_seqno} 0), and a fresh random session id with file number
 *       1 (RocksDB builds block-cache keys from them, so no two deltas may share them; {@code
 *       SstFileWriter} does the same).
 *   <li><b>Metaindex and footer</b>: table format version 2, CRC32C block checksums (masked as
 *       RocksDB masks them), the block-based table magic number.
 * </ul>
 *
 * <p>Format version 2 and the legacy filter are chosen because every RocksDB any Spark line bundles
 * (8.3 for Spark 3.5, 9.8 for Spark 4.x) reads and ingests them, and they need neither XXH3 nor
 * context checksums. The golden tests ({@code SstWriterTest}) check each file against RocksDB's own
 * reader and ingestion, and the filter byte for byte against {@code SstFileWriter}'s.
 *
 * <p>Not thread-safe. Entries must come in strictly increasing unsigned byte order of their keys;
 * anything else is refused before a byte of it is written.
 */
public final class SstWriter {
  /** Target size of a data block before compression, bytes (the local database's block size). */
  public static final int BLOCK_SIZE = 16 * 1024;
  /** Entries between restart points in a data block (RocksDB's default). */
  public static final int RESTART_INTERVAL = 16;
  /** Bloom filter bits per key. */
  public static final int BITS_PER_KEY = 10;

  static final int FORMAT_VERSION = 2;
  static final int CHECKSUM_CRC32C = 1;
  static final int NO_COMPRESSION = 0;
  static final int LZ4_COMPRESSION = 4;
  static final String FILTER_BLOCK = "fullfilter.rocksdb.BuiltinBloomFilter";
  private static final int CACHE_LINE_BITS = 512;
  private static final int NUM_PROBES = (int) (BITS_PER_KEY * 0.69);
  private static final int BLOOM_SEED = 0xbc9f1d34;
  private static final int UNKNOWN_COLUMN_FAMILY = Integer.MAX_VALUE;
  private static final LZ4Compressor LZ4 = LZ4Factory.fastestInstance().fastCompressor();
  private static final SecureRandom RANDOM = new SecureRandom();
  private static final byte[] BASE36 =
      "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ".getBytes(StandardCharsets.US_ASCII);

  private final OutputStream out;
  private final Bytes block = new Bytes(BLOCK_SIZE + 1024);
  private final Bytes restarts = new Bytes(256);
  private final Bytes index = new Bytes(256);
  /** Where each index entry starts (restart interval 1: every entry is a restart point). */
  private final Bytes indexRestarts = new Bytes(64);
  private byte[] lastKey;
  private int lastKeyLength;
  private int blockEntries;
  private int blockRestarts;
  private int[] hashes = new int[256];
  private int hashCount;
  private long offset;
  private long entries;
  private long deletions;
  private long rawKeyBytes;
  private long rawValueBytes;
  private long dataBytes;
  private long dataBlocks;
  private boolean finished;
  private Parts parts;

  /**
   * Where a finished SST's bytes went, by part (each block with its 5-byte trailer).
   *
   * @param data the data blocks (keys and values, LZ4-compressed where that saves an eighth)
   * @param filter the full Bloom filter block ({@link #BITS_PER_KEY} bits per key)
   * @param index the index block (one entry per data block)
   * @param tableMeta the properties and metaindex blocks and the footer
   * @param rawKeys the keys' bytes before encoding (internal keys: user key plus 8 bytes)
   * @param rawValues the values' bytes before compression
   */
  public record Parts(long data, long filter, long index, long tableMeta, long rawKeys,
      long rawValues) {
    /** The file's size: the sum of the parts. */
    public long total() {
      return data + filter + index + tableMeta;
    }
  }

  /**
   * A writer whose file goes to {@code out} as blocks complete ({@code out} is not closed).
   *
   * @param out where the file's bytes go, in order
   */
  public SstWriter(OutputStream out) {
    this.out = out;
  }

  /**
   * Adds a put of {@code value} at {@code key}.
   *
   * @param key the user key; greater (unsigned bytes) than every key added before
   * @param value the value, any length
   * @throws IllegalArgumentException if {@code key} is not greater than the previous key
   * @throws IllegalStateException after {@link #finish()}
   * @throws IOException if {@code out} fails
   */
  public void put(byte[] key, byte[] value) throws IOException {
    add(key, value, 1);
  }

  /**
   * Adds a tombstone at {@code key} (a RocksDB deletion: the key is absent from this version on).
   *
   * @throws IllegalArgumentException if {@code key} is not greater than the previous key
   * @throws IllegalStateException after {@link #finish()}
   * @throws IOException if {@code out} fails
   */
  public void delete(byte[] key) throws IOException {
    add(key, EMPTY, 0);
  }

  private static final byte[] EMPTY = new byte[0];

  private void add(byte[] key, byte[] value, int type) throws IOException {
    if (finished) {
      throw new IllegalStateException("the SST is finished");
    }
    if (lastKey != null && Arrays.compareUnsigned(lastKey, 0, lastKeyLength - 8, key, 0,
        key.length) >= 0) {
      throw new IllegalArgumentException("SST keys must be added in strictly increasing order: a"
          + " key of " + key.length + " bytes came after a key not less than it");
    }
    int internalLength = key.length + 8;
    if (blockEntries > 0) {
      int estimate = block.length + restarts.length + 4 + internalLength + value.length + 15;
      if (block.length + restarts.length + 4 >= BLOCK_SIZE
          || (estimate > BLOCK_SIZE && block.length + restarts.length + 4 >= BLOCK_SIZE * 9 / 10)) {
        flushBlock();
      }
    }
    int shared = 0;
    if (blockEntries % RESTART_INTERVAL == 0) {
      restarts.fixed32(block.length);
      blockRestarts++;
    } else {
      int max = Math.min(lastKeyLength, internalLength);
      int mismatch = Arrays.mismatch(lastKey, 0, Math.min(max, key.length), key, 0,
          Math.min(max, key.length));
      shared = mismatch < 0 ? Math.min(max, key.length) : mismatch;
    }
    block.varint(shared);
    block.varint(internalLength - shared);
    block.varint(value.length);
    if (shared < key.length) {
      block.put(key, shared, key.length - shared);
    }
    block.put((byte) type);
    block.zeros(7);
    block.put(value, 0, value.length);
    remember(key, type);
    blockEntries++;
    entries++;
    if (type == 0) {
      deletions++;
    }
    rawKeyBytes += internalLength;
    rawValueBytes += value.length;
    int h = bloomHash(key);
    if (hashCount == 0 || hashes[hashCount - 1] != h) {
      if (hashCount == hashes.length) {
        hashes = Arrays.copyOf(hashes, hashCount * 2);
      }
      hashes[hashCount++] = h;
    }
  }

  /** Keeps the internal key just added (the next entry's prefix and the index separator). */
  private void remember(byte[] key, int type) {
    int n = key.length + 8;
    if (lastKey == null || lastKey.length < n) {
      lastKey = new byte[Math.max(n, 64)];
    }
    System.arraycopy(key, 0, lastKey, 0, key.length);
    lastKey[key.length] = (byte) type;
    Arrays.fill(lastKey, key.length + 1, n, (byte) 0);
    lastKeyLength = n;
  }

  private void flushBlock() throws IOException {
    restarts.appendTo(block);
    block.fixed32(blockRestarts);
    long[] handle = writeBlock(block.bytes, block.length, true);
    dataBytes += handle[1] + SstReader.TRAILER;
    dataBlocks++;
    // The index entry: the block's last internal key, then its handle.
    indexRestarts.fixed32(index.length);
    index.varint(0);
    index.varint(lastKeyLength);
    Bytes value = new Bytes(20);
    value.varint64(handle[0]);
    value.varint64(handle[1]);
    index.varint(value.length);
    index.put(lastKey, 0, lastKeyLength);
    index.put(value.bytes, 0, value.length);
    block.length = 0;
    restarts.length = 0;
    blockEntries = 0;
    blockRestarts = 0;
  }

  /**
   * Writes the filter, index, properties and metaindex blocks and the footer. Nothing may be
   * added afterwards.
   *
   * @return the file's size in bytes
   * @throws IllegalStateException if no entry was added (RocksDB refuses to ingest an empty SST),
   *     or if called twice
   * @throws IOException if {@code out} fails
   */
  public long finish() throws IOException {
    if (finished) {
      throw new IllegalStateException("the SST is finished");
    }
    if (entries == 0) {
      throw new IllegalStateException("an SST delta needs at least one entry");
    }
    flushBlock();
    finished = true;
    long dataEnd = offset;
    byte[] filter = legacyBloom(hashes, hashCount);
    long[] filterHandle = writeBlock(filter, filter.length, false);
    long filterEnd = offset;
    indexRestarts.appendTo(index);
    index.fixed32((int) dataBlocks);
    long[] indexHandle = writeBlock(index.bytes, index.length, false);
    long indexEnd = offset;

    Map<String, byte[]> props = new TreeMap<>();
    props.put("rocksdb.block.based.table.index.type", fixed32(0));
    props.put("rocksdb.block.based.table.prefix.filtering", ascii("0"));
    props.put("rocksdb.block.based.table.whole.key.filtering", ascii("1"));
    props.put("rocksdb.column.family.id", varint(UNKNOWN_COLUMN_FAMILY));
    props.put("rocksdb.column.family.name", EMPTY);
    props.put("rocksdb.comparator", ascii("leveldb.BytewiseComparator"));
    props.put("rocksdb.compression", ascii("LZ4"));
    props.put("rocksdb.creating.db.identity", ascii("SST Writer"));
    props.put("rocksdb.creating.session.identity", sessionId());
    props.put("rocksdb.creation.time", varint(0));
    props.put("rocksdb.data.size", varint(dataBytes));
    props.put("rocksdb.deleted.keys", varint(deletions));
    props.put("rocksdb.external_sst_file.global_seqno", fixed64(0));
    props.put("rocksdb.external_sst_file.version", fixed32(2));
    props.put("rocksdb.file.creation.time", varint(0));
    props.put("rocksdb.filter.policy", ascii("rocksdb.BuiltinBloomFilter"));
    props.put("rocksdb.filter.size", varint(filterHandle[1]));
    props.put("rocksdb.fixed.key.length", varint(0));
    props.put("rocksdb.format.version", varint(0));
    props.put("rocksdb.index.key.is.user.key", varint(0));
    props.put("rocksdb.index.size", varint(indexHandle[1]));
    props.put("rocksdb.index.value.is.delta.encoded", varint(0));
    props.put("rocksdb.key.largest.seqno", varint(0));
    props.put("rocksdb.merge.operands", varint(0));
    props.put("rocksdb.merge.operator", ascii("nullptr"));
    props.put("rocksdb.num.data.blocks", varint(dataBlocks));
    props.put("rocksdb.num.entries", varint(entries));
    props.put("rocksdb.num.filter_entries", varint(hashCount));
    props.put("rocksdb.num.range-deletions", varint(0));
    props.put("rocksdb.oldest.key.time", varint(0));
    props.put("rocksdb.original.file.number", varint(1));
    props.put("rocksdb.prefix.extractor.name", ascii("nullptr"));
    props.put("rocksdb.property.collectors", ascii("[]"));
    props.put("rocksdb.raw.key.size", varint(rawKeyBytes));
    props.put("rocksdb.raw.value.size", varint(rawValueBytes));
    Bytes propsBlock = metaBlock(props);
    long[] propsHandle = writeBlock(propsBlock.bytes, propsBlock.length, false);

    Map<String, byte[]> meta = new TreeMap<>();
    meta.put(FILTER_BLOCK, handle(filterHandle));
    meta.put("rocksdb.properties", handle(propsHandle));
    Bytes metaindex = metaBlock(meta);
    long[] metaHandle = writeBlock(metaindex.bytes, metaindex.length, false);

    Bytes footer = new Bytes(53);
    footer.put((byte) CHECKSUM_CRC32C);
    footer.varint64(metaHandle[0]);
    footer.varint64(metaHandle[1]);
    footer.varint64(indexHandle[0]);
    footer.varint64(indexHandle[1]);
    footer.zeros(41 - footer.length);
    footer.fixed32(FORMAT_VERSION);
    footer.fixed64(SstReader.MAGIC);
    out.write(footer.bytes, 0, footer.length);
    offset += footer.length;
    parts = new Parts(dataEnd, filterEnd - dataEnd, indexEnd - filterEnd, offset - indexEnd,
        rawKeyBytes, rawValueBytes);
    return offset;
  }

  /**
   * The finished file's bytes by part.
   *
   * @throws IllegalStateException before {@link #finish()}
   */
  public Parts parts() {
    if (parts == null) {
      throw new IllegalStateException("the SST is not finished");
    }
    return parts;
  }

  /** Number of entries added (puts and tombstones). */
  public long entries() {
    return entries;
  }

  /** Writes one block and its trailer; returns its handle (offset, size without trailer). */
  private long[] writeBlock(byte[] raw, int length, boolean compressible) throws IOException {
    byte[] contents = raw;
    int size = length;
    int type = NO_COMPRESSION;
    if (compressible) {
      int max = LZ4.maxCompressedLength(length);
      byte[] framed = new byte[5 + max];
      int header = putVarint(framed, 0, length);
      int n = LZ4.compress(raw, 0, length, framed, header, max);
      if (header + n < length - length / 8) {
        contents = framed;
        size = header + n;
        type = LZ4_COMPRESSION;
      }
    }
    CRC32C crc = new CRC32C();
    crc.update(contents, 0, size);
    crc.update(type);
    int c = (int) crc.getValue();
    int masked = ((c >>> 15) | (c << 17)) + 0xa282ead8;
    out.write(contents, 0, size);
    byte[] trailer = {(byte) type, (byte) masked, (byte) (masked >>> 8), (byte) (masked >>> 16),
        (byte) (masked >>> 24)};
    out.write(trailer);
    long[] handle = {offset, size};
    offset += size + SstReader.TRAILER;
    return handle;
  }

  /** A block of plain keys in order (properties, metaindex), every entry a restart point. */
  private static Bytes metaBlock(Map<String, byte[]> entries) {
    Bytes b = new Bytes(2048);
    Bytes starts = new Bytes(4 * entries.size());
    for (Map.Entry<String, byte[]> e : entries.entrySet()) {
      starts.fixed32(b.length);
      byte[] k = e.getKey().getBytes(StandardCharsets.US_ASCII);
      b.varint(0);
      b.varint(k.length);
      b.varint(e.getValue().length);
      b.put(k, 0, k.length);
      b.put(e.getValue(), 0, e.getValue().length);
    }
    starts.appendTo(b);
    b.fixed32(entries.size());
    return b;
  }

  /**
   * RocksDB's legacy full-filter Bloom filter ({@code LegacyBloomBitsBuilder}): an odd number of
   * 64-byte cache lines, at least {@value #BITS_PER_KEY} bits per hash; each hash sets {@code
   * NUM_PROBES} bits in one line; then one byte of probe count and the line count (fixed32).
   */
  static byte[] legacyBloom(int[] hashes, int count) {
    long bits = Math.min((long) count * BITS_PER_KEY, 0xffff0000L);
    int lines = (int) ((bits + CACHE_LINE_BITS - 1) / CACHE_LINE_BITS);
    if (lines % 2 == 0) {
      lines++;
    }
    int bytes = lines * (CACHE_LINE_BITS / 8);
    byte[] filter = new byte[bytes + 5];
    for (int i = 0; i < count; i++) {
      int h = hashes[i];
      int line = Integer.remainderUnsigned(h, lines) * (CACHE_LINE_BITS / 8);
      int delta = (h >>> 17) | (h << 15);
      for (int p = 0; p < NUM_PROBES; p++) {
        int bit = h & (CACHE_LINE_BITS - 1);
        filter[line + (bit >>> 3)] |= (byte) (1 << (bit & 7));
        h += delta;
      }
    }
    filter[bytes] = (byte) NUM_PROBES;
    filter[bytes + 1] = (byte) lines;
    filter[bytes + 2] = (byte) (lines >>> 8);
    filter[bytes + 3] = (byte) (lines >>> 16);
    filter[bytes + 4] = (byte) (lines >>> 24);
    return filter;
  }

  /**
   * RocksDB's {@code BloomHash}: {@code Hash(data, n, 0xbc9f1d34)}, a MurmurHash1 variant whose
   * tail bytes are sign-extended (part of RocksDB's format definition).
   */
  static int bloomHash(byte[] key) {
    final int m = 0xc6a4a793;
    int n = key.length;
    int h = BLOOM_SEED ^ (n * m);
    int i = 0;
    for (; i + 4 <= n; i += 4) {
      int w = (key[i] & 0xff) | (key[i + 1] & 0xff) << 8 | (key[i + 2] & 0xff) << 16
          | (key[i + 3] & 0xff) << 24;
      h += w;
      h *= m;
      h ^= h >>> 16;
    }
    switch (n - i) {
      case 3:
        h += key[i + 2] << 16;
        // fall through
      case 2:
        h += key[i + 1] << 8;
        // fall through
      case 1:
        h += key[i];
        h *= m;
        h ^= h >>> 24;
        break;
      default:
        break;
    }
    return h;
  }

  /** A RocksDB session id: 20 base-36 digits, upper case, random (see the class comment). */
  private static byte[] sessionId() {
    byte[] id = new byte[20];
    for (int i = 0; i < id.length; i++) {
      id[i] = BASE36[RANDOM.nextInt(36)];
    }
    return id;
  }

  private static byte[] ascii(String s) {
    return s.getBytes(StandardCharsets.US_ASCII);
  }

  private static byte[] varint(long v) {
    Bytes b = new Bytes(10);
    b.varint64(v);
    return Arrays.copyOf(b.bytes, b.length);
  }

  private static byte[] fixed32(int v) {
    Bytes b = new Bytes(4);
    b.fixed32(v);
    return b.bytes;
  }

  private static byte[] fixed64(long v) {
    Bytes b = new Bytes(8);
    b.fixed64(v);
    return b.bytes;
  }

  private static byte[] handle(long[] h) {
    Bytes b = new Bytes(20);
    b.varint64(h[0]);
    b.varint64(h[1]);
    return Arrays.copyOf(b.bytes, b.length);
  }

  private static int putVarint(byte[] b, int at, int v) {
    int i = at;
    while ((v & ~0x7f) != 0) {
      b[i++] = (byte) ((v & 0x7f) | 0x80);
      v >>>= 7;
    }
    b[i++] = (byte) v;
    return i - at;
  }

  /** A growable little-endian byte buffer. */
  static final class Bytes {
    byte[] bytes;
    int length;

    Bytes(int capacity) {
      bytes = new byte[Math.max(capacity, 16)];
    }

    private void room(int n) {
      if (length + n > bytes.length) {
        bytes = Arrays.copyOf(bytes, Math.max(bytes.length * 2, length + n));
      }
    }

    void put(byte b) {
      room(1);
      bytes[length++] = b;
    }

    void put(byte[] src, int from, int n) {
      room(n);
      System.arraycopy(src, from, bytes, length, n);
      length += n;
    }

    void zeros(int n) {
      room(n);
      Arrays.fill(bytes, length, length + n, (byte) 0);
      length += n;
    }

    void varint(int v) {
      room(5);
      length += putVarint(bytes, length, v);
    }

    void varint64(long v) {
      room(10);
      while ((v & ~0x7fL) != 0) {
        bytes[length++] = (byte) ((v & 0x7f) | 0x80);
        v >>>= 7;
      }
      bytes[length++] = (byte) v;
    }

    void fixed32(int v) {
      room(4);
      bytes[length++] = (byte) v;
      bytes[length++] = (byte) (v >>> 8);
      bytes[length++] = (byte) (v >>> 16);
      bytes[length++] = (byte) (v >>> 24);
    }

    void fixed64(long v) {
      fixed32((int) v);
      fixed32((int) (v >>> 32));
    }

    /** Appends this buffer's bytes to {@code other}. */
    void appendTo(Bytes other) {
      other.put(bytes, 0, length);
    }
  }
}
