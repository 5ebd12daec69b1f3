// SPDX-License-Identifier: Apache-2.0
package io.strata.tools;

import io.strata.format.Manifest;
import io.strata.format.Reachability;
import io.strata.format.PublishedSnapshot;
import io.strata.format.StoreLayout;
import io.strata.objectstore.ObjectInfo;
import io.strata.sync.StoreInspector;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.Future;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParentCommand;

/**
 * {@code strata rewind <checkpoint> --to-batch N [--dry-run] [--force]}: makes the next start of
 * the query re-run from batch {@code N}, as deleting {@code offsets/<b>} and {@code commits/<b>}
 * of batches {@code N} and later by hand does (Spark then plans batch {@code N} anew from the
 * offsets of batch {@code N - 1} and loads state version {@code N}), with the checks a hand
 * deletion lacks:
 *
 * <ul>
 *   <li>batch {@code N - 1} must be committed and still in both of Spark's logs, and batch {@code
 *       N - 2} in the offset log, which the restart reads to check it ({@code N >= 1}; Spark
 *       purges its logs by {@code minBatchesToRetain}), else exit 4 naming the oldest batch a
 *       rewind can re-run from;
 *   <li>no store may be gone as a whole (every partition of an operator up to its greatest
 *       listed has a store of each name its partitions have);
 *   <li>every Strata store must hold version {@code N} whole: its version object (format 1: the
 *       greatest generation; format 2: the attempt {@code commits/<N-1>} names) and every object
 *       its load reads (one GET of the manifest per store, the rest from the listing), else exit
 *       4 naming the store and its oldest version;
 *   <li>the query must look stopped ({@link QueryLiveness}, as {@code gc --apply}), else exit 4
 *       unless {@code --force};
 *   <li>another provider's state is refused (exit 3).
 * </ul>
 *
 * <p>Deletes batch by batch from the newest down, {@code commits/<b>} before {@code
 * offsets/<b>}, one request each, so that a rewind stopped half-way leaves a checkpoint Spark
 * restarts from (at a batch between {@code N} and the old end, re-running it with its logged
 * offsets), and running the command again finishes it. State objects are not touched: versions
 * above {@code N} that the old run committed are superseded by the re-run's commits (format 1:
 * a later query run writes a greater generation; format 2: Spark names the re-run's attempts in
 * its commit log), and collected by garbage collection once below the retention (docs/format.md,
 * "Query runs, epochs and generations").
 */
@Command(name = "rewind", mixinStandardHelpOptions = true,
    description = "Make the next start of the query re-run from batch N (deletes Spark's offset "
        + "and commit log entries of batches N and later, after checking that the state of "
        + "version N is whole and the query is stopped).")
final class RewindCommand implements Callable<Integer> {
  @ParentCommand StrataTool tool;
  @Mixin CommonOptions options;

  @Parameters(index = "0", paramLabel = "CHECKPOINT", description = "The checkpoint location.")
  String checkpoint;

  @Option(names = "--to-batch", paramLabel = "N", required = true,
      description = "The batch the next start runs first (>= 1; batch N-1 stays committed).")
  long toBatch;

  @Option(names = "--dry-run", description = "Only say what would be deleted.")
  boolean dryRun;

  @Option(names = "--force", description = "Rewind even though the query looks alive.")
  boolean force;

  @Option(names = "--idle-minutes", paramLabel = "M", defaultValue = "10",
      description = "The query looks alive if it wrote its logs or an object of a store (a "
          + "version, a spill) less than M minutes ago (default: ${DEFAULT-VALUE}).")
  long idleMinutes;

