// SPDX-License-Identifier: Apache-2.0
package io.strata.tools;

import io.strata.format.Reachability;
import io.strata.format.StoreLayout;
import io.strata.metrics.GcStats;
import io.strata.sync.GcDecision;
import io.strata.sync.GcSettings;
import io.strata.sync.StoreInspector;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.concurrent.Future;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParentCommand;

/**
 * {@code strata gc <checkpoint> --dry-run | --apply [--force]}: what maintenance would delete
 * and why, decided by the same code ({@code GarbageCollector} over {@link Reachability}) with
 * the query's retention ({@code spark.sql.streaming.minBatchesToRetain}, Strata's grace
 * period, and never fewer versions than reach back to the oldest batch Spark's logs still
 * list). The newest version of every store is the one a restart loads, from Spark's logs (the
 * latest commit + 1, else the latest offset), not the listing, so versions an earlier query run
 * left above a rewind point never lift the retention window; a store whose greatest version is
 * below it is damaged and not collected at all. Without either log, {@code --apply} needs
 * {@code --force} and each store's greatest listed version is used. {@code --apply} deletes
 * it, and refuses (exit 4) while the query looks alive ({@link QueryLiveness}: its offset or commit
 * log or a store's object written less than {@code --idle-minutes} ago) unless {@code --force} is
 * given; even then it deletes only what a concurrent maintenance round could (versions below
 * the retention, unreferenced objects older than the grace period, and the settled and retired
 * objects of docs/format.md, "Retention and garbage collection", which go without waiting for
 * it).
 */
@Command(name = "gc", mixinStandardHelpOptions = true,
    description = "What maintenance would delete and why (--dry-run), or delete it (--apply).")
final class GcCommand implements Callable<Integer> {
  @ParentCommand StrataTool tool;
  @Mixin CommonOptions options;

  @Parameters(index = "0", paramLabel = "CHECKPOINT", description = "The checkpoint location.")
  String checkpoint;

  @ArgGroup(exclusive = true, multiplicity = "1")
  Mode mode;

  static final class Mode {
    @Option(names = "--dry-run", required = true, description = "Only say what would go.")
    boolean dryRun;

    @Option(names = "--apply", required = true, description = "Delete it.")
    boolean apply;
  }

  @Option(names = "--force",
      description = "With --apply: delete even though the query looks alive.")
  boolean force;

  @Option(names = "--idle-minutes", paramLabel = "M", defaultValue = "10",
      description = "With --apply: the query looks alive if it wrote its logs or an object of "
          + "a store (a version, a spill) less than M minutes ago (default: ${DEFAULT-VALUE}).")
  long idleMinutes;

  private record StoreGc(CheckpointScan.Store store, StoreInspector inspector,
      GcDecision decision, String error) { }

