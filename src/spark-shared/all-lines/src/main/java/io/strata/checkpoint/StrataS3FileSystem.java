// SPDX-License-Identifier: Apache-2.0
package io.strata.checkpoint;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.net.URI;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.util.Progressable;

/**
 * A read-only Hadoop {@code FileSystem} for {@code s3://} and {@code s3a://} backed by Strata's
 * object store, so that Spark's state data source ({@code spark.read.format("statestore")}) reads
 * a Strata checkpoint without hadoop-aws on the classpath. Register it for the reading session
 * only:
 *
 * <pre>
 * spark.hadoop.fs.s3a.impl=io.strata.checkpoint.StrataS3FileSystem
 * spark.hadoop.fs.s3.impl=io.strata.checkpoint.StrataS3FileSystem
 * </pre>
 *
 * <p>It covers what the state data source asks a {@code FileSystem} itself (Spark 4.0 to 4.2:
 * qualifying the checkpoint path with {@link #getUri} and {@link #getWorkingDirectory}, listing
 * the operator's partition directories with {@link #listStatus} and {@link #getFileStatus}), and
 * reading files ({@link #open}) for Spark's default checkpoint file manager when Strata's is not
 * set. Every write ({@code create}, {@code append}, {@code rename}, {@code delete}, {@code
 * mkdirs}) throws {@link UnsupportedOperationException}: a query must not use it as its
 * checkpoint's file system (Strata's checkpoint file manager writes Spark's files), nor for other
 * data on S3.
 *
 * <p>S3 settings are Strata's ({@code spark.sql.streaming.stateStore.strata.s3.*}), then S3A's
 * keys for the bucket, as for Strata's checkpoint file manager ({@link S3CheckpointFiles}).
 * Directories are key prefixes: a path is a directory if objects lie under {@code path/}.
 */
public final class StrataS3FileSystem extends FileSystem {
  private URI uri;
  private Path workingDirectory;
  private S3CheckpointFiles files;
  /** Directory paths seen in a listing of this instance (a checkpoint directory stays one). */
  private final Map<Path, Boolean> knownDirectories = new ConcurrentHashMap<>();

  /** Made by Hadoop's {@code FileSystem.get} (reflection), then {@link #initialize}. */
  public StrataS3FileSystem() { }

  /**
   * Binds this file system to the bucket of {@code name}; does no network I/O.
   *
   * @throws IllegalArgumentException if {@code name} has no bucket, or a Strata setting is
   *     invalid (the message names the key)
   */
  @Override
  public void initialize(URI name, Configuration conf) throws IOException {
    super.initialize(name, conf);
    setConf(conf);
    if (name.getAuthority() == null || name.getAuthority().isEmpty()) {
      throw new IllegalArgumentException("'" + name + "' names no bucket; expected "
          + name.getScheme() + "://<bucket>/<path>");
    }
    this.uri = URI.create(name.getScheme() + "://" + name.getAuthority());
    this.workingDirectory = new Path(uri.toString() + "/");
    this.files = new S3CheckpointFiles(workingDirectory, conf);
  }

  @Override
  public String getScheme() {
    return uri == null ? "s3a" : uri.getScheme();
  }

  /** {@code <scheme>://<bucket>}. */
  @Override
  public URI getUri() {
    return uri;
  }

  /**
   * Opens an object for reading (one GET per read position; see {@code ObjectReadStream}).
   *
   * @throws FileNotFoundException if there is no such object
   */
  @Override
  public FSDataInputStream open(Path f, int bufferSize) throws IOException {
    return files.open(makeQualified(f));
  }

  /** Always throws: this file system is read-only (see the class comment). */
  @Override
  public FSDataOutputStream create(Path f, FsPermission permission, boolean overwrite,
      int bufferSize, short replication, long blockSize, Progressable progress) {
    throw readOnly("create", f);
  }

  /** Always throws: this file system is read-only. */
  @Override
  public FSDataOutputStream append(Path f, int bufferSize, Progressable progress) {
    throw readOnly("append", f);
  }

  /** Always throws: this file system is read-only. */
  @Override
  public boolean rename(Path src, Path dst) {
    throw readOnly("rename", src);
  }

  /** Always throws: this file system is read-only. */
  @Override
  public boolean delete(Path f, boolean recursive) {
    throw readOnly("delete", f);
  }

  /**
   * The objects and subdirectories directly under {@code f} (one LIST per 1000 entries), or
   * {@code f} itself if it is an object.
   *
   * @throws FileNotFoundException if nothing is there
   */
  @Override
  public FileStatus[] listStatus(Path f) throws IOException {
    Path p = makeQualified(f);
    FileStatus[] listed = files.list(p, x -> true);
    if (listed.length == 0) {
      return new FileStatus[] {getFileStatus(p)}; // an object, or FileNotFoundException
    }
    knownDirectories.put(p, Boolean.TRUE);
    for (FileStatus s : listed) {
      if (s.isDirectory()) {
        knownDirectories.put(s.getPath(), Boolean.TRUE);
      }
    }
    return listed;
  }

  @Override
  public void setWorkingDirectory(Path newDir) {
    workingDirectory = makeQualified(newDir);
  }

  @Override
  public Path getWorkingDirectory() {
    return workingDirectory;
  }

  /** Always throws: this file system is read-only. */
  @Override
  public boolean mkdirs(Path f, FsPermission permission) {
    throw readOnly("mkdirs", f);
  }

  /**
   * An object's status, or a directory's if objects lie under {@code f/}: no request for a
   * directory a listing of this instance showed; else one LIST of the parent.
   *
   * @throws FileNotFoundException if neither
   */
  @Override
  public FileStatus getFileStatus(Path f) throws IOException {
    Path p = makeQualified(f);
    if (p.isRoot() || knownDirectories.containsKey(p)) {
      return new FileStatus(0, true, 1, 0, 0, p);
    }
    String name = p.getName();
    for (FileStatus s : files.list(p.getParent(), x -> x.getName().equals(name))) {
      if (s.isDirectory()) {
        knownDirectories.put(p, Boolean.TRUE);
      }
      return s;
    }
    throw new FileNotFoundException("No object or directory '" + p + "' (Strata's read-only S3 "
        + "file system)");
  }

  @Override
  public void close() throws IOException {
    try {
      if (files != null) {
        files.close();
      }
    } finally {
      super.close();
    }
  }

  private static UnsupportedOperationException readOnly(String op, Path f) {
    return new UnsupportedOperationException("Cannot " + op + " '" + f + "': "
        + StrataS3FileSystem.class.getName() + " is read-only; it serves Spark's state data "
        + "source on a Strata checkpoint. Set it (fs.s3a.impl, fs.s3.impl) only for sessions that "
        + "read state, and use Strata's checkpoint file manager for the query itself");
  }
}