  @Override
  public Integer call() throws Exception {
    try (ToolContext ctx = new ToolContext(tool, options, checkpoint)) {
      CheckpointScan scan = ctx.strataOnlyScan("Refusing to rewind");
      long idleMillis = QueryLiveness.idleMillis(idleMinutes);
      if (toBatch < 1) {
        throw new ToolException(StrataTool.EXIT_USAGE, "Invalid --to-batch " + toBatch
            + ": expected a batch >= 1 (batch N-1 stays committed; to run the query from "
            + "its first batch again, start it on a new checkpoint location)", null);
      }
      Set<Long> offsets = batches(scan, "offsets/");
      Set<Long> commits = batches(scan, "commits/");
      if (scan.spark.latestOffset().isEmpty() || scan.spark.latestCommit().isEmpty()) {
        throw new ToolException(StrataTool.EXIT_REFUSED, "Refusing to rewind "
            + ctx.checkpoint + " to batch " + toBatch + ": Spark's offset and commit logs "
            + "(offsets/, commits/) hold no committed batch (is this the checkpoint's root?)",
            null);
      }
      long latestOffset = scan.spark.latestOffset().getAsLong();
      long latestCommit = scan.spark.latestCommit().getAsLong();
      // A commit log running past the offset log (a hand deletion cut short) is rewound too:
      // Spark does not start from offsets that end below a commit.
      long end = Math.max(latestOffset, latestCommit);
      if (toBatch > end) {
        throw new ToolException(StrataTool.EXIT_USAGE, "Invalid --to-batch " + toBatch + ": "
            + "the offset log ends at batch " + latestOffset + ", so the next start already "
            + "runs batch " + (latestCommit + 1) + "; nothing to rewind", null);
      }
      long oldest = oldestFromLogs(offsets, commits, latestCommit);
      if (!scan.restartableAfter(toBatch - 1)) {
        throw new ToolException(StrataTool.EXIT_REFUSED, "Refusing to rewind " + ctx.checkpoint
            + " to batch " + toBatch + ": a restart needs batch " + (toBatch - 1) + " in both "
            + "of Spark's logs (offsets/" + (toBatch - 1) + ", commits/" + (toBatch - 1) + ")"
            + (toBatch >= 2 ? " and the offsets of the batch before (offsets/" + (toBatch - 2)
            + ")" : "") + ", which Spark purges by minBatchesToRetain; "
            + (oldest < 0 ? "no batch can be re-run" : "the oldest batch a rewind can re-run "
            + "from is " + oldest), null);
      }
      CommitLogAttempts committed = ctx.commitLogAttempts(scan);
      Map<String, StoreInspector> inspectors = new HashMap<>();
      scan.strataStores().forEach(s -> inspectors.put(s.id(), ctx.inspector(s)));
      List<String> missing = missingStores(scan, ctx.partitionsOfBatch(toBatch - 1));
      List<String> notWhole = new ArrayList<>(missing);
      notWhole.addAll(notWhole(ctx, scan, inspectors, committed, toBatch));
      if (!notWhole.isEmpty()) {
        // A store gone as a whole has no version at all: no later batch is whole either.
        long whole = missing.isEmpty() ? oldestWhole(ctx, scan, inspectors, committed,
            Math.min(latestCommit + 1, end), offsets, commits) : -1;
        throw new ToolException(StrataTool.EXIT_REFUSED, "Refusing to rewind "
            + ctx.checkpoint + " to batch " + toBatch + ": the state it loads, version "
            + toBatch + ", is no longer whole: " + String.join("; ", notWhole) + "; "
            + (whole < 0 ? "no later batch up to " + latestCommit + " can be re-run either"
            : "the oldest batch a rewind can re-run from is " + whole), null);
      }
      long now = System.currentTimeMillis();
      Optional<String> alive = QueryLiveness.of(scan, now, idleMillis);
      if (!dryRun && alive.isPresent() && !force) {
        throw new ToolException(StrataTool.EXIT_REFUSED, "Refusing to rewind "
            + ctx.checkpoint + " to batch " + toBatch + ": the query looks alive ("
            + alive.get() + ", less than " + idleMinutes + " min ago); a running query would "
            + "write over the rewind. Stop "
            + "the query, or pass --force or --idle-minutes", null);
      }
      List<String> keys = plan(scan);
      int deleted = 0;
      if (!dryRun) {
        for (String k : keys) {
          try {
            ctx.root().delete(List.of(k));
          } catch (IOException | RuntimeException e) {
            throw new ToolException(StrataTool.EXIT_UNREADABLE, "Cannot delete " + k + " of "
                + ctx.checkpoint + " (" + deleted + " of " + keys.size() + " deleted; the "
                + "checkpoint restarts from a batch between " + toBatch + " and "
                + end + ", and running the same rewind again finishes it): "
                + e.getMessage(), e);
          }
          deleted++;
        }
      }
      report(ctx, latestOffset, latestCommit, alive, keys);
      return StrataTool.EXIT_OK;
    }
  }

  /** A batch file of either log, or its Hadoop checksum file {@code .<b>.crc}. */
  private static final java.util.regex.Pattern LOG_FILE =
      java.util.regex.Pattern.compile("(offsets|commits)/(?:(\\d+)|\\.(\\d+)\\.crc)");

