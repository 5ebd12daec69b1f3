// SPDX-License-Identifier: Apache-2.0
package io.strata.bench;

import io.strata.spark.StrataStateStoreProvider;
import io.strata.testkit.S3ProxyServer;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Comparator;
import java.util.Map;
import java.util.UUID;
import java.util.stream.Stream;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider;
import org.apache.spark.sql.execution.streaming.state.NoPrefixKeyStateEncoderSpec;
import org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider;
import org.apache.spark.sql.execution.streaming.state.StateStore;
import org.apache.spark.sql.execution.streaming.state.StateStoreConf;
import org.apache.spark.sql.execution.streaming.state.StateStoreId;
import org.apache.spark.sql.execution.streaming.state.StateStoreIterator;
import org.apache.spark.sql.execution.streaming.state.StateStoreProvider;
import org.apache.spark.sql.execution.streaming.state.UnsafeRowPair;
import org.apache.spark.sql.internal.SQLConf;
import scala.Option;

/**
 * One state store provider for one benchmark trial, driven only through Spark's {@link
 * StateStoreProvider} API (init, getStore, put/get/remove/iterator, commit/abort, doMaintenance,
 * close), pre-filled with {@code stateKeys} keys.
 *
 * <p>Owns, and closes in reverse order of creation: the S3 server (S3 kinds only), the provider,
 * and a scratch directory under {@code strata.bench.dir} holding the local databases, the
 * checkpoint location and the server's objects. {@link #openReplica} opens further provider
 * instances on the same checkpoint (as another executor would), which the caller closes.
 */
final class BenchStore implements AutoCloseable {
  /** Spark's default column family name. */
  static final String CF = StateStore.DEFAULT_COL_FAMILY_NAME();
  /** Keys per version while pre-filling: bounds the pre-fill to a few large commits. */
  static final int PREFILL_KEYS_PER_VERSION = 100_000;

  private static final String PREFIX = "spark.sql.streaming.stateStore.strata.";
  private static final String BUCKET = "strata-bench";

  private final StoreKind kind;
  private final Path dir;
  private final StateStoreId storeId;
  private final SQLConf sql;
  private final Configuration hadoop;
  private final S3ProxyServer server;
  private final Thread serverStopper;
  private final StateStoreProvider provider;
  private final UnsafeRow[] keys;
  private final UnsafeRow[] values;
  private long version;

  private BenchStore(StoreKind kind, Path dir, StateStoreId storeId, SQLConf sql,
      Configuration hadoop, S3ProxyServer server, Thread serverStopper,
      StateStoreProvider provider, UnsafeRow[] keys, UnsafeRow[] values) {
    this.kind = kind;
    this.dir = dir;
    this.storeId = storeId;
    this.sql = sql;
    this.hadoop = hadoop;
    this.server = server;
    this.serverStopper = serverStopper;
    this.provider = provider;
    this.keys = keys;
    this.values = values;
  }