  @Override
  public Integer call() throws Exception {
    try (ToolContext ctx = new ToolContext(tool, options, checkpoint)) {
      long idleMillis = QueryLiveness.idleMillis(idleMinutes);
      CheckpointScan scan = ctx.strataScan();
      GcSettings asSet = ctx.settings.gc(ctx.conf);
      // Never fewer versions than reach back to the oldest batch in Spark's logs.
      GcSettings settings = new GcSettings(true, scan.spark.retention(asSet.versionsToRetain()),
          asSet.roundInterval(), asSet.gracePeriodMillis());
      long now = System.currentTimeMillis();
      long newest = scan.spark.restartVersion();
      if (mode.apply && newest < 0 && !force) {
        throw new ToolException(StrataTool.EXIT_REFUSED, "Refusing gc --apply on "
            + ctx.checkpoint + ": it has no offset or commit log, so the version a restart "
            + "loads is unknown (is this the checkpoint's root?). --force collects by each "
            + "store's greatest listed version", null);
      }
      Optional<String> alive = QueryLiveness.of(scan, now, idleMillis);
      if (mode.apply && alive.isPresent() && !force) {
        throw new ToolException(StrataTool.EXIT_REFUSED, "Refusing gc --apply on "
            + ctx.checkpoint + ": the query looks alive (" + alive.get() + ", less than "
            + idleMinutes + " min ago); its own maintenance collects while it runs. Stop the "
            + "query, or pass --force (which deletes only what a concurrent maintenance round "
            + "could), or --idle-minutes", null);
      }
      List<Future<StoreGc>> futures = new ArrayList<>();
      int partitions = ctx.partitionsOfBatch(newest - 1);
      List<String> retired = new ArrayList<>();
      for (CheckpointScan.Store s : scan.strataStores()) {
        StoreInspector in = ctx.inspector(s);
        if (newest >= 0 && s.newestVersion() < newest && s.beyond(partitions)) {
          // Left by a repartition to fewer partitions: no restart loads it, and a rewind to a
          // batch before the repartition does (docs/operations.md, "Rescaling").
          retired.add(s.id());
          continue;
        }
        if (newest >= 0 && s.newestVersion() < newest) {
          // Damaged (or a store's objects deleted): keep everything for recovery.
          futures.add(java.util.concurrent.CompletableFuture.completedFuture(new StoreGc(s, in,
              null, "Not collecting store " + s.id() + ": its greatest version is "
              + s.newestVersion() + ", but the restart loads version " + newest + " (Spark's "
              + "logs); the checkpoint is damaged, so everything is kept (run strata verify)")));
          continue;
        }
        futures.add(ctx.pool.submit(() -> {
          try {
            return new StoreGc(s, in, in.decideGc(newest, settings, now), null);
          } catch (Exception e) {
            return new StoreGc(s, in, null, e.getMessage());
          }
        }));
      }
      List<StoreGc> stores = new ArrayList<>();
      for (Future<StoreGc> f : futures) {
        stores.add(f.get());
      }
      List<String> failures = new ArrayList<>();
      stores.stream().filter(g -> g.error() != null).forEach(g -> failures.add(g.error()));
      long deleted = 0;
      long deletedBytes = 0;
      if (mode.apply) {
        for (StoreGc g : stores) {
          if (g.decision() == null || g.decision().verdict().garbage().isEmpty()) {
            continue;
          }
          try {
            GcStats st = g.inspector().applyGc(g.decision(), settings, false);
            deleted += st.objectsDeleted();
            deletedBytes += st.bytesDeleted();
          } catch (Exception e) {
            failures.add("Cannot delete the garbage of store " + g.store().id() + ": "
                + e.getMessage());
          }
        }
      }
      report(ctx, settings, newest, alive, stores, deleted, deletedBytes, now);
      if (!retired.isEmpty() && !options.json) {
        ctx.out.println("Kept whole: " + retired.size() + " stores beyond the " + partitions
            + " partitions of batch " + (newest - 1) + ", left by a repartition (a rewind to a "
            + "batch before it loads them): " + String.join(", ", retired));
      }
      failures.forEach(f -> ctx.err.println("strata: " + f));
      return failures.isEmpty() ? StrataTool.EXIT_OK : StrataTool.EXIT_UNREADABLE;
    }
  }

  /** {@code minBatchesToRetain} as the settings give it. */
  private static int asSet(ToolContext ctx) {
    try {
      return ctx.settings.gc(ctx.conf).versionsToRetain();
    } catch (ToolException e) {
      return 0; // already validated in call()
    }
  }

  /** Why {@code l} is garbage in the round {@code d} decided, in words. */
  static String why(Reachability.Listed l, GcDecision d, long now) {
    String age = l.ageKnown() ? ", " + Table.age(now - l.lastModifiedMillis()) + " old" : "";
    String key = l.key();
    Reachability.Plan plan = d.plan();
    if (d.unreadablePublishedSnapshots().contains(key)) {
      return "a published snapshot of version " + StoreLayout.publishedSnapshotVersionOf(key)
          + " that cannot be read (damaged): no load can use it" + age;
    }
    return switch (Reachability.kindOf(key)) {
      case VERSION_OBJECT -> "version " + StoreLayout.versionOf(key) + " is below the retention "
          + "(versions >= " + plan.oldestRetainedVersion() + " stay) and no retained manifest "
          + "names it" + age;
      case SPILL -> "a spill delta of version " + StoreLayout.spillVersionOf(key) + " that no "
          + "retained manifest names (an aborted or lost attempt)" + age;
      case SNAPSHOT_SST, SNAPSHOT_PACK -> "a base-snapshot file no retained manifest and no "
          + "published snapshot names" + age;
      case PUBLISHED_SNAPSHOT -> "a published snapshot of version "
          + StoreLayout.publishedSnapshotVersionOf(key) + " that no retained version can use"
          + age;
      case FOREIGN -> "not Strata's (never deleted)";
    };
  }

