// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.OptionalLong;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager;
import org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager$;

/**
 * The files of a checkpoint's {@code offsets/} and {@code commits/} logs, read and written
 * through the {@code CheckpointFileManager} Spark's own logs use for the same location (the
 * session's {@code spark.sql.streaming.checkpointFileManagerClass}, so Strata's checkpoint file
 * manager on S3 when the query has it). Spark 4.1 and later (the class's package); Spark 3.5
 * and 4.0 have their own copy.
 */
final class CheckpointLogFiles {
  private final Path root;
  private final CheckpointFileManager files;

  /**
   * @param checkpoint the checkpoint location, as the query's {@code checkpointLocation}
   * @param hadoop the session's Hadoop configuration ({@code SessionState.newHadoopConf()})
   */
  CheckpointLogFiles(String checkpoint, Configuration hadoop) {
    this.root = new Path(checkpoint);
    this.files = CheckpointFileManager$.MODULE$.create(root, hadoop);
  }

  private Path file(String log, long batch) {
    return new Path(new Path(root, log), Long.toString(batch));
  }

  /**
   * The greatest batch id in {@code log} ({@code "offsets"} or {@code "commits"}), and when its
   * file was written.
   *
   * @return {batch, modification time in epoch ms}, or null if the log has no batch file
   * @throws IOException if listing fails
   */
  long[] newest(String log) throws IOException {
    Path dir = new Path(root, log);
    if (!files.exists(dir)) {
      return null;
    }
    long[] best = null;
    for (FileStatus s : files.list(dir)) {
      String name = s.getPath().getName();
      if (name.matches("[0-9]{1,18}")) {
        long b = Long.parseLong(name);
        if (best == null || b > best[0]) {
          best = new long[] {b, s.getModificationTime()};
        }
      }
    }
    return best;
  }

  /**
   * The text of {@code log/batch}, or null if there is none.
   *
   * @throws IOException if reading fails
   */
  String read(String log, long batch) throws IOException {
    Path f = file(log, batch);
    if (!files.exists(f)) {
      return null;
    }
    try (InputStream in = files.open(f)) {
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
  }

  /**
   * Writes {@code log/batch} if it does not exist (Spark's {@code HDFSMetadataLog.add}: an
   * existence check, then {@code createAtomic} without overwrite, which the checkpoint file
   * manager makes a create-only write where it can).
   *
   * @return false if the file already existed
   * @throws IOException if writing fails (also if another writer created it meanwhile)
   */
  boolean create(String log, long batch, String text) throws IOException {
    Path f = file(log, batch);
    if (files.exists(f)) {
      return false;
    }
    files.mkdirs(f.getParent());
    OutputStream out = files.createAtomic(f, false);
    try {
      out.write(text.getBytes(StandardCharsets.UTF_8));
      out.close();
    } catch (IOException | RuntimeException e) {
      ((CheckpointFileManager.CancellableFSDataOutputStream) out).cancel();
      throw e;
    }
    return true;
  }
}
