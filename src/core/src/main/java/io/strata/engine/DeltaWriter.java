// SPDX-License-Identifier: Apache-2.0
package io.strata.engine;

import io.strata.format.Checksums;
import io.strata.format.sst.SstWriter;
import java.io.BufferedOutputStream;
import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Map;
import net.jpountz.xxhash.StreamingXXHash64;

/**
 * Writes a version's pending writes as one sorted SST delta (puts, and deletions as tombstones)
 * with Strata's own SST writer ({@link SstWriter}: one pass in Java, no JNI call per entry and no
 * fdatasync; the file is RocksDB's block-based table format, which {@link LocalStore#ingest}
 * takes as {@code SstFileWriter}'s), and hashes it (XXHash64, {@link Checksums}) as it goes. A
 * delta of at most {@link LocalStore#IN_MEMORY_DELTA_BYTES} bytes of pending writes is built in
 * memory only; a larger one is streamed to its file. Moved out of {@link LocalStore}, which
 * calls it under its read lock ({@link LocalStore#buildDelta}). Stateless.
 */
final class DeltaWriter {
  private DeltaWriter() { }

  /**
   * Writes {@code pending} (not empty) as a delta named {@code sstFile}: in memory if its heap
   * estimate is at most {@link LocalStore#IN_MEMORY_DELTA_BYTES} ({@link DeltaFile#bytes()} are
   * then the file, and {@code sstFile} is not written), else streamed to {@code sstFile}
   * (replaced if it exists), with no bytes in memory.
   *
   * @return the delta's size, checksum, entries and parts
   * @throws IOException if the file system fails (the file may then exist, partly written)
   */
  static DeltaFile write(PendingWrites pending, Path sstFile) throws IOException {
    if (pending.approxBytes() <= LocalStore.IN_MEMORY_DELTA_BYTES) {
      // Sized from the heap estimate (an upper bound of the raw bytes), capped well below a
      // humongous allocation; it grows if ever needed.
      Buffer buf = new Buffer((int) Math.min(256L << 10, pending.approxBytes() + 4096));
      SstWriter w = writeSst(pending, buf);
      byte[] bytes = buf.bytes();
      return new DeltaFile(sstFile, bytes.length, Checksums.xxhash64(bytes), w.entries(), bytes,
          w.parts());
    }
    // The hash (native state, closed here) sees the bytes as the buffer flushes them, in
    // 64 KiB writes rather than one call per block and trailer.
    try (StreamingXXHash64 hash = Checksums.newStreaming();
        OutputStream file = Files.newOutputStream(sstFile)) {
      SstWriter w;
      try (OutputStream out = new BufferedOutputStream(new FilterOutputStream(file) {
        @Override
        public void write(byte[] b, int off, int len) throws IOException {
          hash.update(b, off, len);
          file.write(b, off, len);
        }

        @Override
        public void write(int b) throws IOException {
          write(new byte[] {(byte) b}, 0, 1);
        }
      }, 1 << 16)) {
        w = writeSst(pending, out);
      }
      return new DeltaFile(sstFile, Files.size(sstFile), hash.getValue(), w.entries(), null,
          w.parts());
    }
  }

  private static SstWriter writeSst(PendingWrites pending, OutputStream out)
      throws IOException {
    SstWriter w = new SstWriter(out);
    for (Map.Entry<byte[], byte[]> e : pending.entries()) {
      if (PendingWrites.isTombstone(e.getValue())) {
        w.delete(e.getKey());
      } else {
        w.put(e.getKey(), e.getValue());
      }
    }
    w.finish();
    return w;
  }

  /** A byte sink whose array is handed out without a copy when it is exactly full. */
  private static final class Buffer extends OutputStream {
    private byte[] buf;
    private int count;

    Buffer(int capacity) {
      buf = new byte[Math.max(capacity, 256)];
    }

    @Override
    public void write(int b) {
      write(new byte[] {(byte) b}, 0, 1);
    }

    @Override
    public void write(byte[] b, int off, int len) {
      if (count + len > buf.length) {
        buf = Arrays.copyOf(buf, Math.max(buf.length * 2, count + len));
      }
      System.arraycopy(b, off, buf, count, len);
      count += len;
    }

    byte[] bytes() {
      return count == buf.length ? buf : Arrays.copyOf(buf, count);
    }
  }
}