  private void report(ToolContext ctx, GcSettings settings, long newest, Optional<String> alive,
      List<StoreGc> stores, long deleted, long deletedBytes, long now) {
    long objects = 0;
    long bytes = 0;
    for (StoreGc g : stores) {
      if (g.decision() != null) {
        objects += g.decision().verdict().garbage().size();
        bytes += g.decision().verdict().garbageBytes();
      }
    }
    if (options.json) {
      Map<String, Object> j = new LinkedHashMap<>();
      j.put("checkpoint", ctx.checkpoint);
      j.put("mode", mode.apply ? "apply" : "dry-run");
      j.put("minBatchesToRetain", settings.versionsToRetain());
      j.put("gracePeriodMillis", settings.gracePeriodMillis());
      j.put("newestVersionFromSparkLogs", newest < 0 ? null : newest);
      j.put("looksAlive", alive.orElse(null));
      List<Object> list = new ArrayList<>();
      for (StoreGc g : stores) {
        Map<String, Object> s = new LinkedHashMap<>();
        s.put("store", g.store().id());
        if (g.decision() != null) {
          Reachability.Plan plan = g.decision().plan();
          s.put("newestVersion", plan.newestVersion());
          s.put("oldestRetainedVersion", Math.max(0, plan.oldestRetainedVersion()));
          List<Object> garbage = new ArrayList<>();
          for (Reachability.Listed l : g.decision().verdict().garbage()) {
            Map<String, Object> o = new LinkedHashMap<>();
            o.put("key", g.store().relativeLocation() + "/" + l.key());
            o.put("kind", Reachability.kindOf(l.key()).name());
            o.put("bytes", l.size());
            o.put("why", why(l, g.decision(), now));
            garbage.add(o);
          }
          s.put("garbage", garbage);
          s.put("keptYoung", g.decision().verdict().young());
          List<String> unreadable = new ArrayList<>();
          g.decision().unreadablePublishedSnapshots().forEach(k -> unreadable.add(
              g.store().relativeLocation() + "/" + k));
          s.put("unreadablePublishedSnapshots", unreadable);
        }
        s.put("error", g.error());
        list.add(s);
      }
      j.put("stores", list);
      j.put("garbageObjects", objects);
      j.put("garbageBytes", bytes);
      j.put("deletedObjects", mode.apply ? deleted : null);
      j.put("deletedBytes", mode.apply ? deletedBytes : null);
      ctx.printJson(j);
      return;
    }
    ctx.out.println("Garbage collection of " + ctx.checkpoint + (mode.apply ? "" : " (dry run)"));
    ctx.out.println("  retention: minBatchesToRetain " + settings.versionsToRetain()
        + (settings.versionsToRetain() > asSet(ctx) ? " (as far back as the oldest batch in "
            + "Spark's logs)" : "")
        + ", grace period " + Table.age(settings.gracePeriodMillis()) + "; newest version "
        + (newest < 0 ? "from each store's listing (no offset or commit log)"
            : newest + " (the version a restart loads, from Spark's logs)"));
    alive.ifPresent(a -> ctx.out.println("  the query looks alive: " + a));
    ctx.out.println();
    Table t = new Table("STORE", "OBJECT", "BYTES", "WHY");
    for (StoreGc g : stores) {
      if (g.decision() == null) {
        continue;
      }
      for (Reachability.Listed l : g.decision().verdict().garbage()) {
        t.row(g.store().id(), g.store().relativeLocation() + "/" + l.key(),
            Table.bytes(l.size()), why(l, g.decision(), now));
      }
    }
    if (t.isEmpty()) {
      ctx.out.println("Nothing to delete.");
    } else {
      t.print(ctx.out);
    }
    for (StoreGc g : stores) {
      if (g.decision() == null) {
        continue;
      }
      for (String k : g.decision().unreadablePublishedSnapshots()) {
        ctx.out.println("Unreadable published snapshot " + g.store().relativeLocation() + "/" + k
            + " of store " + g.store().id() + ": no load can use it; it is deleted once older "
            + "than the grace period, and base snapshot files no readable object names wait "
            + "until it is gone (run strata verify for the reason)");
      }
    }
    int young = stores.stream().filter(g -> g.decision() != null)
        .mapToInt(g -> g.decision().verdict().young()).sum();
    ctx.out.println();
    ctx.out.println((mode.apply
        ? "Deleted " + Table.count(deleted, "object") + " (" + Table.bytes(deletedBytes) + ")"
        : "Would delete " + Table.count(objects, "object") + " (" + Table.bytes(bytes) + ")")
        + " of " + Table.count(stores.size(), "store") + "; "
        + Table.count(young, "object") + " younger than the grace period kept (not "
        + "collected before they are older, whether referenced or not).");
  }
}