  /** Batch ids listed under {@code dir} ({@code offsets/} or {@code commits/}). */
  private static Set<Long> batches(CheckpointScan scan, String dir) {
    Set<Long> out = new HashSet<>();
    for (String k : scan.sparkLogKeys()) {
      if (k.startsWith(dir) && k.substring(dir.length()).matches("\\d{1,18}")) {
        out.add(Long.parseLong(k.substring(dir.length())));
      }
    }
    return out;
  }

  /**
   * The oldest batch a rewind may re-run from by Spark's logs: the restart after a rewind to
   * {@code N} reads {@code offsets/N-1} and {@code commits/N-1}, and, to check the offset log,
   * {@code offsets/N-2} ({@code MicroBatchExecution.validateOffsetLogAndGetPrevOffset}: "batch
   * N-2 doesn't exist" otherwise). So {@code b + 1} for the oldest {@code b} in both logs from
   * which every later batch up to the latest commit is too, one later if {@code offsets/b-1} is
   * gone; -1 if none.
   */
  private static long oldestFromLogs(Set<Long> offsets, Set<Long> commits, long latestCommit) {
    long b = latestCommit;
    if (!offsets.contains(b) || !commits.contains(b)) {
      return -1;
    }
    while (b > 0 && offsets.contains(b - 1) && commits.contains(b - 1)) {
      b--;
    }
    return b == 0 || offsets.contains(b - 1) ? b + 1 : b + 2;
  }

  /**
   * Stores the listing shows no object of though Spark loads them: every partition of an
   * operator has a store of each name any of its partitions has (the join's four, for
   * example), and partitions run from 0 to the greatest listed, or to {@code logged - 1} when
   * the offset log records the number and the operator lists more than partition 0 (Spark runs
   * every partition of a stateful operator every batch; an operator without keys, a global
   * aggregation or a limit, has partition 0 only). An operator gone as a whole, or every
   * partition but 0 of one, is not seen.
   *
   * @param logged {@code spark.sql.shuffle.partitions} of the offset log, or -1
   */
  private static List<String> missingStores(CheckpointScan scan, int logged) {
    Map<Long, Set<Integer>> partitions = new java.util.TreeMap<>();
    Map<Long, Set<String>> names = new HashMap<>();
    Set<String> present = new HashSet<>();
    for (CheckpointScan.Store s : scan.strataStores()) {
      partitions.computeIfAbsent(s.operator(), x -> new java.util.TreeSet<>())
          .add(s.partition());
      names.computeIfAbsent(s.operator(), x -> new java.util.TreeSet<>()).add(s.name());
      present.add(s.id());
    }
    List<String> out = new ArrayList<>();
    partitions.forEach((op, parts) -> {
      int listedMax = ((java.util.TreeSet<Integer>) parts).last();
      // The logged count when known (a repartition leaves partitions above it), else the listing.
      int max = listedMax > 0 ? (logged > 0 ? logged - 1 : listedMax) : listedMax;
      for (int p = 0; p <= max; p++) {
        for (String name : names.get(op)) {
          CheckpointScan.Store s = new CheckpointScan.Store(op, p, name, List.of());
          if (!present.contains(s.id())) {
            out.add("store " + s.id() + " has no object at all (" + s.relativeLocation()
                + " is gone, though operator " + op + " has stores named " + names.get(op)
                + " in partitions up to " + listedMax
                + (logged > 0 ? " and offsets/<N-1> records " + logged + " partitions" : "")
                + ")");
          }
        }
      }
    });
    return out;
  }

