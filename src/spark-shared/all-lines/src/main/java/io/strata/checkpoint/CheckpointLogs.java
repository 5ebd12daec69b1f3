// SPDX-License-Identifier: Apache-2.0
package io.strata.checkpoint;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

/**
 * The files of a checkpoint's {@code offsets/} and {@code commits/} logs, for a job that edits a
 * stopped query's logs ({@code io.strata.spark.StrataRepartition}). On S3 ({@code s3://},
 * {@code s3a://}) through Strata's object store, as {@link StrataCheckpointFileManagerBase}
 * reads and writes them (the same keys Spark's S3A writes them at, with Strata's settings or
 * S3A's as fallbacks), so no Hadoop file system for S3 is needed; elsewhere ({@code file:},
 * HDFS) through Hadoop's file system. Writes are create-only.
 */
public final class CheckpointLogs implements AutoCloseable {
  private final Path root;
  private final S3CheckpointFiles s3;
  private final FileSystem fs;

  /**
   * @param checkpoint the checkpoint location, as the query's {@code checkpointLocation}
   * @param hadoop the session's Hadoop configuration ({@code SessionState.newHadoopConf()})
   * @throws IOException if the location's Hadoop file system cannot be opened
   * @throws IllegalArgumentException for an S3 location without bucket, or a bad Strata setting
   */
  public CheckpointLogs(String checkpoint, Configuration hadoop) throws IOException {
    this.root = new Path(checkpoint);
    if (S3CheckpointFiles.serves(root, hadoop)) {
      this.s3 = new S3CheckpointFiles(root, hadoop);
      this.fs = null;
    } else {
      this.s3 = null;
      this.fs = root.getFileSystem(hadoop);
    }
  }

  private Path file(String log, long batch) {
    return new Path(new Path(root, log), Long.toString(batch));
  }

  private boolean exists(Path p) throws IOException {
    return s3 != null ? s3.exists(p) : fs.exists(p);
  }

  /**
   * The greatest batch id in {@code log} ({@code "offsets"} or {@code "commits"}), and when its
   * file was written.
   *
   * @return {batch, modification time in epoch ms}, or null if the log has no batch file
   * @throws IOException if listing fails
   */
  public long[] newest(String log) throws IOException {
    Path dir = new Path(root, log);
    if (!exists(dir)) {
      return null;
    }
    long[] best = null;
    for (FileStatus s : s3 != null ? s3.list(dir, p -> true) : fs.listStatus(dir)) {
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
  public String read(String log, long batch) throws IOException {
    Path f = file(log, batch);
    if (!exists(f)) {
      return null;
    }
    try (InputStream in = s3 != null ? s3.open(f) : fs.open(f)) {
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
  }

  /**
   * Writes {@code log/batch} if it does not exist (Spark's {@code HDFSMetadataLog.add}: an
   * existence check, then a create-only write: on S3 one PUT with {@code If-None-Match: *}).
   *
   * @return false if the file already existed
   * @throws IOException if writing fails (also if another writer created it meanwhile)
   */
  public boolean create(String log, long batch, String text) throws IOException {
    Path f = file(log, batch);
    if (exists(f)) {
      return false;
    }
    byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
    if (s3 != null) {
      AtomicPutOutputStream out = s3.createAtomic(f, false);
      try {
        out.write(bytes);
      } catch (IOException | RuntimeException e) {
        out.cancel();
        throw e;
      }
      out.close();
    } else {
      try (OutputStream out = fs.create(f, false)) {
        out.write(bytes);
      }
    }
    return true;
  }

  /**
   * Deletes {@code log/batch} (a job taking back an entry it wrote, when its next write failed).
   *
   * @throws IOException if the delete fails
   */
  public void delete(String log, long batch) throws IOException {
    Path f = file(log, batch);
    if (s3 != null) {
      s3.delete(f);
    } else {
      fs.delete(f, false);
    }
  }

  @Override
  public void close() {
    if (s3 != null) {
      s3.close();
    }
  }
}
