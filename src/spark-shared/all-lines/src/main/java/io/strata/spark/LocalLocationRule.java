// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import io.strata.config.StrataConf;
import io.strata.objectstore.ObjectStores;
import java.util.regex.Pattern;
import org.apache.spark.SparkEnv;
import org.apache.spark.sql.execution.streaming.state.StateStoreId;

/**
 * A state location on the local filesystem is only safe when every task runs in one JVM on one
 * machine, or when the directory is shared storage that every executor mounts at the same path.
 *
 * <p>The rule, checked at the provider's {@code init}: a location that {@link ObjectStores#open}
 * maps to the local-filesystem store ({@code file:} or a path without a scheme, see {@link
 * ObjectStores#isLocal}) is refused unless Spark's master is local ({@code local}, {@code
 * local[N]}, {@code local[*]}, {@code local[N,F]}, {@code local[*,F]}) or {@link
 * StrataConf#FILE_CHECKPOINT_SHARED} is true. Any other master is a cluster, {@code
 * local-cluster[...]} included: it runs separate executor JVMs, each with its own local
 * directories. Otherwise each executor would keep the partitions it committed on its own disk,
 * and a partition that moves to another executor (a lost executor, rescheduling, a restart)
 * would find its state missing or stale.
 *
 * <p>Where the master comes from: {@code spark.master} in {@link SparkEnv}'s conf (executors
 * receive the driver's Spark properties, {@code spark.master} among them, when they register).
 * Without a SparkEnv (a provider used outside Spark, as in unit tests) or without {@code
 * spark.master} in it, the master is unknown and treated as local: the rule never fails a run
 * on a guess.
 *
 * <p>A path without a scheme reaches the provider only when it is used directly (tools, tests):
 * Spark's driver qualifies the query's checkpoint location with the Hadoop default file system
 * ({@code ResolveWriteToStream} calls the checkpoint file manager's {@code
 * createCheckpointDirectory}, which qualifies the path) before it builds the state location. So
 * with {@code fs.defaultFS=s3a://bucket} a plain path arrives as {@code s3a://bucket/...} (not
 * local), with {@code hdfs://...} as {@code hdfs://...} (which {@code init} rejects as an
 * unsupported scheme), and with the default {@code file:///} as {@code file:/...} (local).
 */
final class LocalLocationRule {
  /** Spark's local master URLs ({@code SparkMasterRegex}: {@code local}, {@code local[N]}, ...). */
  private static final Pattern LOCAL_MASTER =
      Pattern.compile("local(\\[(\\d+|\\*)(\\s*,\\s*\\d+)?\\])?");

  private LocalLocationRule() { }

  /**
   * Spark's master as this JVM knows it.
   *
   * @param env the executor's (or in local mode the driver's) SparkEnv; null outside Spark
   * @return {@code spark.master}, or null if there is no SparkEnv or it has no master
   */
  static String master(SparkEnv env) {
    return env == null ? null : env.conf().get("spark.master", null);
  }

  /**
   * True if every task runs in this one JVM: {@code local}, {@code local[N]}, {@code local[*]},
   * {@code local[N,F]} or {@code local[*,F]}, or an unknown (null) master. False for {@code
   * local-cluster[...]}, {@code spark://}, {@code yarn}, {@code k8s://} and anything else.
   *
   * @param master Spark's master URL, or null if unknown
   */
  static boolean isLocalMaster(String master) {
    return master == null || LOCAL_MASTER.matcher(master.strip()).matches();
  }

  /**
   * Applies the rule (see the class comment) to one store.
   *
   * @param location the store's state location, as {@code init} resolves it
   * @param master Spark's master, or null if unknown ({@link #master})
   * @param shared {@link StrataConf#fileCheckpointShared()}
   * @param id the store, named in the error
   * @throws UnsupportedOperationException ({@code STATE_STORE_UNSUPPORTED_OPERATION}: Spark 4's
   *     {@code SparkUnsupportedOperationException}, on 3.5 a plain one whose message starts with
   *     the condition) for a local location with a cluster master and the setting off; the
   *     message names the location, the store, the master and the setting
   */
  static void check(String location, String master, boolean shared, StateStoreId id) {
    if (shared || isLocalMaster(master) || !ObjectStores.isLocal(location)) {
      return;
    }
    throw SparkErrors.localLocationOnCluster("Cannot use the local state location " + location
        + " for store (operator " + id.operatorId() + ", partition " + id.partitionId()
        + ", name " + id.storeName() + ") with master " + master + ": each executor would keep "
        + "its partitions' state on its own disk, and it is lost when a partition moves to "
        + "another executor. Use an s3:// (or s3a://) checkpoint location, or set "
        + StrataConf.FILE_CHECKPOINT_SHARED.fullKey() + "=true if " + location + " is shared "
        + "storage mounted at the same path on every executor (NFS).");
  }
}