  /**
   * The oldest version above {@link #toBatch}, up to {@code newest} (at most the end of the
   * logs: a rewind to a later batch has nothing to delete), whose batch a rewind can re-run from
   * ({@code v - 1} in both logs, {@code v - 2} in the offset log) and that every store holds
   * whole, or -1: versions some store
   * lists no object of are passed over without a request, the others cost a manifest GET per
   * store, at most 20 of them.
   */
  private long oldestWhole(ToolContext ctx, CheckpointScan scan,
      Map<String, StoreInspector> inspectors, CommitLogAttempts committed, long newest,
      Set<Long> offsets, Set<Long> commits) throws Exception {
    // Candidates from the listing (never a count up to newest: a stray batch number may be huge).
    if (toBatch + 1 > newest) {
      return -1;
    }
    java.util.TreeSet<Long> candidates = new java.util.TreeSet<>();
    scan.strataStores().stream().findFirst().ifPresent(first -> first.versionObjects()
        .forEach(o -> candidates.add(StoreLayout.versionOf(o.key()))));
    int tried = 0;
    for (long v : candidates.subSet(toBatch + 1, true, newest, true)) {
      if (tried >= 20) {
        break;
      }
      long version = v;
      if (!offsets.contains(v - 1) || !commits.contains(v - 1)
          || (v >= 2 && !offsets.contains(v - 2))) {
        continue;
      }
      boolean listed = scan.strataStores().stream().allMatch(s -> s.versionObjects().stream()
          .anyMatch(o -> StoreLayout.versionOf(o.key()) == version));
      if (!listed) {
        continue;
      }
      tried++;
      if (notWhole(ctx, scan, inspectors, committed, v).isEmpty()) {
        return v;
      }
    }
    return -1;
  }

  /**
   * Why {@code version} of some Strata stores cannot be loaded: a missing version object, an
   * unreadable manifest, or an object its load reads that is gone; empty if every store holds
   * it whole.
   */
  private static List<String> notWhole(ToolContext ctx, CheckpointScan scan,
      Map<String, StoreInspector> inspectors, CommitLogAttempts committed, long version)
      throws Exception {
    List<Future<Optional<String>>> checks = new ArrayList<>();
    int partitions = ctx.partitionsOfBatch(version - 1);
    for (CheckpointScan.Store s : scan.strataStores()) {
      if (s.beyond(partitions)) {
        continue; // batch version - 1 had fewer partitions: it loads nothing of this store
      }
      StoreInspector in = inspectors.get(s.id());
      long storesOfPartition = storesOfPartition(scan, s);
      checks.add(ctx.pool.submit(() -> check(s, in, committed, version, storesOfPartition)));
    }
    List<String> out = new ArrayList<>();
    for (Future<Optional<String>> f : checks) {
      f.get().ifPresent(out::add);
    }
    return out;
  }

  /** How many Strata stores {@code s}'s operator has in {@code s}'s partition. */
  static long storesOfPartition(CheckpointScan scan, CheckpointScan.Store s) {
    return scan.strataStores().stream()
        .filter(o -> o.operator() == s.operator() && o.partition() == s.partition()).count();
  }

  /**
   * Why store {@code s} cannot load {@code version}, or empty if it holds it whole: its version
   * object (as a load locates it: in checkpoint format 2 the attempt the commit log names, once
   * it names one for each of the partition's {@code storesOfPartition} stores) and every object
   * that load reads (a published snapshot on its lineage, else its base files and deltas) are
   * listed. One manifest GET.
   */
  static Optional<String> check(CheckpointScan.Store s, StoreInspector in,
      CommitLogAttempts committed, long version, long storesOfPartition) {
    boolean attemptKeys = StoreSummary.attemptKeys(s);
    long oldestListed = s.versionObjects().stream().mapToLong(o -> StoreLayout.versionOf(
        o.key())).min().orElse(-1);
    long newestListed = s.versionObjects().stream().mapToLong(o -> StoreLayout.versionOf(
        o.key())).max().orElse(-1);
    String oldest = oldestListed < 0 ? " (it holds no version object)"
        : " (it holds versions " + oldestListed + " to " + newestListed + ")";
    if (s.versionObjects().stream().noneMatch(o -> StoreLayout.versionOf(o.key()) == version)) {
      return Optional.of("store " + s.id() + " has no version object of version " + version
          + oldest);
    }
    if (attemptKeys) {
      List<String> keys = s.versionObjects().stream().map(ObjectInfo::key)
          .filter(k -> StoreLayout.versionOf(k) == version).toList();
      Optional<Set<String>> named = committed.named(s, version);
      // Only when the file names an id for every store of the partition (a store without one
      // is loaded without an id: the newest attempt, as below).
      if (named.isPresent() && named.get().size() >= storesOfPartition
          && committed.committed(s, version, keys).isEmpty()) {
        // Spark passes the id commits/<version-1> names; the load reads exactly that attempt.
        return Optional.of("store " + s.id() + ": commits/" + (version - 1) + " names the "
            + "attempts " + new java.util.TreeSet<>(named.get()) + " of version " + version
            + " for its partition, and " + s.relativeLocation() + "/"
            + StoreLayout.versionPrefix(version) + " holds none of them (only "
            + keys.stream().map(StoreLayout::attemptOf).toList() + "; Spark loads the named "
            + "attempt, so a load of version " + version + " would fail)");
      }
    }
    String key;
    Manifest m;
    try {
      key = StoreSummary.located(s, version, attemptKeys, in, committed);
      m = in.manifest(key);
    } catch (IOException | RuntimeException e) {
      return Optional.of("store " + s.id() + ": version " + version + " cannot be read: "
          + e.getMessage());
    }
    Set<String> listed = new HashSet<>();
    s.objects().forEach(o -> listed.add(o.key()));
    Manifest restored = m;
    if (!m.deltas().isEmpty()) {
      Optional<PublishedSnapshot> p = in.usablePublishedSnapshot(m, s.objects());
      if (p.isPresent()) {
        restored = p.get().rebase(m);
      }
    }
    for (String k : new java.util.TreeSet<>(Reachability.namedKeys(restored))) {
      if (!listed.contains(k)) {
        return Optional.of("store " + s.id() + ": " + s.relativeLocation() + "/" + key
            + " names " + s.relativeLocation() + "/" + k + ", which is gone (collected or "
            + "deleted; a load of version " + version + " would fail)");
      }
    }
    return Optional.empty();
  }