  /**
   * Starts what {@code kind} needs, initialises the provider and commits keys {@code 0 ..
   * stateKeys-1} in versions of {@value #PREFILL_KEYS_PER_VERSION} keys.
   */
  static BenchStore open(StoreKind kind, int stateKeys) throws IOException {
    if (stateKeys < 1) {
      throw new IllegalArgumentException("stateKeys must be >= 1, was " + stateKeys);
    }
    Path root = Paths.get(System.getProperty("strata.bench.dir",
        System.getProperty("java.io.tmpdir") + "/strata-bench"));
    Path dir = Files.createDirectories(root).resolve(kind.param() + "-" + UUID.randomUUID());
    Files.createDirectories(dir);
    S3ProxyServer server = null;
    Thread stopper = null;
    StateStoreProvider provider = null;
    try {
      String checkpointRoot;
      SQLConf sql = new SQLConf();
      Configuration hadoop = new Configuration();
      // Spark's RocksDB provider requires a query run id (StreamExecution.RUN_ID_KEY).
      hadoop.set("sql.streaming.runId", UUID.randomUUID().toString());
      if (kind.isS3()) {
        server = S3ProxyServer.start(dir.resolve("s3"), Map.of());
        S3ProxyServer s = server;
        stopper = new Thread(s::close, "stop-s3proxy");
        Runtime.getRuntime().addShutdownHook(stopper); // a crashed fork leaves no server behind
        server.createBucket(BUCKET);
        String endpoint = server.endpoint().toString();
        if (kind.isStrata()) {
          checkpointRoot = "s3://" + BUCKET + "/ckpt";
          sql.setConfString(PREFIX + "s3.endpoint", endpoint);
          sql.setConfString(PREFIX + "s3.region", "us-east-1");
          sql.setConfString(PREFIX + "s3.pathStyleAccess", "true");
          sql.setConfString(PREFIX + "s3.accessKeyId", S3ProxyServer.ACCESS_KEY);
          sql.setConfString(PREFIX + "s3.secretAccessKey", S3ProxyServer.SECRET_KEY);
        } else {
          // Spark's providers reach the server through Hadoop S3A (hadoop-aws, no SDK bundle).
          checkpointRoot = "s3a://" + BUCKET + "/ckpt";
          hadoop.set("fs.s3a.endpoint", endpoint);
          hadoop.set("fs.s3a.endpoint.region", "us-east-1");
          hadoop.set("fs.s3a.path.style.access", "true");
          hadoop.set("fs.s3a.connection.ssl.enabled", "false");
          hadoop.set("fs.s3a.access.key", S3ProxyServer.ACCESS_KEY);
          hadoop.set("fs.s3a.secret.key", S3ProxyServer.SECRET_KEY);
          hadoop.set("fs.s3a.aws.credentials.provider",
              "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider");
          // S3Proxy returns no ETag on HEAD of a directory marker.
          hadoop.set("fs.s3a.change.detection.version.required", "false");
        }
      } else {
        checkpointRoot = dir.resolve("ckpt").toUri().toString();
      }
      if (kind.provider() == StoreKind.Provider.ROCKSDB) {
        // Spark's provider takes its local directory from spark.local.dir (read by SparkConf
        // from system properties when no SparkEnv runs).
        System.setProperty("spark.local.dir", dir.resolve("local").toString());
        sql.setConfString("spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled",
            Boolean.toString(kind.changelog()));
      }
      StateStoreId id = new StateStoreId(checkpointRoot, 0, 0, StateStoreId.DEFAULT_STORE_NAME());
      provider = newProvider(kind, id, sql, hadoop, dir.resolve("local"));
      BenchStore b = new BenchStore(kind, dir, id, sql, hadoop, server, stopper, provider,
          Rows.keys(stateKeys), Rows.values(1024));
      b.prefill();
      return b;
    } catch (IOException | RuntimeException e) {
      closeQuietly(provider, server, stopper, dir, e);
      throw e;
    }
  }

  /** A new, initialised provider of {@code kind}; Strata's local directory is {@code local}. */
  private static StateStoreProvider newProvider(StoreKind kind, StateStoreId id, SQLConf base,
      Configuration hadoop, Path local) {
    SQLConf sql = base.clone();
    StateStoreProvider provider = switch (kind.provider()) {
      case STRATA -> {
        sql.setConfString(PREFIX + "localDir", local.toString());
        yield new StrataStateStoreProvider();
      }
      case ROCKSDB -> new RocksDBStateStoreProvider();
      case HDFS -> new HDFSBackedStateStoreProvider();
    };
    provider.init(id, Rows.KEY, Rows.VALUE, new NoPrefixKeyStateEncoderSpec(Rows.KEY), false,
        new StateStoreConf(sql, scala.collection.immutable.Map$.MODULE$.empty()), hadoop, false,
        Option.empty());
    return provider;
  }

