// SPDX-License-Identifier: Apache-2.0
package io.strata.tools;

import io.strata.format.BaseSnapshot;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParentCommand;

/**
 * {@code strata describe <checkpoint>}: per operator, store and partition the newest version
 * and its attempt, base snapshot, delta chain, objects, bytes, last commit and lost races;
 * Spark's offset and commit logs and whether they agree with each other and with the stores;
 * totals; the writes per batch and their list price ({@link BatchCost}). Reads one LIST of the checkpoint, then per store one LIST of its newest version's
 * prefix and one tail GET. Exit 0, or 3 if the checkpoint or a store's newest manifest cannot
 * be read.
 */
@Command(name = "describe", mixinStandardHelpOptions = true,
    description = "Per operator, partition and store: the newest version, base snapshot, delta "
        + "chain, objects, bytes, last commit and lost races; Spark's offset and commit logs; "
        + "totals.")
final class DescribeCommand implements Callable<Integer> {
  @ParentCommand StrataTool tool;
  @Mixin CommonOptions options;

  @Parameters(index = "0", paramLabel = "CHECKPOINT",
      description = "The query's checkpoint location, e.g. s3://bucket/checkpoints/q1")
  String checkpoint;

  @Override
  public Integer call() throws Exception {
    try (ToolContext ctx = new ToolContext(tool, options, checkpoint)) {
      CheckpointScan scan = ctx.strataScan();
      List<StoreSummary> stores = summaries(ctx, scan);
      long expected = scan.spark.latestCommit().isPresent()
          ? scan.spark.latestCommit().getAsLong() + 1 : 0;
      List<String> behind = new ArrayList<>();
      int partitions = ctx.partitionsOfBatch(expected - 1);
      for (StoreSummary s : stores) {
        // A partition above the batch's count (left by a repartition) is not behind.
        if (s.newestVersion() < expected && !s.store().beyond(partitions)) {
          behind.add(s.store().id() + " (version " + s.newestVersion() + ")");
        }
      }
      boolean unreadable = stores.stream().anyMatch(s -> s.error() != null);
      if (options.json) {
        Map<String, Object> j = new LinkedHashMap<>();
        j.put("checkpoint", ctx.checkpoint);
        Map<String, Object> spark = sparkJson(scan, behind);
        java.util.OptionalInt claim = claim(ctx, scan);
        spark.put("repartitionClaim", claim.isPresent() ? claim.getAsInt() : null);
        j.put("spark", spark);
        List<Object> list = new ArrayList<>();
        stores.forEach(s -> list.add(s.json()));
        j.put("stores", list);
        j.put("totals", totals(scan, stores));
        j.put("writesPerBatch", scan.cost.map(BatchCost::json).orElse(null));
        ctx.printJson(j);
      } else {
        print(ctx, scan, stores, behind);
      }
      for (StoreSummary s : stores) {
        if (s.error() != null) {
          ctx.err.println("strata: " + s.error());
        }
      }
      return unreadable ? StrataTool.EXIT_UNREADABLE : StrataTool.EXIT_OK;
    }
  }

  static List<StoreSummary> summaries(ToolContext ctx, CheckpointScan scan)
      throws InterruptedException, ExecutionException {
    CommitLogAttempts committed = ctx.commitLogAttempts(scan);
    List<Future<StoreSummary>> futures = new ArrayList<>();
    for (CheckpointScan.Store s : scan.strataStores()) {
      futures.add(ctx.pool.submit(() -> StoreSummary.of(s, ctx.inspector(s), committed)));
    }
    List<StoreSummary> out = new ArrayList<>();
    for (Future<StoreSummary> f : futures) {
      out.add(f.get());
    }
    return out;
  }

  /**
   * The rescale job's claim on the newest offsets entry ({@link ToolContext#repartitionClaim}),
   * or empty: one GET (the job commits the batch before it replaces its claim, so the claim may
   * sit on a committed batch).
   */
  private static java.util.OptionalInt claim(ToolContext ctx, CheckpointScan scan) {
    CheckpointScan.SparkLogs l = scan.spark;
    if (l.latestOffset().isEmpty()) {
      return java.util.OptionalInt.empty();
    }
    return ctx.repartitionClaim(l.latestOffset().getAsLong());
  }

