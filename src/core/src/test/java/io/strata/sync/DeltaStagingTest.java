package io.strata.sync;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Where commits stage their SST deltas, and what a new JVM cleans up. */
class DeltaStagingTest {
  @TempDir Path tmp;

  @Test
  void aNewJvmEmptiesItsDirectoryAndDeletesOnlyThoseOfDeadProcesses() throws Exception {
    long me = ProcessHandle.current().pid();
    long parent = ProcessHandle.current().parent().orElseThrow().pid();
    long dead = deadPid();
    Path mine = Files.createDirectories(tmp.resolve("strata-" + me));
    Files.writeString(mine.resolve("delta-1-5-x.sst"), "left by an earlier process of this pid");
    Path alive = Files.createDirectories(tmp.resolve("strata-" + parent));
    Files.writeString(alive.resolve("delta-9-1-y.sst"), "in use");
    Path gone = Files.createDirectories(tmp.resolve("strata-" + dead));
    Files.writeString(gone.resolve("delta-3-2-z.sst"), "leaked by a killed JVM");
    Path other = Files.createDirectories(tmp.resolve("strata-notes"));

    assertEquals(Optional.of(mine), DeltaStaging.resolve(tmp, me));
    assertTrue(Files.isDirectory(mine));
    assertEquals(0, Files.list(mine).count(), "emptied");
    assertTrue(Files.exists(alive.resolve("delta-9-1-y.sst")), "a live process keeps its files");
    assertFalse(Files.exists(gone), "a dead process's directory is deleted");
    assertTrue(Files.isDirectory(other), "not a pid: not ours");
  }

  @Test
  void withoutAWritableDirectoryDeltasGoToTheLocalDisk() {
    assertEquals(Optional.empty(), DeltaStaging.resolve(tmp.resolve("missing"), 1));
    Path fallback = tmp.resolve("tmp");
    assertEquals(fallback, DeltaStaging.dirFor(false, 10, fallback), "staging off");
    assertEquals(fallback, DeltaStaging.dirFor(true, DeltaStaging.MAX_PENDING_BYTES + 1,
        fallback), "a large delta");
    assertEquals(DeltaStaging.jvmDir().orElse(fallback),
        DeltaStaging.dirFor(true, DeltaStaging.MAX_PENDING_BYTES, fallback));
  }

  @Test
  void fileNamesAreUniqueAcrossStoresOfOneJvm() {
    assertFalse(DeltaStaging.fileName(3, "a").equals(DeltaStaging.fileName(3, "a")));
    assertTrue(DeltaStaging.fileName(3, "a").endsWith("-3-a.sst"));
  }

  private static long deadPid() {
    for (long p = 4_000_000; p > 1_000; p--) {
      if (ProcessHandle.of(p).isEmpty()) {
        return p;
      }
    }
    throw new IllegalStateException("no free pid");
  }
}
