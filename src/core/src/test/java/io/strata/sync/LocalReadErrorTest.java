// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.engine.CloseableIterator;
import io.strata.engine.KeyValue;
import io.strata.engine.SharedMemory;
import io.strata.objectstore.ObjectStore;
import io.strata.objectstore.ObjectStores;
import io.strata.objectstore.RequestListener;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A damaged block of a live local SST that Strata's stamps cannot see (same size, mtime and
 * inode: only RocksDB's block checksum can tell) fails the read that meets it, on every read
 * path, with an error naming the store, version, directory and file; the database is marked
 * damaged, and the next load of the same version restores it from the object store, exactly.
 */
class LocalReadErrorTest {
  private static final int KEYS = 20_000;

  @TempDir Path tmp;

  /** The read that meets the damaged block. */
  enum Read { GET, SCAN, PREFIX_SCAN, RANGE_SCAN, PUT, DELETE }

  private SyncedStore open() {
    Path remote = tmp.resolve("remote");
    ObjectStore objects = ObjectStores.open(remote.toUri().toString(), SyncedStoreTest.UNUSED_S3,
        RequestListener.NONE);
    return new SyncedStore(new StoreIdentity(0, 1, "default", remote.toString()), objects,
        tmp.resolve("local"), new StoreSettings(100, 2, 0, false, SharedMemory.Limits.DEFAULT,
            GcSettings.DEFAULT), "{}", "{}");
  }

  private static byte[] key(int i) {
    return String.format("k-%05d", i).getBytes(StandardCharsets.UTF_8);
  }

  /** 100 incompressible bytes: the version's SST is about 2 MB, so its middle is a data block. */
  private static byte[] value(int i) {
    byte[] v = new byte[100];
    new Random(i).nextBytes(v);
    return v;
  }

  private Path liveSst() throws Exception {
    try (Stream<Path> s = Files.walk(tmp.resolve("local"))) {
      List<Path> ssts = s.filter(p -> p.toString().endsWith(".sst")
          && p.getParent().getFileName().toString().startsWith("db-")).toList();
      assertEquals(1, ssts.size(), "one live SST: " + ssts);
      return ssts.get(0);
    }
  }

  /** Flips 16 bytes in the middle of {@code sst}, then restores its modification time. */
  private static void damageMiddle(Path sst) throws Exception {
    FileTime mtime = Files.getLastModifiedTime(sst);
    try (RandomAccessFile raf = new RandomAccessFile(sst.toFile(), "rw")) {
      long mid = raf.length() / 2;
      byte[] buf = new byte[16];
      raf.seek(mid);
      raf.readFully(buf);
      for (int i = 0; i < buf.length; i++) {
        buf[i] ^= (byte) 0x5a;
      }
      raf.seek(mid);
      raf.write(buf);
    }
    Files.setLastModifiedTime(sst, mtime);
  }

  private static void drain(CloseableIterator<KeyValue> it) {
    try (it) {
      while (it.hasNext()) {
        it.next();
      }
    }
  }

  /** Runs {@code read} over the keys until one fails; the ones before it must read exactly. */
  private static void readUntilFailure(SyncedStore s, Read read) throws Exception {
    byte[] prefix = "k-".getBytes(StandardCharsets.UTF_8);
    switch (read) {
      case SCAN -> drain(s.scan(new byte[0]));
      case PREFIX_SCAN -> drain(s.scan(prefix));
      case RANGE_SCAN -> drain(s.scan(prefix, key(KEYS / 4), key(3 * KEYS / 4)));
      default -> {
        for (int i = 0; i < KEYS; i++) {
          switch (read) {
            case GET -> assertArrayEquals(value(i), s.get(key(i)), "key " + i);
            case PUT -> s.put(key(i), value(i + 1));
            default -> s.delete(key(i));
          }
        }
      }
    }
  }

  @ParameterizedTest
  @EnumSource(Read.class)
  void aDamagedBlockFailsTheReadAndTheNextLoadRestores(Read read) throws Exception {
    try (SyncedStore s = open()) {
      s.load(0, Optional.empty());
      for (int i = 0; i < KEYS; i++) {
        s.put(key(i), value(i));
      }
      s.commit();
      s.awaitLocalIngestion(); // the ingestion runs after commit() returned
      // The committed SST was ingested, never read: none of its data blocks is cached.
      Path sst = liveSst();
      Path dbDir = sst.getParent();
      damageMiddle(sst);
      s.load(1, Optional.empty());
      assertEquals(0, s.lastRestore().filesDownloaded(), "the stamps do not see the damage");

      LocalStateReadException e = assertThrows(LocalStateReadException.class,
          () -> readUntilFailure(s, read), read + " must fail, not end early or read absent");
      String m = e.getMessage();
      assertTrue(m.contains("store 0/1/default"), "names the store: " + m);
      assertTrue(m.contains("version 1"), "names the version: " + m);
      assertTrue(m.contains(dbDir.toString()), "names the database directory: " + m);
      assertTrue(m.contains(sst.getFileName().toString()), "names the file: " + m);
      assertTrue(m.contains("restores the version from " + tmp.resolve("remote")), m);
      assertEquals(1, e.version());

      s.abort(); // the task fails
      s.load(1, Optional.empty()); // its retry
      assertTrue(s.lastRestore().filesDownloaded() > 0, "restored: " + s.lastRestore());
      assertFalse(Files.exists(dbDir), "the damaged database was dropped");
      assertEquals(KEYS, s.numKeys());
      for (int i = 0; i < KEYS; i++) {
        assertArrayEquals(value(i), s.get(key(i)), "key " + i);
      }
      int n = 0;
      try (CloseableIterator<KeyValue> it = s.scan(new byte[0])) {
        while (it.hasNext()) {
          KeyValue kv = it.next();
          assertArrayEquals(key(n), kv.key());
          n++;
        }
      }
      assertEquals(KEYS, n, "the full scan of the restored copy");
      s.put(key(0), value(-1));
      s.commit(); // and work goes on from the restored copy
      s.load(2, Optional.empty());
      assertEquals(0, s.lastRestore().filesDownloaded(), "the restored database is reused");
      assertArrayEquals(value(-1), s.get(key(0)));
    }
  }
}
