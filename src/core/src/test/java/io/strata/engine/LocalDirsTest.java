// SPDX-License-Identifier: Apache-2.0
package io.strata.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Directories of JVMs that exited or crashed are deleted when another JVM claims the same root;
 * a live JVM's are kept. The "live JVM" is a real second process holding its lock.
 */
class LocalDirsTest {
  @TempDir Path tmp;

  /** Leaves what a crashed JVM leaves: a lock file nobody holds and a directory with stores. */
  private static Path crashedJvm(Path root, String name) throws Exception {
    Path dir = root.resolve(name);
    Files.createDirectories(dir.resolve("0-1-default-x").resolve("db-3"));
    Files.write(dir.resolve("0-1-default-x").resolve("db-3").resolve("000012.sst"), new byte[4096]);
    Files.createDirectories(dir.resolve("0-1-default-x").resolve("checkpoint-7"));
    Files.write(root.resolve(name + ".lock"), new byte[0]);
    return dir;
  }

  @Test
  void claimingARootDeletesWhatCrashedJvmsLeftAndKeepsOtherFiles() throws Exception {
    Path root = tmp.resolve("strata");
    Path crashed = crashedJvm(root, "jvm-dead");
    Path noLock = Files.createDirectories(root.resolve("jvm-nolock").resolve("store"));
    Path foreign = Files.createDirectories(root.resolve("not-ours"));

    Path mine = LocalDirs.claim(root);

    assertFalse(Files.exists(crashed), "the crashed JVM's directory is deleted");
    assertFalse(Files.exists(root.resolve("jvm-dead.lock")), "and its lock file");
    assertFalse(Files.exists(noLock.getParent()), "a jvm- directory without a lock file is deleted");
    assertTrue(Files.isDirectory(foreign), "names Strata does not own are kept");
    assertTrue(Files.isDirectory(mine));
    assertEquals(root.toRealPath(), mine.getParent());
    assertTrue(Files.exists(Paths.get(mine + ".lock")));
    // Claiming again in the same JVM returns the same directory and keeps it.
    Files.createDirectories(mine.resolve("store"));
    assertEquals(mine, LocalDirs.claim(root));
    assertEquals(0, LocalDirs.sweep(root.toRealPath()), "own directory is never swept");
    assertTrue(Files.isDirectory(mine.resolve("store")));
  }

  @Test
  void aDirectoryWhoseLockALiveProcessHoldsIsKept() throws Exception {
    Path root = Files.createDirectories(tmp.resolve("strata"));
    Path live = Files.createDirectories(root.resolve("jvm-live").resolve("store"));
    Path lockFile = root.resolve("jvm-live.lock");
    Files.write(lockFile, new byte[0]);
    String java = ProcessHandle.current().info().command().orElse("java");
    String cp = Path.of(LockHolder.class.getProtectionDomain().getCodeSource().getLocation()
        .toURI()).toString();
    Process holder = new ProcessBuilder(java, "-cp", cp, LockHolder.class.getName(),
        lockFile.toString()).redirectErrorStream(true).start();
    try {
      BufferedReader out = new BufferedReader(new InputStreamReader(holder.getInputStream(),
          StandardCharsets.UTF_8));
      assertEquals("locked", out.readLine(), "the other process holds the lock");

      LocalDirs.claim(root);
      assertTrue(Files.isDirectory(live), "a live process's directory is kept");
      assertTrue(Files.exists(lockFile));
    } finally {
      holder.getOutputStream().close(); // the holder exits when its stdin closes
      holder.waitFor();
    }
    // The holder exited: its lock is gone, so the next sweep deletes its directory.
    assertEquals(1, LocalDirs.sweep(root.toRealPath()));
    assertFalse(Files.exists(live.getParent()));
    assertFalse(Files.exists(lockFile));
  }

  /** Run in a child JVM: locks the file, prints "locked", holds the lock until stdin closes. */
  public static final class LockHolder {
    public static void main(String[] args) throws Exception {
      try (FileChannel ch = FileChannel.open(Path.of(args[0]), StandardOpenOption.WRITE)) {
        if (ch.tryLock() == null) {
          System.out.println("busy");
          return;
        }
        System.out.println("locked");
        System.out.flush();
        while (System.in.read() >= 0) {
          // wait for the parent to close our stdin
        }
      }
    }
  }
}
