// SPDX-License-Identifier: Apache-2.0
package io.strata.checkpoint;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * StrataCheckpointFileManagerBase's routing: a path not on S3 goes
 * to Spark's default manager for every call, as the two copies before it did, with the same
 * errors; the same test runs against each line's StrataCheckpointFileManager.
 */
class CheckpointFileManagerRoutingTest {
  @TempDir java.nio.file.Path tmp;

  @Test
  void aLocalPathGoesToSparksDefaultManagerForEveryCall() throws Exception {
    Path root = new Path(tmp.toUri().toString());
    StrataCheckpointFileManager fm = new StrataCheckpointFileManager(root, new Configuration());
    assertTrue(fm.toString().startsWith("StrataCheckpointFileManager[via org.apache.spark"),
        fm.toString());
    assertTrue(fm.isLocal());
    Path dir = new Path(root, "offsets");
    fm.mkdirs(dir);
    assertTrue(Files.isDirectory(tmp.resolve("offsets")));
    Path file = new Path(dir, "0");
    var out = fm.createAtomic(file, false);
    out.write("v1".getBytes(StandardCharsets.UTF_8));
    out.close();
    assertTrue(fm.exists(file));
    try (InputStream in = fm.open(file)) {
      assertEquals("v1", new String(in.readAllBytes(), StandardCharsets.UTF_8));
    }
    var cancelled = fm.createAtomic(new Path(dir, "1"), false);
    cancelled.write(1);
    cancelled.cancel();
    assertFalse(fm.exists(new Path(dir, "1")), "a cancelled write leaves nothing");
    FileStatus[] all = fm.list(dir);
    assertEquals(1, all.length);
    assertEquals("0", all[0].getPath().getName());
    assertArrayEquals(new FileStatus[0], fm.list(dir, p -> !p.getName().equals("0")));
    // Spark's default manager: create-only fails on an existing file unless overwriting.
    var again = fm.createAtomic(file, false);
    again.write(2);
    assertThrows(IOException.class, again::close);
    var over = fm.createAtomic(file, true);
    over.write("v2".getBytes(StandardCharsets.UTF_8));
    over.close();
    try (InputStream in = fm.open(file)) {
      assertEquals("v2", new String(in.readAllBytes(), StandardCharsets.UTF_8));
    }
    assertInstanceOf(FileNotFoundException.class,
        assertThrows(Exception.class, () -> fm.open(new Path(dir, "missing"))));
    fm.delete(file);
    assertFalse(fm.exists(file));
    fm.delete(file); // nothing if it does not exist
    assertEquals(fm.createCheckpointDirectory().toUri().getPath().replaceAll("/$", ""),
        tmp.toUri().getPath().replaceAll("/$", ""));
    fm.close();
    fm.close(); // idempotent
  }

  @Test
  void aSchemeWithoutFileSystemFailsAsBefore() {
    Throwable e = assertThrows(Throwable.class, () -> new StrataCheckpointFileManager(
        new Path("nosuchfs://bucket/ckpt"), new Configuration()));
    assertInstanceOf(IOException.class, e, "Hadoop's error, rethrown undeclared: " + e);
    assertTrue(String.valueOf(e.getMessage()).contains("nosuchfs"), e.getMessage());
  }
}