  /**
   * Another provider instance on this store's checkpoint, with its own empty local directory
   * under {@code local}: what a fresh executor would open. It has loaded nothing yet; its first
   * {@code getStore(version)} restores that version from the checkpoint. The caller closes it.
   */
  StateStoreProvider openReplica(Path local) {
    return newProvider(kind, storeId, sql, hadoop, local);
  }

  /** The scratch directory of this trial (deleted by {@link #close()}). */
  Path dir() {
    return dir;
  }

  private void prefill() {
    for (int from = 0; from < keys.length; from += PREFILL_KEYS_PER_VERSION) {
      StateStore s = begin();
      int to = Math.min(keys.length, from + PREFILL_KEYS_PER_VERSION);
      for (int i = from; i < to; i++) {
        s.put(keys[i], value(i), CF);
      }
      commit(s);
    }
  }

  /** A writable store at the newest committed version (Spark's {@code getStore}). */
  StateStore begin() {
    return provider.getStore(version, Option.empty());
  }

  /** Commits {@code store} and remembers the new version. */
  long commit(StateStore store) {
    long v = store.commit();
    if (v != version + 1) {
      throw new IllegalStateException("commit of " + kind.param() + " version " + (version + 1)
          + " returned version " + v);
    }
    version = v;
    return v;
  }

  /**
   * Checks, outside the measurement, that the newest committed version holds exactly the
   * pre-filled keys (aborted iterations left nothing behind, commits lost nothing).
   *
   * @throws IllegalStateException if a full scan does not count {@link #size()} rows
   */
  void verify() {
    StateStore s = begin();
    long rows = 0;
    try {
      StateStoreIterator<UnsafeRowPair> it = s.iterator(CF);
      try {
        while (it.hasNext()) {
          it.next();
          rows++;
        }
      } finally {
        it.close();
      }
    } finally {
      s.abort();
    }
    if (rows != keys.length) {
      throw new IllegalStateException("Cannot verify " + kind.param() + " version " + version
          + ": a full scan counted " + rows + " rows, expected " + keys.length);
    }
  }

  /** Spark's background maintenance, run between iterations (never measured). */
  void maintenance() {
    provider.doMaintenance();
  }

  /** The newest committed version. */
  long version() {
    return version;
  }

  /** Number of keys (pre-filled; no benchmark commits a new or removed key). */
  int size() {
    return keys.length;
  }

  /** Key {@code i}, 0 &lt;= i &lt; {@link #size()}. */
  UnsafeRow key(int i) {
    return keys[i];
  }

  /** A value row for counter {@code n} (one of 1024 prebuilt rows). */
  UnsafeRow value(long n) {
    return values[(int) (n & (values.length - 1))];
  }

  @Override
  public void close() {
    closeQuietly(provider, server, serverStopper, dir, null);
  }

  private static void closeQuietly(StateStoreProvider provider, S3ProxyServer server,
      Thread stopper, Path dir, Exception primary) {
    RuntimeException failure = null;
    try {
      if (provider != null) {
        provider.close();
      }
    } catch (RuntimeException e) {
      failure = e;
    }
    if (server != null) {
      server.close();
      try {
        Runtime.getRuntime().removeShutdownHook(stopper);
      } catch (IllegalStateException shuttingDown) {
        // the hook runs anyway; close() is idempotent
      }
    }
    try {
      deleteRecursively(dir);
    } catch (UncheckedIOException e) {
      if (failure == null) {
        failure = e;
      } else {
        failure.addSuppressed(e);
      }
    }
    if (failure != null) {
      if (primary != null) {
        primary.addSuppressed(failure);
      } else {
        throw failure;
      }
    }
  }

  /** Deletes {@code p} and everything under it, if it exists. */
  static void deleteRecursively(Path p) {
    if (!Files.exists(p)) {
      return;
    }
    try (Stream<Path> s = Files.walk(p)) {
      for (Path f : s.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(f);
      }
    } catch (IOException e) {
      throw new UncheckedIOException("Cannot delete benchmark directory " + p, e);
    }
  }
}
