// SPDX-License-Identifier: Apache-2.0
package io.strata.tools;

import io.strata.format.StoreLayout;
import io.strata.objectstore.ObjectBody;
import io.strata.objectstore.ObjectInfo;
import io.strata.objectstore.ObjectStore;
import io.strata.sync.StoreInspector;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParentCommand;

/**
 * {@code strata savepoint create|list|drop}: savepoints pin one committed batch of a checkpoint
 * (docs/format.md, "Savepoints"). A savepoint of batch {@code B} is, per Strata store, a hold on
 * the version object of version {@code B + 1} ({@code holds/<name>/<key>.hold}: garbage
 * collection keeps it and everything its manifest names, however old), copies of Spark's small
 * files for batch {@code B} (its offsets and commit, {@code metadata}, the sources' logs and the
 * operators' metadata and schemas) under {@code _strata/savepoints/<name>/spark/}, and last, as
 * the commit point, {@code _strata/savepoints/<name>/savepoint.json}. No state byte is copied.
 */
@Command(name = "savepoint", mixinStandardHelpOptions = true,
    description = "Pin a batch of a checkpoint (create), list the savepoints, or release one "
        + "(drop).",
    subcommands = {SavepointCommand.Create.class, SavepointCommand.ListCommand.class,
        SavepointCommand.Drop.class})
final class SavepointCommand {
  /** Where savepoints are, relative to the checkpoint. */
  static final String ROOT = "_strata/savepoints/";
  /** The commit point of one savepoint, relative to its directory. */
  static final String RECORD = "savepoint.json";
  /**
   * Versions a savepoint's version must lie above the retention's floor, so that no collection
   * round running meanwhile deletes it before its holds are in place.
   */
  static final int MARGIN = 10;

  @ParentCommand StrataTool tool;

  /** {@code strata savepoint create <ckpt> [--batch N] [--name NAME]}. */
  @Command(name = "create", mixinStandardHelpOptions = true,
      description = "Pin batch N (default: the newest committed) of a checkpoint.")
  static final class Create implements Callable<Integer> {
    @ParentCommand SavepointCommand parent;
    @Mixin CommonOptions options;

    @Parameters(index = "0", paramLabel = "CHECKPOINT", description = "The checkpoint location.")
    String checkpoint;

    @Option(names = "--batch", paramLabel = "N",
        description = "The committed batch to pin (default: the newest).")
    Long batch;

    @Option(names = "--name", paramLabel = "NAME",
        description = "1 to 64 of A-Z a-z 0-9 _ . - (default: sp-<UTC time>).")
    String name;

    @Option(names = "--idle-minutes", paramLabel = "M", defaultValue = "10",
        description = "A query whose logs and stores were written less than M minutes ago "
            + "looks alive: its collection may run meanwhile, so its batch must lie "
            + MARGIN + " versions above the retention's floor (default: ${DEFAULT-VALUE}).")
    long idleMinutes;

