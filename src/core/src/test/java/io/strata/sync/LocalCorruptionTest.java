// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.strata.engine.LocalFiles;
import io.strata.engine.SharedMemory;
import io.strata.objectstore.ObjectStore;
import io.strata.objectstore.ObjectStores;
import io.strata.objectstore.RequestListener;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A local file changed on disk is detected before the local database is reused: the version is
 * restored from the object store (whose copy the manifest's checksums vouch for) instead, and a
 * damaged SST is never uploaded as part of a base snapshot.
 */
class LocalCorruptionTest {
  @TempDir Path tmp;

  private SyncedStore open(String name, int snapshotInterval) {
    Path remote = tmp.resolve("remote");
    ObjectStore objects = ObjectStores.open(remote.toUri().toString(), SyncedStoreTest.UNUSED_S3,
        RequestListener.NONE);
    return new SyncedStore(new StoreIdentity(0, 1, "default", remote.toString()), objects,
        tmp.resolve("local-" + name), new StoreSettings(snapshotInterval, 2, 0, false, SharedMemory.Limits.DEFAULT, GcSettings.DEFAULT), "{}",
        "{}");
  }

  private static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static void commit(SyncedStore s, int version) throws IOException {
    for (int i = 0; i < 100; i++) {
      s.put(b("key-" + i), b("v" + version + "-" + i));
    }
    s.commit();
  }

  private static List<Path> ssts(Path dir) throws IOException {
    try (Stream<Path> files = Files.walk(dir)) {
      return files.filter(p -> p.toString().endsWith(".sst")).sorted().toList();
    }
  }

  private static void flipByte(Path f, long offset) throws IOException {
    try (RandomAccessFile raf = new RandomAccessFile(f.toFile(), "rw")) {
      raf.seek(offset);
      int old = raf.read();
      raf.seek(offset);
      raf.write(old ^ 0x01);
    }
  }

  @Test
  void aChangedLocalSstIsNotReusedButRestored() throws Exception {
    try (SyncedStore s = open("a", 100)) {
      s.load(0, Optional.empty());
      for (int v = 1; v <= 3; v++) {
        commit(s, v);
        s.load(v, Optional.empty());
        assertEquals(0, s.lastRestore().filesDownloaded(), "an intact database is reused");
      }
      List<Path> before = ssts(tmp.resolve("local-a"));
      assertFalse(before.isEmpty(), "the local database holds SSTs");
      flipByte(before.get(0), 64);
      s.load(3, Optional.empty());
      assertTrue(s.lastRestore().filesDownloaded() > 0, "restored, not reused: "
          + s.lastRestore());
      assertFalse(Files.exists(before.get(0)), "the damaged database was dropped");
      assertEquals(100, s.numKeys());
      for (int i = 0; i < 100; i++) {
        assertArrayEquals(b("v3-" + i), s.get(b("key-" + i)), "key-" + i);
      }
      commit(s, 4); // and work goes on from the restored copy
      s.load(4, Optional.empty());
      assertEquals(0, s.lastRestore().filesDownloaded());
    }
  }

  @Test
  void aTruncatedLocalSstIsNotReused() throws Exception {
    try (SyncedStore s = open("b", 100)) {
      s.load(0, Optional.empty());
      commit(s, 1);
      commit(s, 2);
      s.awaitLocalIngestion(); // its SSTs are stamped when the commit's ingestion is done
      Path sst = ssts(tmp.resolve("local-b")).get(0);
      try (RandomAccessFile raf = new RandomAccessFile(sst.toFile(), "rw")) {
        raf.setLength(raf.length() - 1);
      }
      s.load(2, Optional.empty());
      assertTrue(s.lastRestore().filesDownloaded() > 0, "restored: " + s.lastRestore());
      assertArrayEquals(b("v2-5"), s.get(b("key-5")));
    }
  }

  @Test
  void verifySstNamesTheDamagedFile() throws Exception {
    try (SyncedStore s = open("c", 100)) {
      s.load(0, Optional.empty());
      commit(s, 1);
      s.awaitLocalIngestion(); // the delta is a file in the database once ingested
      Path sst = ssts(tmp.resolve("local-c")).get(0);
      LocalFiles.verifySst(sst); // intact
      Path copy = tmp.resolve("copy.sst");
      Files.copy(sst, copy);
      flipByte(copy, 64);
      IOException e = assertThrows(IOException.class, () -> LocalFiles.verifySst(copy));
      assertTrue(e.getMessage().contains(copy.toString()), e.getMessage());
      assertTrue(e.getMessage().contains("corrupt"), e.getMessage());
    }
  }
}
