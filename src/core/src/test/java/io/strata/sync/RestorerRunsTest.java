// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.engine.LocalStore;
import io.strata.engine.SharedMemory;
import io.strata.format.Checksums;
import io.strata.format.Delta;
import io.strata.format.FileRef;
import io.strata.format.Manifest;
import io.strata.format.ManifestCodec;
import io.strata.objectstore.ObjectBody;
import io.strata.objectstore.ObjectInfo;
import io.strata.objectstore.ObjectNotFoundException;
import io.strata.objectstore.ObjectStore;
import io.strata.objectstore.ObjectStoreException;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The run-based restore ({@link DownloadPlan}, {@link Restorer}) with real SST deltas packed
 * into shared objects, on any thread count, against an in-memory object store whose ranged GETs
 * answer like S3's (clipped at the end, 416 past it) and can be damaged: cut short, too long,
 * reset mid-stream, deaf to interrupts. {@code CorruptionIT} covers the same restore on a real
 * S3 server.
 */
class RestorerRunsTest {
  private static final String ATTEMPT = "018c0a1b2d00-0123456789abcdef";
  private static final StoreIdentity ID = new StoreIdentity(0, 0, "default", "mem://test");

  @TempDir Path tmp;

  /** In-memory objects; ranged GETs answer like S3 (clipped at the end, 416 past it). */
  static final class MemStore implements ObjectStore {
    final Map<String, byte[]> objects = new ConcurrentHashMap<>();
    final List<String> gets = Collections.synchronizedList(new ArrayList<>());
    final AtomicInteger open = new AtomicInteger();
    volatile int extra; // bytes appended to every response
    volatile long failAfter = -1; // a response fails after this many bytes
    volatile String blockKey; // a response of this key blocks after its first 1000 bytes
    volatile String afterBlockKey; // a GET of this key waits until that response blocked
    volatile Runnable beforeGet; // runs at the start of every GET
    final CountDownLatch blocked = new CountDownLatch(1);
    final CountDownLatch release = new CountDownLatch(1);

    @Override
    public InputStream getRange(String key, long offset, long length) throws IOException {
      if (offset < 0 || length <= 0) {
        throw new IllegalArgumentException(offset + " " + length);
      }
      byte[] o = objects.get(key);
      if (o == null) {
        throw new ObjectNotFoundException(key, null);
      }
      gets.add(key + "@" + offset + "+" + length);
      Runnable hook = beforeGet;
      if (hook != null) {
        hook.run();
      }
      if (key.equals(afterBlockKey)) {
        try {
          blocked.await(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new java.io.InterruptedIOException("interrupted waiting for " + blockKey);
        }
      }
      if (offset >= o.length) {
        throw new ObjectStoreException("416 " + key, false, null);
      }
      int n = (int) Math.min(length, o.length - offset);
      byte[] body = new byte[n + extra];
      System.arraycopy(o, (int) offset, body, 0, n);
      long fail = failAfter;
      boolean block = key.equals(blockKey);
      open.incrementAndGet();
      return new InputStream() {
        int pos;
        boolean closed;
        boolean waited;

        @Override
        public int read() throws IOException {
          byte[] one = new byte[1];
          return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
          if (fail >= 0 && pos >= fail) {
            throw new ObjectStoreException("injected connection reset at " + pos, true, null);
          }
          if (block && pos >= 1000 && !waited) {
            waited = true;
            blocked.countDown();
            boolean interrupted = false;
            while (true) { // like a socket read: deaf to interrupts
              try {
                release.await();
                break;
              } catch (InterruptedException e) {
                interrupted = true;
              }
            }
            if (interrupted) {
              Thread.currentThread().interrupt();
            }
          }
          if (pos >= body.length) {
            return -1;
          }
          int k = Math.min(len, body.length - pos);
          if (fail >= 0) {
            k = (int) Math.min(k, fail - pos);
          }
          if (block && pos < 1000) {
            k = Math.min(k, 1000 - pos);
          }
          System.arraycopy(body, pos, b, off, k);
          pos += k;
          return k;
        }

        @Override
        public void close() {
          if (!closed) {
            closed = true;
            open.decrementAndGet();
          }
        }
      };
    }

    @Override
    public void putIfAbsent(String key, ObjectBody body) {
      throw new UnsupportedOperationException();
    }

    @Override
    public void put(String key, ObjectBody body) {
      throw new UnsupportedOperationException();
    }

    @Override
    public InputStream get(String key) {
      throw new UnsupportedOperationException();
    }

    @Override
    public byte[] getTail(String key, int length) {
      throw new UnsupportedOperationException();
    }

    @Override
    public Optional<ObjectInfo> head(String key) {
      throw new UnsupportedOperationException();
    }

    @Override
    public List<ObjectInfo> list(String prefix) {
      throw new UnsupportedOperationException();
    }

    @Override
    public void delete(List<String> keys) {
      throw new UnsupportedOperationException();
    }

    @Override
    public int abortIncompleteUploads(String prefix, long startedBeforeMillis) {
      throw new UnsupportedOperationException();
    }

    @Override
    public String describe(String key) {
      return "mem://test/" + key;
    }

    @Override
    public void close() { }
  }

