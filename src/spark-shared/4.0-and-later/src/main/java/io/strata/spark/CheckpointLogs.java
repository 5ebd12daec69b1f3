// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import io.strata.config.StrataConf;
import io.strata.hadoop.HadoopLookup;
import io.strata.objectstore.ObjectBody;
import io.strata.objectstore.ObjectInfo;
import io.strata.objectstore.ObjectNotFoundException;
import io.strata.objectstore.ObjectStore;
import io.strata.objectstore.ObjectStores;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;

/**
 * The files of a checkpoint's {@code offsets/} and {@code commits/} logs, for a job that edits a
 * stopped query's logs ({@link StrataRepartition}), through Strata's object store: on S3 ({@code
 * s3://}, {@code s3a://}) at the keys Spark's checkpoint file manager (Strata's, or S3A) keeps
 * them, with Strata's settings and S3A's as fallbacks, so no Hadoop file system for S3 is
 * needed; or in a local directory ({@code file:}). Writes are create-only, but for {@link
 * #replace}.
 */
final class CheckpointLogs implements AutoCloseable {
  private final ObjectStore root;

  /**
   * @param checkpoint the checkpoint location, as the query's {@code checkpointLocation}
   * @param hadoop the session's Hadoop configuration ({@code SessionState.newHadoopConf()}),
   *     whose Strata keys (and S3A fallbacks for the bucket) open an S3 location
   * @throws IllegalArgumentException for a location that is neither on S3 nor local (HDFS),
   *     or a bad Strata setting (the message names the key)
   */
  CheckpointLogs(String checkpoint, Configuration hadoop) {
    URI uri = URI.create(checkpoint);
    String scheme = uri.getScheme();
    if (scheme != null && !scheme.equals("file") && !scheme.startsWith("s3")) {
      throw new IllegalArgumentException("Cannot edit the logs of " + checkpoint + ": a "
          + scheme + ": location; this job reads and writes S3 and local checkpoints only");
    }
    this.root = ObjectStores.open(checkpoint, () -> {
      Map<String, String> strata = new HashMap<>();
      for (Map.Entry<String, String> e : hadoop) {
        if (e.getKey().startsWith(StrataConf.PREFIX)) {
          strata.put(e.getKey(), hadoop.get(e.getKey()));
        }
      }
      return HadoopLookup.strataConf(strata, hadoop, uri.getHost()).s3();
    }, null);
  }

  /**
   * The greatest batch id in {@code log} ({@code "offsets"} or {@code "commits"}), and when its
   * file was written (the object's {@code Last-Modified}).
   *
   * @return {batch, modification time in epoch ms}, or null if the log has no batch file
   * @throws IOException if listing fails
   */
  long[] newest(String log) throws IOException {
    long[] best = null;
    for (ObjectInfo o : root.list(log + "/")) {
      String name = o.key().substring(log.length() + 1);
      if (name.matches("[0-9]{1,18}")) {
        long b = Long.parseLong(name);
        if (best == null || b > best[0]) {
          best = new long[] {b, o.lastModifiedMillis()};
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
    try (InputStream in = root.get(log + "/" + batch)) {
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (ObjectNotFoundException e) {
      return null;
    }
  }

  /**
   * Writes {@code log/batch} create-only (S3 {@code If-None-Match: *}), as Spark's {@code
   * HDFSMetadataLog.add} refuses to replace an entry.
   *
   * @return false if the file already existed
   * @throws IOException if writing fails
   */
  boolean create(String log, long batch, String text) throws IOException {
    try {
      root.putIfAbsent(log + "/" + batch, ObjectBody.of(text.getBytes(StandardCharsets.UTF_8)));
      return true;
    } catch (io.strata.objectstore.ObjectAlreadyExistsException e) {
      return false;
    }
  }

  /**
   * Writes {@code log/batch} over what is there, in one PUT (S3 replaces an object atomically:
   * a reader sees the old text or the new one). Only for an entry the caller owns, such as
   * {@link StrataRepartition}'s marker.
   *
   * @throws IOException if writing fails
   */
  void replace(String log, long batch, String text) throws IOException {
    root.put(log + "/" + batch, ObjectBody.of(text.getBytes(StandardCharsets.UTF_8)));
  }

  /**
   * Deletes {@code log/batch} (a job taking back an entry it wrote, when its next write failed).
   *
   * @throws IOException if the delete fails
   */
  void delete(String log, long batch) throws IOException {
    root.delete(List.of(log + "/" + batch));
  }

  @Override
  public void close() {
    root.close();
  }
}
