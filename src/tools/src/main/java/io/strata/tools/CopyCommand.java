// SPDX-License-Identifier: Apache-2.0
package io.strata.tools;

import com.fasterxml.jackson.databind.JsonNode;
import io.strata.format.Manifest;
import io.strata.format.Reachability;
import io.strata.format.StoreLayout;
import io.strata.objectstore.ObjectBody;
import io.strata.objectstore.ObjectInfo;
import io.strata.objectstore.ObjectStore;
import io.strata.objectstore.ObjectStores;
import io.strata.sync.StoreInspector;
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.Iterator;
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
 * {@code strata copy <src> <dest> [--batch N | --savepoint NAME]}: makes {@code dest} a
 * checkpoint from which the same query resumes after batch {@code N} (default: the newest
 * committed; with a savepoint, its batch), self-contained and independent of {@code src}. It
 * copies only what that batch needs: per Strata store the version object of {@code N + 1}, every
 * object its manifest names (base files and the version objects holding its deltas) and the
 * store's query-run claims ({@code runs/}: a run in {@code dest} then claims a later epoch than
 * every manifest it loads, as in the source); and Spark's files for batch {@code N} ({@code
 * metadata}, {@code offsets/N}, {@code commits/N}, the sources' logs, the operators' metadata and
 * schemas), from the savepoint's copies for {@code --savepoint}. Keys in manifests are relative
 * to the store, so objects keep their keys. Every write to {@code dest} is create-only; a
 * non-empty {@code dest} is refused (exit 4), and so is a {@code dest} that shares a prefix with
 * {@code src} (exit 2). {@code dest} is opened with its own bucket's settings. Before anything is
 * written, every object to copy must be listed in {@code src} (else exit 4, naming the store and
 * the object); a transfer that fails is exit 3, naming how many objects were written. Spark's
 * files are copied byte for byte but for two: {@code metadata} with {@code --new-query-id}, and
 * operator metadata of version 2, whose schema file paths name the checkpoint's own location
 * and are moved to {@code dest}'s ({@link OperatorMetadataPaths}).
 *
 * <p>Where source and destination are on one S3 client (the same endpoint, region and
 * credentials) objects are copied server-side ({@link ObjectStore#copyIfAbsentFrom}: a
 * CopyObject with {@code If-None-Match: *} each, no state byte through the tool); otherwise,
 * and for the files the copy rewrites, they pass through the tool (a GET and a create-only PUT
 * each). {@code --threads} at a time either way.
 */
@Command(name = "copy", mixinStandardHelpOptions = true,
    description = "Make DEST a checkpoint that resumes after batch N of SRC, copying only what "
        + "that batch needs.")
final class CopyCommand implements Callable<Integer> {
  @ParentCommand StrataTool tool;
  @Mixin CommonOptions options;

  @Parameters(index = "0", paramLabel = "SRC", description = "The checkpoint to copy.")
  String source;

  @Parameters(index = "1", paramLabel = "DEST", description = "An empty location.")
  String destination;

  @ArgGroup(exclusive = true)
  At at;

  @Option(names = "--new-query-id", description = "Give DEST's query a new id (Spark's "
      + "metadata file): a fork that runs beside SRC's query, even in the same Spark session, "
      + "is then another query to Spark, its listeners and its UI. Without it DEST keeps SRC's "
      + "id, as a move wants.")
  boolean newQueryId;

  static final class At {
    @Option(names = "--batch", paramLabel = "N", description = "A committed batch of SRC.")
    Long batch;

    @Option(names = "--savepoint", paramLabel = "NAME", description = "A savepoint of SRC.")
    String savepoint;
  }

  /** {@code location} ending with exactly one '/', for prefix comparisons. */
  private static String asDirectory(String location) {
    return location.endsWith("/") ? location : location + "/";
  }

  /** Spark's stream metadata file, {@code {"id":"<query id>"}} (Spark's StreamMetadata). */
  static final String METADATA = "metadata";

  /**
   * {@code metadata} (Spark's StreamMetadata JSON) with its {@code id} replaced by {@code id},
   * every other field kept.
   *
   * @throws ToolException (exit 3) naming {@code from} if it is not a JSON object with an id
   */
  static byte[] withQueryId(byte[] metadata, String id, String from) throws ToolException {
    try {
      JsonNode node = ToolContext.JSON.readTree(metadata);
      if (node == null || !node.isObject() || !node.has("id")) {
        throw new IOException("expected a JSON object with an \"id\"");
      }
      ((com.fasterxml.jackson.databind.node.ObjectNode) node).put("id", id);
      return ToolContext.JSON.writeValueAsBytes(node);
    } catch (IOException e) {
      throw new ToolException(StrataTool.EXIT_UNREADABLE, "Cannot give the copy a new query "
          + "id: " + from + " is not Spark's stream metadata (" + e.getMessage() + ")", e);
    }
  }

  /** One object to copy: from its key in the source to its key in the destination. */
  private record Item(String from, String to) { }

  @Override
  public Integer call() throws Exception {
    if (at != null && at.savepoint != null && !StoreLayout.isSavepointName(at.savepoint)) {
      throw new ToolException(StrataTool.EXIT_USAGE, "Invalid --savepoint '" + at.savepoint
          + "': expected a savepoint name, 1 to 64 of A-Z a-z 0-9 _ . - (not first; strata "
          + "savepoint list shows them)", null);
    }
    try (ToolContext ctx = new ToolContext(tool, options, source)) {
      CheckpointScan scan = ctx.strataScan();
      ObjectStore src = ctx.root();
      long batch;
      List<Item> items = new ArrayList<>();
      Map<String, String> versionObjects = new LinkedHashMap<>(); // store location -> key
      if (at != null && at.savepoint != null) {
        String dir = SavepointCommand.ROOT + at.savepoint + "/";
        JsonNode record;
        try (InputStream in = src.get(dir + SavepointCommand.RECORD)) {
          record = ToolContext.JSON.readTree(in);
        } catch (IOException e) {
          throw new ToolException(StrataTool.EXIT_USAGE, "No complete savepoint named '"
              + at.savepoint + "' in " + ctx.checkpoint + " (strata savepoint list): "
              + e.getMessage(), e);
        }
        batch = record.get("batch").asLong();
        record.get("holds").fields().forEachRemaining(e -> versionObjects.put(e.getKey(),
            e.getValue().asText()));
        record.get("sparkFiles").forEach(f -> items.add(new Item(dir + "spark/" + f.asText(),
            f.asText())));
        java.util.Set<String> stores = new java.util.HashSet<>();
        scan.strataStores().forEach(s -> stores.add(s.relativeLocation()));
        for (String location : versionObjects.keySet()) {
          if (!stores.contains(location)) {
            throw new ToolException(StrataTool.EXIT_REFUSED, "Refusing to copy savepoint "
                + at.savepoint + " (batch " + batch + ") of " + ctx.checkpoint + ": it holds "
                + location + "/" + versionObjects.get(location) + ", but " + location
                + " is no longer a Strata store of the checkpoint (its state was deleted); a "
                + "copy without it would not resume as the source would", null);
          }
        }
      } else {
        if (scan.spark.latestCommit().isEmpty()) {
          throw new ToolException(StrataTool.EXIT_REFUSED, "Refusing to copy "
              + ctx.checkpoint + ": Spark's commit log (commits/) has no committed batch", null);
        }
        batch = at != null && at.batch != null ? at.batch : scan.spark.latestCommit().getAsLong();
        if (!scan.restartableAfter(batch)) {
          throw new ToolException(StrataTool.EXIT_REFUSED, "Refusing to copy batch " + batch
              + " of " + ctx.checkpoint + ": a restart from it needs offsets/" + batch
              + ", commits/" + batch + (batch >= 1 ? " and offsets/" + (batch - 1) : "")
              + ", which Spark's logs no longer all hold", null);
        }
        CommitLogAttempts committed = ctx.commitLogAttempts(scan);
        int partitions = ctx.partitionsOfBatch(batch);
        for (CheckpointScan.Store s : scan.strataStores()) {
          if (s.beyond(partitions)) {
            continue; // batch N had fewer partitions (a later repartition): not loaded
          }
          StoreInspector in = ctx.inspector(s);
          Optional<String> why = RewindCommand.check(s, in, committed, batch + 1,
              RewindCommand.storesOfPartition(scan, s));
          if (why.isPresent()) {
            throw new ToolException(StrataTool.EXIT_REFUSED, "Refusing to copy batch " + batch
                + " of " + ctx.checkpoint + ": " + why.get(), null);
          }
          versionObjects.put(s.relativeLocation(), StoreSummary.located(s, batch + 1,
              StoreSummary.attemptKeys(s), in, committed));
        }
        for (ObjectInfo o : src.list("")) {
          if (SavepointCommand.sparkFileOf(o.key(), batch)) {
            items.add(new Item(o.key(), o.key()));
          }
        }
      }
      // Per store: the version object, what its manifest names, and the run claims.
      int batchPartitions = ctx.partitionsOfBatch(batch);
      for (CheckpointScan.Store s : scan.strataStores()) {
        if (s.beyond(batchPartitions)) {
          continue; // not a store of batch N (a later repartition added it)
        }
        String key = versionObjects.get(s.relativeLocation());
        if (key == null) {
          throw new ToolException(StrataTool.EXIT_UNREADABLE, "Cannot copy " + ctx.checkpoint
              + ": store " + s.id() + " has no version for batch " + batch, null);
        }
        String what = "batch " + batch + " of " + ctx.checkpoint + (at != null
            && at.savepoint != null ? " (savepoint " + at.savepoint + ")" : "");
        java.util.Set<String> listed = new java.util.HashSet<>();
        s.objects().forEach(o -> listed.add(o.key()));
        if (!listed.contains(key)) {
          throw new ToolException(StrataTool.EXIT_REFUSED, "Refusing to copy " + what
              + ": store " + s.id() + " no longer holds " + s.relativeLocation() + "/" + key
              + ", the version object of version " + (batch + 1) + " (collected or deleted)",
              null);
        }
        Manifest m;
        try {
          m = ctx.inspector(s).manifest(key);
        } catch (IOException | RuntimeException e) {
          throw new ToolException(StrataTool.EXIT_UNREADABLE, "Cannot copy " + what
              + ": store " + s.id() + ": " + s.relativeLocation() + "/" + key + " cannot be "
              + "read: " + e.getMessage(), e);
        }
        java.util.Set<String> keys = new java.util.TreeSet<>(Reachability.namedKeys(m));
        keys.add(key);
        // Everything the copy's load reads must be there before anything is written: a copy
        // cut short leaves a destination that is neither loadable nor empty.
        for (String k : keys) {
          if (!listed.contains(k)) {
            throw new ToolException(StrataTool.EXIT_REFUSED, "Refusing to copy " + what
                + ": store " + s.id() + ": " + s.relativeLocation() + "/" + key + " names "
                + s.relativeLocation() + "/" + k + ", which is gone (collected or deleted; a "
                + "load of version " + (batch + 1) + " would fail)", null);
          }
        }
        s.objects().stream().map(ObjectInfo::key).filter(k -> k.startsWith(StoreLayout.RUNS))
            .forEach(keys::add);
        keys.forEach(k -> items.add(new Item(s.relativeLocation() + "/" + k,
            s.relativeLocation() + "/" + k)));
      }
      ObjectStore dest;
      try {
        // The destination's own settings: per-bucket ones (fs.s3a.bucket.<bucket>.*) name its
        // endpoint, region and credentials, which may not be the source's.
        dest = ObjectStores.open(destination, ctx.settings.strata(destination)::s3, null);
      } catch (IllegalArgumentException e) {
        throw new ToolException(StrataTool.EXIT_USAGE, e.getMessage(), e);
      }
      try {
        String from = asDirectory(src.describe(""));
        String to = asDirectory(dest.describe(""));
        if (from.startsWith(to) || to.startsWith(from)) {
          throw new ToolException(StrataTool.EXIT_USAGE, "Refusing to copy " + ctx.checkpoint
              + " into " + destination + ": the destination is " + (from.equals(to)
              ? "the source" : to.startsWith(from) ? "inside the source" : "a parent of the "
              + "source") + " (" + to + "); a copy must share no prefix with its source, so "
              + "that neither ever writes or deletes the other", null);
        }
        boolean empty;
        try {
          empty = dest.list("").isEmpty();
        } catch (IOException | RuntimeException e) {
          throw new ToolException(StrataTool.EXIT_UNREADABLE, "Cannot copy " + ctx.checkpoint
              + " to " + destination + ": the destination cannot be listed: " + e.getMessage(),
              e);
        }
        if (!empty) {
          throw new ToolException(StrataTool.EXIT_REFUSED, "Refusing to copy into "
              + destination + ": it is not empty (a copy makes a new checkpoint)", null);
        }
        String newId = newQueryId ? java.util.UUID.randomUUID().toString() : null;
        Progress progress = new Progress(ctx.err, System.console() != null && !options.json,
            items.size(), 0);
        List<Future<Long>> copies = new ArrayList<>();
        java.util.concurrent.atomic.AtomicInteger serverSide =
            new java.util.concurrent.atomic.AtomicInteger();
        for (Item it : items) {
          copies.add(ctx.pool.submit(() -> {
            boolean rewritten = (newId != null && it.to().equals(METADATA))
                || OperatorMetadataPaths.namesLocations(it.to());
            if (!rewritten && dest.copyIfAbsentFrom(src, it.from(), it.to())) {
              serverSide.incrementAndGet();
              progress.done(0);
              return 0L; // no byte through the tool
            }
            byte[] bytes;
            try (InputStream in = src.get(it.from())) {
              bytes = in.readAllBytes();
            }
            if (newId != null && it.to().equals(METADATA)) {
              bytes = withQueryId(bytes, newId, it.from());
            }
            if (OperatorMetadataPaths.namesLocations(it.to())) {
              bytes = OperatorMetadataPaths.relocate(bytes, ctx.checkpoint, destination,
                  it.to());
            }
            dest.putIfAbsent(it.to(), ObjectBody.of(bytes));
            progress.done(bytes.length);
            return (long) bytes.length;
          }));
        }
        long bytes = 0;
        int copied = 0;
        Throwable failed = null;
        for (Iterator<Future<Long>> i = copies.iterator(); i.hasNext(); ) {
          try {
            bytes += i.next().get();
            copied++;
          } catch (java.util.concurrent.ExecutionException e) {
            failed = failed == null ? e.getCause() : failed;
          }
        }
        if (failed != null) {
          progress.finish();
          throw new ToolException(StrataTool.EXIT_UNREADABLE, "Cannot copy batch " + batch
              + " of " + ctx.checkpoint + " to " + destination + ": " + failed.getMessage()
              + " (" + copied + " of " + items.size() + " objects copied; the destination is "
              + "not a usable checkpoint: delete it, then copy again)", failed);
        }
        progress.finish();
        if (options.json) {
          Map<String, Object> j = new LinkedHashMap<>();
          j.put("source", ctx.checkpoint);
          j.put("destination", destination);
          j.put("batch", batch);
          j.put("nextBatch", batch + 1);
          j.put("objects", items.size());
          j.put("serverSideCopies", serverSide.get());
          j.put("bytesThroughTheTool", bytes);
          j.put("requestsAfterListing", 2 * items.size() - serverSide.get());
          j.put("newQueryId", newId);
          ctx.printJson(j);
          return StrataTool.EXIT_OK;
        }
        int viaServer = serverSide.get();
        ctx.out.println("Copied batch " + batch + " of " + ctx.checkpoint + " to " + destination
            + ": " + Table.count(items.size(), "object") + " in "
            + (2 * items.size() - viaServer) + " requests after the listing ("
            + (viaServer > 0 ? viaServer + " server-side (a CopyObject each, no byte through "
                + "the tool), " : "") + Table.count(items.size() - viaServer, "object")
            + " through the tool (a GET and a create-only PUT each, " + Table.bytes(bytes)
            + ")); the query started on " + destination + " runs batch " + (batch + 1)
            + " next" + (newId != null ? ", as query " + newId + " (a new id)" : "") + ".");
        return StrataTool.EXIT_OK;
      } finally {
        dest.close();
      }
    }
  }
}