    @Override
    public Integer call() throws Exception {
      try (ToolContext ctx = new ToolContext(parent.tool, options, checkpoint)) {
        CheckpointScan scan = ctx.strataOnlyScan("Refusing a savepoint of");
        String n = name != null ? name : "sp-" + DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss")
            .withZone(ZoneOffset.UTC).format(Instant.now());
        if (!StoreLayout.isSavepointName(n)) {
          throw new ToolException(StrataTool.EXIT_USAGE, "Invalid --name '" + n + "': expected "
              + "1 to 64 of A-Z a-z 0-9 _ . - (not first)", null);
        }
        if (scan.spark.latestCommit().isEmpty()) {
          throw new ToolException(StrataTool.EXIT_REFUSED, "Refusing a savepoint of "
              + ctx.checkpoint + ": Spark's commit log (commits/) has no committed batch", null);
        }
        long b = batch != null ? batch : scan.spark.latestCommit().getAsLong();
        if (!scan.restartableAfter(b)) {
          throw new ToolException(StrataTool.EXIT_REFUSED, "Refusing a savepoint of batch " + b
              + " of " + ctx.checkpoint + ": a restart from it needs offsets/" + b + ", commits/"
              + b + (b >= 1 ? " and offsets/" + (b - 1) : "") + ", which Spark's logs no longer "
              + "all hold", null);
        }
        ObjectStore root = ctx.root();
        if (!root.list(ROOT + n + "/").isEmpty() || scan.strataStores().stream().anyMatch(
            s -> s.objects().stream().anyMatch(o -> n.equals(StoreLayout.holdSavepointOf(
                o.key()))))) {
          throw new ToolException(StrataTool.EXIT_USAGE, "A savepoint named '" + n + "' of "
              + ctx.checkpoint + " exists (strata savepoint list; drop it first)", null);
        }
        long version = b + 1;
        long idleMillis = QueryLiveness.idleMillis(idleMinutes);
        Optional<String> alive = QueryLiveness.of(scan, System.currentTimeMillis(), idleMillis);
        int retain = ctx.settings.gc(ctx.conf).versionsToRetain();
        long floor = scan.spark.restartVersion() - retain;
        // The running query collects by its own minBatchesToRetain, which the tool may not be
        // given: Spark purges its logs by the same setting, so once it has purged (the oldest
        // batch listed is above 0), the query's floor is that oldest batch.
        long oldest = scan.spark.oldestBatch().orElse(0);
        String by = "minBatchesToRetain " + retain;
        if (oldest > 0 && oldest > floor) {
          floor = oldest;
          by = "the oldest batch in Spark's logs (a running query purges them by its own "
              + "minBatchesToRetain)";
        }
        // Only a running query collects while the holds are written: a stopped one's state is
        // pinned whatever its distance to the floor (the whole-version check below still holds).
        if (alive.isPresent() && version < floor + MARGIN) {
          throw new ToolException(StrataTool.EXIT_REFUSED, "Refusing a savepoint of batch " + b
              + " of " + ctx.checkpoint + ": the query looks alive (" + alive.get() + ", less "
              + "than " + idleMinutes + " min ago) and its state, version " + version + ", is "
              + "within " + MARGIN + " versions of the retention's floor (" + floor + ", " + by
              + "), so its garbage collection may delete it while the savepoint is made; pin a "
              + "batch >= " + (floor + MARGIN - 1) + ", or stop the query first (a checkpoint "
              + "just written by strata copy looks alive too: pass --idle-minutes 0 when no "
              + "query runs on it)", null);
        }
        CommitLogAttempts committed = ctx.commitLogAttempts(scan);
        Map<String, String> held = new TreeMap<>();
        int partitions = ctx.partitionsOfBatch(b);
        for (CheckpointScan.Store s : scan.strataStores()) {
          if (s.beyond(partitions)) {
            continue; // batch b had fewer partitions (a later repartition): not loaded
          }
          StoreInspector in = ctx.inspector(s);
          Optional<String> why = RewindCommand.check(s, in, committed, version,
              RewindCommand.storesOfPartition(scan, s));
          if (why.isPresent()) {
            throw new ToolException(StrataTool.EXIT_REFUSED, "Refusing a savepoint of batch "
                + b + " of " + ctx.checkpoint + ": " + why.get(), null);
          }
          held.put(s.relativeLocation(), StoreSummary.located(s, version,
              StoreSummary.attemptKeys(s), in, committed));
        }
        String body = "{\"savepoint\":\"" + n + "\",\"batch\":" + b + ",\"version\":" + version
            + ",\"createdAtMillis\":" + System.currentTimeMillis() + "}";
        int requests = 0;
        for (Map.Entry<String, String> e : held.entrySet()) {
          root.putIfAbsent(e.getKey() + "/" + StoreLayout.hold(n, e.getValue()),
              ObjectBody.of(body.getBytes(StandardCharsets.UTF_8)));
          requests++;
        }
        List<String> copied = new ArrayList<>();
        for (ObjectInfo o : root.list("")) {
          if (sparkFileOf(o.key(), b)) {
            byte[] bytes;
            try (InputStream in = root.get(o.key())) {
              bytes = in.readAllBytes();
            }
            root.putIfAbsent(ROOT + n + "/spark/" + o.key(), ObjectBody.of(bytes));
            copied.add(o.key());
            requests += 2;
          }
        }
        // Before the commit point: every held version is still whole and Spark's logs still
        // allow the restart. A batch the query ran meanwhile (one that looked stopped: a
        // trigger longer than --idle-minutes) may have collected a version a round listed
        // before its hold was written; then no record is written and list shows the savepoint
        // incomplete. (A round that listed before the holds and deletes after this check is
        // not caught: the margin, kept while the query looks alive, is what bounds that.)
        CheckpointScan after = ctx.scan();
        CommitLogAttempts committedAfter = ctx.commitLogAttempts(after);
        requests += 1 + after.strataStores().size();
        for (CheckpointScan.Store s : after.strataStores()) {
          if (!held.containsKey(s.relativeLocation())) {
            continue;
          }
          Optional<String> why = RewindCommand.check(s, ctx.inspector(s), committedAfter,
              version, RewindCommand.storesOfPartition(after, s));
          if (why.isPresent()) {
            throw new ToolException(StrataTool.EXIT_REFUSED, "Savepoint " + n + " of batch "
                + b + " of " + ctx.checkpoint + " is incomplete: the query ran while it was "
                + "made and " + why.get() + "; no record was written (strata savepoint drop "
                + ctx.checkpoint + " " + n + " releases its holds)", null);
          }
        }
        if (!after.restartableAfter(b)) {
          throw new ToolException(StrataTool.EXIT_REFUSED, "Savepoint " + n + " of batch " + b
              + " of " + ctx.checkpoint + " is incomplete: the query purged offsets/" + b
              + ", commits/" + b + " or offsets/" + (b - 1) + " while it was made; no record "
              + "was written (strata savepoint drop " + ctx.checkpoint + " " + n + " releases "
              + "its holds)", null);
        }
        Map<String, Object> record = new LinkedHashMap<>();
        record.put("format", 1);
        record.put("name", n);
        record.put("batch", b);
        record.put("version", version);
        record.put("createdAtMillis", System.currentTimeMillis());
        record.put("holds", held);
        record.put("sparkFiles", copied);
        root.putIfAbsent(ROOT + n + "/" + RECORD,
            ObjectBody.of(ToolContext.JSON.writeValueAsBytes(record)));
        requests++;
        if (options.json) {
          Map<String, Object> j = new LinkedHashMap<>();
          j.put("checkpoint", ctx.checkpoint);
          j.put("savepoint", n);
          j.put("batch", b);
          j.put("version", version);
          j.put("stores", held.size());
          j.put("sparkFiles", copied.size());
          j.put("requestsAfterListing", requests);
          ctx.printJson(j);
          return StrataTool.EXIT_OK;
        }
        ctx.out.println("Savepoint " + n + " of " + ctx.checkpoint + ": batch " + b + ", state "
            + "version " + version + " held in " + Table.count(held.size(), "store") + ", "
            + Table.count(copied.size(), "Spark file") + " copied; " + requests + " requests "
            + "after the listing (no state byte copied).");
        return StrataTool.EXIT_OK;
      }
    }
  }