  private static Map<String, Object> sparkJson(CheckpointScan scan, List<String> behind) {
    Map<String, Object> j = new LinkedHashMap<>();
    CheckpointScan.SparkLogs l = scan.spark;
    j.put("metadata", l.metadata());
    j.put("latestOffsetBatch", l.latestOffset().isPresent() ? l.latestOffset().getAsLong() : null);
    j.put("latestCommitBatch", l.latestCommit().isPresent() ? l.latestCommit().getAsLong() : null);
    j.put("latestCommitTime", l.latestCommitObject().map(o -> Table.time(o.lastModifiedMillis()))
        .orElse(null));
    j.put("logs", l.agreement());
    j.put("storesBehindCommitLog", behind);
    return j;
  }

  private static Map<String, Object> totals(CheckpointScan scan, List<StoreSummary> stores) {
    Map<String, Object> j = new LinkedHashMap<>();
    j.put("operators", stores.stream().map(s -> s.store().operator()).distinct().count());
    j.put("stores", stores.size());
    j.put("stateObjects", stores.stream().mapToLong(s -> s.store().objects().size()).sum());
    j.put("stateBytes", stores.stream().mapToLong(s -> s.store().bytes()).sum());
    j.put("lostRaces", stores.stream().mapToLong(StoreSummary::extraAttempts).sum());
    j.put("objects", scan.objects);
    j.put("bytes", scan.bytes);
    return j;
  }

  private static void print(ToolContext ctx, CheckpointScan scan, List<StoreSummary> stores,
      List<String> behind) {
    CheckpointScan.SparkLogs l = scan.spark;
    java.util.OptionalInt claim = claim(ctx, scan);
    ctx.out.println("Checkpoint " + ctx.checkpoint);
    ctx.out.println("  offsets: " + (l.latestOffset().isPresent()
        ? "batch " + l.latestOffset().getAsLong() : "none")
        + "   commits: " + (l.latestCommit().isPresent() ? "batch " + l.latestCommit().getAsLong()
        + " at " + Table.time(l.latestCommitObject().get().lastModifiedMillis()) : "none")
        + "   logs: " + (claim.isPresent() ? "a rescale in progress (below)" : l.agreement()));
    if (claim.isPresent()) {
      ctx.out.println("  offsets/" + l.latestOffset().getAsLong() + " is the rescale job's "
          + "claim (io.strata.spark.StrataRepartition, to " + claim.getAsInt() + " partitions), "
          + "not a batch: the job was interrupted or is running. Run it again with "
          + "--partitions " + claim.getAsInt() + " before starting the query (the query fails "
          + "on the claim until then)");
    }
    if (!behind.isEmpty()) {
      ctx.out.println("  stores behind the commit log (a committed batch without its state "
          + "version): " + String.join(", ", behind));
    }
    ctx.out.println();
    if (stores.isEmpty()) {
      ctx.out.println("No state stores (a stateless query, or no batch has run yet).");
    } else {
      Table t = new Table("OPERATOR", "PARTITION", "STORE", "VERSION", "ATTEMPT", "BASE",
          "CHAIN", "KEYS", "OBJECTS", "BYTES", "LAST COMMIT", "LOST RACES");
      for (StoreSummary s : stores) {
        var m = s.manifest();
        t.row(s.store().operator(), s.store().partition(), s.store().name(), s.newestVersion(),
            m == null ? (s.error() == null ? null : "UNREADABLE") : m.attempt(),
            m == null ? null : m.base().map(BaseSnapshot::version).orElse(null),
            m == null ? null : m.deltaChainLength(),
            m == null ? null : m.numKeys(),
            s.store().objects().size(), Table.bytes(s.store().bytes()),
            Table.time(s.lastCommitMillis()), s.extraAttempts());
      }
      t.print(ctx.out);
    }
    Map<String, Object> tot = totals(scan, stores);
    ctx.out.println();
    ctx.out.println("Totals: " + Table.count(((Number) tot.get("operators")).longValue(),
        "operator") + ", " + Table.count(((Number) tot.get("stores")).longValue(), "store")
        + ", " + Table.count(((Number) tot.get("stateObjects")).longValue(), "state object")
        + " (" + Table.bytes((Long) tot.get("stateBytes")) + "), "
        + Table.count(((Number) tot.get("lostRaces")).longValue(), "lost race") + "; "
        + Table.count(scan.objects, "object") + " (" + Table.bytes(scan.bytes)
        + ") in the checkpoint");
    scan.cost.ifPresent(c -> ctx.out.println(c.line()));
  }
}