  private final Map<String, byte[]> expected = new LinkedHashMap<>();

  /** A real SST delta of {@code keys} keys with random values of {@code valueBytes}. */
  private byte[] sst(String prefix, int keys, int valueBytes) throws IOException {
    Path dir = tmp.resolve("w-" + prefix);
    Path f = tmp.resolve(prefix + ".sst");
    try (LocalStore s = LocalStore.open(dir, 0, SharedMemory.Limits.DEFAULT)) {
      Random r = new Random(prefix.hashCode());
      for (int i = 0; i < keys; i++) {
        byte[] v = new byte[valueBytes];
        r.nextBytes(v);
        String k = prefix + "-" + i;
        s.put(k.getBytes(UTF_8), v);
        expected.put(k, v);
      }
      s.writeDelta(f).orElseThrow();
    }
    return Files.readAllBytes(f);
  }

  private static FileRef ref(String key, long offset, byte[] sst) {
    return new FileRef(key, offset, sst.length, Checksums.xxhash64(sst, 0, sst.length));
  }

  private static Manifest manifest(List<FileRef> refs, List<Long> versions) {
    List<Delta> deltas = new ArrayList<>();
    for (int i = 0; i < refs.size(); i++) {
      deltas.add(new Delta(versions.get(i), ATTEMPT, refs.get(i)));
    }
    long v = versions.get(versions.size() - 1);
    return new Manifest(ManifestCodec.FORMAT_VERSION, "0/0/default", v, ATTEMPT, v - 1,
        Optional.empty(), Optional.empty(), deltas, "k", "v", 0, 0L);
  }

  private Restorer.Restored restore(MemStore store, Manifest m, int threads, String name)
      throws IOException {
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      Path t = Files.createDirectories(tmp.resolve("t-" + name));
      return new Restorer(ID, store, pool, threads, SharedMemory.Limits.DEFAULT)
          .restore(m, tmp.resolve("db-" + name), t, System.nanoTime());
    } finally {
      pool.shutdown();
      try {
        assertTrue(pool.awaitTermination(30, TimeUnit.SECONDS), "transfers still running");
      } catch (InterruptedException e) {
        throw new AssertionError(e);
      }
    }
  }

  /** One object "o": [7-byte gap][s2][s0][s1 (2.5 MiB)][s3], listed s0, s1, s2, s3, s3 again. */
  private Manifest packed(MemStore store) throws IOException {
    byte[] s0 = sst("s0", 300, 100);
    byte[] s1 = sst("s1", 2500, 1024);
    byte[] s2 = sst("s2", 50, 10);
    byte[] s3 = sst("s3", 700, 100);
    ByteArrayOutputStream o = new ByteArrayOutputStream();
    o.write(new byte[7]);
    long o2 = o.size();
    o.write(s2);
    long o0 = o.size();
    o.write(s0);
    long o1 = o.size();
    o.write(s1);
    long o3 = o.size();
    o.write(s3);
    store.objects.put("o", o.toByteArray());
    return manifest(List.of(ref("o", o0, s0), ref("o", o1, s1), ref("o", o2, s2),
        ref("o", o3, s3), ref("o", o3, s3)), List.of(1L, 2L, 3L, 4L, 4L));
  }