  /**
   * True if {@code key} is one of Spark's files a savepoint of batch {@code b} copies: {@code
   * metadata}, {@code offsets/b}, {@code commits/b} and {@code offsets/b-1} (a restart reads it to
   * check the offset log), every file under {@code sources/} (the file
   * source's log: a restart from the savepoint plans its next batch from it, as after a rewind)
   * and the operators' metadata and schemas under {@code state/<op>/_metadata/} and {@code
   * state/<op>/_stateSchema/}, and Spark's state schema file of a store, {@code
   * state/<op>/<partition>/[<store name>/]_metadata/schema} (written under partition 0: its
   * schema check reads it at every start; a copy without it skipped the check, and Spark's state
   * data source failed on the copy). Strata's own keys never contain {@code _metadata}.
   */
  static boolean sparkFileOf(String key, long b) {
    return key.equals("metadata") || key.equals("offsets/" + b) || key.equals("commits/" + b)
        || key.equals("offsets/" + (b - 1))
        || key.startsWith("sources/") || key.matches("state/\\d+/(_metadata|_stateSchema)/.*")
        || key.matches("state/\\d+/\\d+/([^/]+/)?_metadata/.*");
  }

  /** {@code strata savepoint list <ckpt>}. */
  @Command(name = "list", mixinStandardHelpOptions = true,
      description = "The savepoints of a checkpoint, complete or not.")
  static final class ListCommand implements Callable<Integer> {
    @ParentCommand SavepointCommand parent;
    @Mixin CommonOptions options;

    @Parameters(index = "0", paramLabel = "CHECKPOINT", description = "The checkpoint location.")
    String checkpoint;

    @Override
    public Integer call() throws Exception {
      try (ToolContext ctx = new ToolContext(parent.tool, options, checkpoint)) {
        CheckpointScan scan = ctx.scan();
        Map<String, int[]> holds = holdsByName(scan);
        Map<String, Map<String, Object>> records = new TreeMap<>();
        for (ObjectInfo o : ctx.root().list(ROOT)) {
          String rest = o.key().substring(ROOT.length());
          int slash = rest.indexOf('/');
          if (slash > 0 && rest.substring(slash + 1).equals(RECORD)) {
            try (InputStream in = ctx.root().get(o.key())) {
              @SuppressWarnings("unchecked")
              Map<String, Object> r = ToolContext.JSON.readValue(in, Map.class);
              records.put(rest.substring(0, slash), r);
            }
          } else if (slash > 0) {
            records.putIfAbsent(rest.substring(0, slash), null);
          }
        }
        holds.keySet().forEach(k -> records.putIfAbsent(k, null));
        Table t = new Table("NAME", "BATCH", "VERSION", "HOLDS", "CREATED", "STATE");
        List<Map<String, Object>> json = new ArrayList<>();
        int stores = scan.strataStores().size();
        records.forEach((n, r) -> {
          int[] c = holds.getOrDefault(n, new int[2]);
          int h = c[0];
          String state = r == null ? "incomplete (drop it)" : h < stores ? "holds missing"
              : c[1] < h ? "held state gone (" + (h - c[1]) + " of "
              + h + " held version objects missing)" : "complete";
          t.row(n, r == null ? null : r.get("batch"), r == null ? null : r.get("version"),
              h + " of " + stores, r == null ? null
                  : Table.time(((Number) r.get("createdAtMillis")).longValue()), state);
          Map<String, Object> j = new LinkedHashMap<>();
          j.put("name", n);
          j.put("batch", r == null ? null : r.get("batch"));
          j.put("version", r == null ? null : r.get("version"));
          j.put("holds", h);
          j.put("stores", stores);
          j.put("createdAtMillis", r == null ? null : r.get("createdAtMillis"));
          j.put("complete", r != null && h == stores && c[1] == h);
          j.put("state", state);
          json.add(j);
        });
        if (options.json) {
          ctx.printJson(Map.of("checkpoint", ctx.checkpoint, "savepoints", json));
        } else if (t.isEmpty()) {
          ctx.out.println("No savepoint in " + ctx.checkpoint);
        } else {
          t.print(ctx.out);
        }
        return StrataTool.EXIT_OK;
      }
    }
  }

