// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Optional;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Where commits stage their SST deltas, and what a new JVM cleans up. */
class DeltaStagingTest {
  @TempDir Path tmp;

  @Test
  void theDirectoryIsClaimedUnderAPrivatePerUserRoot() throws Exception {
    Path mine = DeltaStaging.resolve(tmp, "al ice").orElseThrow();
    assertEquals(tmp.resolve("strata-al_ice"), mine.getParent());
    assertTrue(Files.isDirectory(mine));
    assertEquals("rwx------", PosixFilePermissions.toString(
        Files.getPosixFilePermissions(mine.getParent())), "deltas are state: owner only");
    Path killed = Files.createDirectories(mine.getParent().resolve("jvm-dead"));
    Files.writeString(killed.resolve("delta-3-2-z.sst"), "left by a killed JVM (no lock file)");
    assertEquals(Optional.of(mine), DeltaStaging.resolve(tmp, "al ice"), "claimed once");
    assertTrue(Files.exists(killed), "a JVM sweeps a root once, when it first claims it");
    Path other = DeltaStaging.resolve(Files.createDirectories(tmp.resolve("b")), "bob")
        .orElseThrow();
    assertFalse(other.equals(mine));
  }

  @Test
  void aRootThisUserLeftOpenIsMadePrivate() throws Exception {
    Path base = Files.createDirectory(tmp.resolve("strata-u"));
    Files.setPosixFilePermissions(base, PosixFilePermissions.fromString("rwxrwxrwx"));
    assertTrue(DeltaStaging.resolve(tmp, "u").isPresent());
    assertEquals("rwx------", PosixFilePermissions.toString(Files.getPosixFilePermissions(base)));
  }

  @Test
  void aLinkOrAnotherUsersRootIsRefusedAndDeltasGoToTheLocalDisk() throws Exception {
    Path elsewhere = Files.createDirectory(tmp.resolve("elsewhere"));
    Files.createSymbolicLink(tmp.resolve("strata-l"), elsewhere);
    assertEquals(Optional.empty(), DeltaStaging.resolve(tmp, "l"), "a link is not followed");
    try (var files = Files.list(elsewhere)) {
      assertEquals(0, files.count(), "nothing was claimed through the link");
    }
    Path probe = Files.createTempFile(tmp, "probe", "");
    int uid = (Integer) Files.getAttribute(probe, "unix:uid");
    // Only root can give a directory to another user.
    Assumptions.assumeTrue(uid == 0, "needs root to chown");
    Path theirs = Files.createDirectory(tmp.resolve("strata-o"));
    Files.setAttribute(theirs, "unix:uid", 4242);
    assertEquals(Optional.empty(), DeltaStaging.resolve(tmp, "o"), "owned by uid 4242");
  }

  @Test
  void withoutAWritableDirectoryDeltasGoToTheLocalDisk() {
    assertEquals(Optional.empty(), DeltaStaging.resolve(tmp.resolve("missing"), "u"));
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

}