  /**
   * What to delete, in order: every listed file of batch {@link #toBatch} or later in either
   * log (its batch file, and a local file system's checksum file {@code .<b>.crc}, also one left
   * past the logs' end by a hand deletion), newest batch first, each batch's commit before its
   * offsets, each checksum file before its batch file (so a cut never leaves a checksum without
   * its file). Driven by the listing, so a stray huge batch number costs nothing.
   */
  private List<String> plan(CheckpointScan scan) {
    record Entry(long batch, int order, String key) { }
    List<Entry> entries = new ArrayList<>();
    for (String k : scan.sparkLogKeys()) {
      java.util.regex.Matcher m = LOG_FILE.matcher(k);
      String digits = !m.matches() ? null : m.group(2) != null ? m.group(2) : m.group(3);
      if (digits != null && digits.length() < 19) {
        long b = Long.parseLong(digits);
        if (b >= toBatch) {
          // commits before offsets; a checksum file before its batch file
          int order = (m.group(1).equals("commits") ? 0 : 2) + (m.group(3) == null ? 1 : 0);
          entries.add(new Entry(b, order, k));
        }
      }
    }
    entries.sort(java.util.Comparator.comparingLong(Entry::batch).reversed()
        .thenComparingInt(Entry::order));
    return entries.stream().map(Entry::key).toList();
  }

  private void report(ToolContext ctx, long latestOffset, long latestCommit,
      Optional<String> alive, List<String> keys) {
    if (options.json) {
      Map<String, Object> j = new LinkedHashMap<>();
      j.put("checkpoint", ctx.checkpoint);
      j.put("mode", dryRun ? "dry-run" : "apply");
      j.put("toBatch", toBatch);
      j.put("latestOffsetBefore", latestOffset);
      j.put("latestCommitBefore", latestCommit);
      j.put("looksAlive", alive.orElse(null));
      j.put("objects", keys);
      j.put("deleteRequests", dryRun ? 0 : keys.size());
      ctx.printJson(j);
      return;
    }
    ctx.out.println("Rewind of " + ctx.checkpoint + " to batch " + toBatch
        + (dryRun ? " (dry run)" : ""));
    ctx.out.println("  before: offsets up to batch " + latestOffset + ", commits up to batch "
        + latestCommit + "; after: offsets and commits up to batch " + (toBatch - 1)
        + "; the next start runs batch " + toBatch + " on state version " + toBatch
        + " (checked whole in every store)");
    alive.ifPresent(a -> ctx.out.println("  the query looks alive: " + a));
    ctx.out.println();
    keys.forEach(k -> ctx.out.println((dryRun ? "would delete " : "deleted ") + k));
    ctx.out.println();
    ctx.out.println((dryRun ? "Would delete " : "Deleted ") + Table.count(keys.size(), "object")
        + (dryRun ? "" : " in " + Table.count(keys.size(), "DELETE request")) + "; state "
        + "objects are kept (versions above " + toBatch + " are superseded by the re-run and "
        + "collected by garbage collection).");
  }
}