  /**
   * Per savepoint name, from the listing: {holds, holds whose version object is listed in the
   * same store}.
   */
  static Map<String, int[]> holdsByName(CheckpointScan scan) {
    Map<String, int[]> holds = new TreeMap<>();
    for (CheckpointScan.Store s : scan.stores) {
      java.util.Set<String> keys = new java.util.HashSet<>();
      s.objects().forEach(o -> keys.add(o.key()));
      for (ObjectInfo o : s.objects()) {
        String n = StoreLayout.holdSavepointOf(o.key());
        if (n != null) {
          int[] c = holds.computeIfAbsent(n, x -> new int[2]);
          c[0]++;
          if (keys.contains(StoreLayout.heldVersionObjectOf(o.key()))) {
            c[1]++;
          }
        }
      }
    }
    return holds;
  }

  /** {@code strata savepoint drop <ckpt> NAME}. */
  @Command(name = "drop", mixinStandardHelpOptions = true,
      description = "Release a savepoint: garbage collection may then collect what only it kept.")
  static final class Drop implements Callable<Integer> {
    @ParentCommand SavepointCommand parent;
    @Mixin CommonOptions options;

    @Parameters(index = "0", paramLabel = "CHECKPOINT", description = "The checkpoint location.")
    String checkpoint;

    @Parameters(index = "1", paramLabel = "NAME", description = "The savepoint.")
    String name;

    @Override
    public Integer call() throws Exception {
      try (ToolContext ctx = new ToolContext(parent.tool, options, checkpoint)) {
        if (!StoreLayout.isSavepointName(name)) {
          throw new ToolException(StrataTool.EXIT_USAGE, "Invalid savepoint name '" + name
              + "'", null);
        }
        CheckpointScan scan = ctx.scan();
        List<String> keys = new ArrayList<>();
        List<String> files = new ArrayList<>();
        for (ObjectInfo o : ctx.root().list(ROOT + name + "/")) {
          (o.key().endsWith("/" + RECORD) ? keys : files).add(o.key());
        }
        keys.addAll(files); // the record first: a drop cut short is listed as incomplete
        for (CheckpointScan.Store s : scan.stores) {
          for (ObjectInfo o : s.objects()) {
            if (name.equals(StoreLayout.holdSavepointOf(o.key()))) {
              keys.add(s.relativeLocation() + "/" + o.key());
            }
          }
        }
        if (keys.isEmpty()) {
          throw new ToolException(StrataTool.EXIT_USAGE, "No savepoint named '" + name + "' in "
              + ctx.checkpoint + " (strata savepoint list)", null);
        }
        for (String k : keys) {
          try {
            ctx.root().delete(List.of(k));
          } catch (IOException e) {
            throw new ToolException(StrataTool.EXIT_UNREADABLE, "Cannot delete " + k + " of "
                + "savepoint " + name + ": " + e.getMessage() + " (run the drop again)", e);
          }
        }
        if (options.json) {
          Map<String, Object> j = new LinkedHashMap<>();
          j.put("checkpoint", ctx.checkpoint);
          j.put("dropped", name);
          j.put("objectsDeleted", keys.size());
          ctx.printJson(j);
          return StrataTool.EXIT_OK;
        }
        ctx.out.println("Dropped savepoint " + name + " of " + ctx.checkpoint + ": "
            + Table.count(keys.size(), "object") + " deleted; garbage collection collects what "
            + "only it kept.");
        return StrataTool.EXIT_OK;
      }
    }
  }
}