  @Test
  void everyThreadCountRestoresAPackedOutOfOrderObjectExactly() throws IOException {
    for (int threads : new int[] {1, 2, 3, 5, 8}) {
      MemStore store = new MemStore();
      expected.clear();
      Manifest m = packed(store);
      Restorer.Restored r = restore(store, m, threads, "ok" + threads);
      try (LocalStore s = r.store()) {
        for (Map.Entry<String, byte[]> e : expected.entrySet()) {
          assertArrayEquals(e.getValue(), s.get(e.getKey().getBytes(UTF_8)),
              threads + " threads, key " + e.getKey());
        }
      }
      assertEquals(0, store.open.get(), "streams left open");
      // s2, s0, s1, s3 are one run; the duplicate of s3 another.
      assertTrue(store.gets.size() <= threads + 1, threads + " threads: " + store.gets);
    }
  }

  @Test
  void aDeltaInATableFormatThisRocksDbDoesNotReadIsUnreadableFormatNotCorrupt()
      throws IOException {
    // An intact delta (its checksum matches) whose footer declares a table format one newer than
    // this JVM's RocksDB reads: what a Spark 4.x file of format 6 is on Spark 3.5.
    int newer = io.strata.engine.TableFormat.newestReadableHere() + 1;
    byte[] s0 = sst("s0", 30, 10);
    byte[] s1 = sst("s1", 30, 10);
    java.nio.ByteBuffer.wrap(s1).order(java.nio.ByteOrder.LITTLE_ENDIAN)
        .putInt(s1.length - 12, newer);
    MemStore store = new MemStore();
    store.objects.put("d0", s0);
    store.objects.put("d1", s1);
    Manifest m = manifest(List.of(ref("d0", 0, s0), ref("d1", 0, s1)), List.of(1L, 2L));
    StateLoadException e = assertThrows(StateLoadException.class,
        () -> restore(store, m, 2, "newer"));
    assertEquals(StateLoadException.Reason.UNREADABLE_FORMAT, e.reason(), e.getMessage());
    String msg = e.getMessage();
    assertTrue(msg.startsWith("Cannot load " + ID + " version 2: mem://test/d1 (offset 0): "),
        msg);
    assertTrue(msg.contains("is RocksDB table format " + newer), msg);
    assertTrue(msg.contains("Table format " + newer + " is read by no supported Spark line"),
        msg);
    assertFalse(msg.toLowerCase(java.util.Locale.ROOT).contains("corrupt"), msg);
    assertFalse(Files.exists(tmp.resolve("db-newer")), "the failed restore's directory");
  }

  @Test
  void objectCutShortMidFileIsCorrupt() throws IOException {
    for (int threads : new int[] {1, 3}) {
      MemStore store = new MemStore();
      Manifest m = packed(store);
      byte[] o = store.objects.get("o");
      store.objects.put("o", java.util.Arrays.copyOf(o, o.length - 500));
      StateLoadException e = assertThrows(StateLoadException.class,
          () -> restore(store, m, threads, "short" + threads));
      assertEquals(StateLoadException.Reason.CORRUPT, e.reason(), e.getMessage());
      assertEquals(0, store.open.get(), "streams left open");
      assertFalse(Files.exists(tmp.resolve("db-short" + threads)));
    }
  }

  @Test
  void longerResponseIsCorrupt() throws IOException {
    MemStore store = new MemStore();
    Manifest m = packed(store);
    store.extra = 3;
    StateLoadException e = assertThrows(StateLoadException.class,
        () -> restore(store, m, 2, "long"));
    assertEquals(StateLoadException.Reason.CORRUPT, e.reason(), e.getMessage());
    assertTrue(e.getMessage().contains("more"), e.getMessage());
  }

  @Test
  void connectionResetMidStreamIsStorageAndLeavesNothing() throws IOException {
    MemStore store = new MemStore();
    Manifest m = packed(store);
    store.failAfter = 200_000;
    StateLoadException e = assertThrows(StateLoadException.class,
        () -> restore(store, m, 1, "reset"));
    assertEquals(StateLoadException.Reason.STORAGE, e.reason(), e.getMessage());
    assertEquals(0, store.open.get(), "streams left open");
    assertFalse(Files.exists(tmp.resolve("db-reset")));
    try (Stream<Path> s = Files.list(tmp.resolve("t-reset"))) {
      assertEquals(List.of(), s.toList());
    }
  }

  @Test
  void aFullLocalDiskIsLocalNotStorageAndLeavesNothing() throws IOException {
    Path full = Path.of("/dev/full"); // every write fails with ENOSPC, as on a full disk
    org.junit.jupiter.api.Assumptions.assumeTrue(Files.isWritable(full), "no /dev/full");
    MemStore store = new MemStore();
    Manifest m = packed(store);
    Path deltas = tmp.resolve("t-full");
    // Once the files are created, every delta file points at the full device: once, by the
    // first GET (the GETs start together on 2 threads; the second waits for the links).
    AtomicInteger linked = new AtomicInteger();
    store.beforeGet = () -> {
      synchronized (linked) {
        if (linked.getAndIncrement() > 0) {
          return;
        }
        try (Stream<Path> files = Files.list(deltas)) {
          for (Path f : files.toList()) {
            Files.delete(f);
            Files.createSymbolicLink(f, full);
          }
        } catch (IOException e) {
          throw new java.io.UncheckedIOException(e);
        }
      }
    };
    StateLoadException e = assertThrows(StateLoadException.class,
        () -> restore(store, m, 2, "full"));
    assertEquals(StateLoadException.Reason.LOCAL, e.reason(), e.getMessage());
    assertTrue(e.getMessage().contains("writing local file " + deltas), e.getMessage());
    assertTrue(e.getMessage().contains("No space left on device"), e.getMessage());
    assertTrue(e.getMessage().contains("version 4"), e.getMessage());
    assertEquals(0, store.open.get(), "streams left open");
    assertFalse(Files.exists(tmp.resolve("db-full")));
    try (Stream<Path> s = Files.list(deltas)) {
      assertEquals(List.of(), s.toList(), "delta files (or their links) left behind");
    }
  }

  @Test
  void aCancelledGetStillReadingRecreatesNothing() throws Exception {
    MemStore store = new MemStore();
    byte[] a = sst("a", 300, 100);
    byte[] b = sst("b", 300, 100);
    store.objects.put("a", java.util.Arrays.copyOf(a, 10)); // short: fails at once
    store.objects.put("b", b);
    store.blockKey = "b";
    store.afterBlockKey = "a"; // a fails only once b's GET is inside its read, deaf to interrupts
    Manifest m = manifest(List.of(ref("a", 0, a), ref("b", 0, b)), List.of(1L, 2L));
    ExecutorService pool = Executors.newFixedThreadPool(2);
    Path t = Files.createDirectories(tmp.resolve("t-cancel"));
    Path db = tmp.resolve("db-cancel");
    try {
      StateLoadException e = assertThrows(StateLoadException.class,
          () -> new Restorer(ID, store, pool, 2, SharedMemory.Limits.DEFAULT)
              .restore(m, db, t, System.nanoTime()));
      assertEquals(StateLoadException.Reason.CORRUPT, e.reason(), e.getMessage());
      assertTrue(store.blocked.await(10, TimeUnit.SECONDS));
    } finally {
      store.release.countDown();
      pool.shutdown();
      assertTrue(pool.awaitTermination(30, TimeUnit.SECONDS));
    }
    assertFalse(Files.exists(db));
    try (Stream<Path> s = Files.list(t)) {
      assertEquals(List.of(), s.toList());
    }
    assertEquals(0, store.open.get(), "streams left open");
  }

  /**
   * A manifest entry whose offset + length overflows a long (a damaged or hostile manifest) is
   * refused where it is decoded, so no restore ever plans it: a plan that left a file's bytes to
   * no GET would leave it empty and unverified.
   */
  @Test
  void aRangeThatOverflowsIsRefusedBeforeAnyRestorePlansIt() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> new FileRef("o", Long.MAX_VALUE - 10, 100, 42));
    assertTrue(e.getMessage().contains("overflows"), e.getMessage());
    new FileRef("o", Long.MAX_VALUE - 100, 100, 42); // ends exactly at the largest position
  }

  @Test
  void everyByteOfEveryFileIsInExactlyOneGet() throws IOException {
    MemStore store = new MemStore();
    Manifest m = packed(store);
    List<FileRef> refs = m.deltas().stream().map(Delta::file).toList();
    for (int threads : new int[] {1, 2, 3, 5, 8, 64}) {
      long[] covered = new long[refs.size()];
      for (DownloadPlan.Get g : DownloadPlan.of(refs, threads).gets()) {
        long at = g.from();
        for (DownloadPlan.Piece p : g.pieces()) {
          assertEquals(at, p.from(), "pieces tile the GET: " + g);
          at += p.length();
          covered[p.file()] += p.length();
        }
        assertEquals(g.from() + g.length(), at, "pieces tile the GET: " + g);
      }
      for (int i = 0; i < refs.size(); i++) {
        assertEquals(refs.get(i).length(), covered[i], threads + " threads, file " + i);
      }
    }
  }
}
