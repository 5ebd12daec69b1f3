// SPDX-License-Identifier: Apache-2.0
package io.strata.tools;

import io.strata.format.BaseSnapshot;
import io.strata.format.Manifest;
import io.strata.format.StoreLayout;
import io.strata.objectstore.ObjectInfo;
import io.strata.sync.StoreInspector;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.Future;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParentCommand;

/**
 * {@code strata history <checkpoint> [--operator o] [--partition p] [--store s] [--last n]
 * [--parts]}: every version object of the selected stores with its size, attempt, epoch, lineage
 * (parent, base, delta chain), and what a cold load of it would download. One tail GET per
 * version object (in parallel), one GET per published snapshot considered. With {@code
 * --parts}, each version object's bytes by part instead of its lineage ({@link ObjectParts}: the
 * SST delta's data blocks, filter, index, properties, metaindex and footer, the manifest,
 * Strata's footer), then each part's mean and median over the objects shown: one more GET per
 * version object, of the whole object. Exit 0, or 3 if the checkpoint cannot be read (an
 * unreadable version object is shown as such, with exit 3).
 */
@Command(name = "history", mixinStandardHelpOptions = true,
    description = "The versions of each store with their sizes, attempts, lineage and what "
        + "each one's restore would download.")
final class HistoryCommand implements Callable<Integer> {
  @ParentCommand StrataTool tool;
  @Mixin CommonOptions options;

  @Parameters(index = "0", paramLabel = "CHECKPOINT", description = "The checkpoint location.")
  String checkpoint;

  @Option(names = "--operator", paramLabel = "ID", description = "Only this operator.")
  Long operator;

  @Option(names = "--partition", paramLabel = "N", description = "Only this partition.")
  Integer partition;

  @Option(names = "--store", paramLabel = "NAME",
      description = "Only this store name (default, or a join's left-keyToNumValues, ...).")
  String store;

  @Option(names = "--last", paramLabel = "N",
      description = "Only the newest N versions of each store (default: all).")
  Integer last;

  @Option(names = "--parts",
      description = "Read each version object whole (one more GET each) and show its bytes by "
          + "part: the SST delta's data blocks, filter, index, properties, metaindex and footer, "
          + "the manifest and Strata's footer (BLOCKS: the number of data blocks; SST other: "
          + "bytes between the SST's blocks, 0 in Strata's own deltas); then each part's mean "
          + "and p50 over the version objects shown that hold an SST delta.")
  boolean parts;

  /** One version object; {@code parts} only with {@code --parts}. */
  private record Row(CheckpointScan.Store store, ObjectInfo object, boolean read,
      Manifest manifest, Restores restore, ObjectParts parts, String error) { }

  @Override
  public Integer call() throws Exception {
    if (last != null && last < 1) {
      throw new ToolException(StrataTool.EXIT_USAGE, "--last must be at least 1, was " + last,
          null);
    }
    try (ToolContext ctx = new ToolContext(tool, options, checkpoint)) {
      CheckpointScan scan = ctx.strataScan();
      CommitLogAttempts committed = ctx.commitLogAttempts(scan);
      List<Future<List<Row>>> futures = new ArrayList<>();
      for (CheckpointScan.Store s : scan.strataStores()) {
        if ((operator != null && s.operator() != operator)
            || (partition != null && s.partition() != partition)
            || (store != null && !s.name().equals(store))) {
          continue;
        }
        StoreInspector inspector = ctx.inspector(s);
        futures.add(ctx.pool.submit(() -> rows(ctx, s, inspector, committed)));
      }
      List<Row> rows = new ArrayList<>();
      for (Future<List<Row>> f : futures) {
        rows.addAll(f.get());
      }
      if (futures.isEmpty()) {
        throw new ToolException(StrataTool.EXIT_USAGE, "No Strata store of " + ctx.checkpoint
            + " matches" + (operator == null ? "" : " --operator " + operator)
            + (partition == null ? "" : " --partition " + partition)
            + (store == null ? "" : " --store " + store), null);
      }
      if (options.json) {
        List<Object> list = new ArrayList<>();
        rows.forEach(r -> list.add(json(r)));
        Map<String, Object> j = new LinkedHashMap<>();
        j.put("checkpoint", ctx.checkpoint);
        j.put("versions", list);
        if (parts) {
          j.put("partsSummary", partsSummaryJson(rows));
        }
        ctx.printJson(j);
      } else if (parts) {
        printParts(ctx, rows);
      } else {
        print(ctx, rows);
      }
      boolean unreadable = false;
      for (Row r : rows) {
        if (r.error() != null) {
          ctx.err.println("strata: " + r.error());
          unreadable = true;
        }
      }
      return unreadable ? StrataTool.EXIT_UNREADABLE : StrataTool.EXIT_OK;
    }
  }

  private List<Row> rows(ToolContext ctx, CheckpointScan.Store s, StoreInspector inspector,
      CommitLogAttempts committed) throws Exception {
    List<ObjectInfo> objects = s.versionObjects();
    boolean attemptKeys = StoreSummary.attemptKeys(s);
    // Which object a load of each version reads: format 1 the greatest generation (else the
    // layout-1 key), format 2 the attempt the commit log names, else the newest attempt;
    // decided by the same code as a load.
    Map<Long, String> readKey = new HashMap<>();
    long minVersion = last == null ? 0 : s.newestVersion() - last + 1;
    List<Future<Row>> futures = new ArrayList<>();
    for (ObjectInfo o : objects) {
      long v = StoreLayout.versionOf(o.key());
      if (v < minVersion) {
        continue;
      }
      futures.add(ctx.requests.submit(() -> {
        String locatedKey;
        synchronized (readKey) {
          locatedKey = readKey.get(v);
        }
        if (locatedKey == null) {
          locatedKey = StoreSummary.located(s, v, attemptKeys, inspector, committed);
          synchronized (readKey) {
            readKey.put(v, locatedKey);
          }
        }
        boolean read = locatedKey.equals(o.key());
        try {
          Manifest m = inspector.manifest(o.key());
          ObjectParts p = null;
          if (parts) {
            try (java.io.InputStream in = inspector.range(o.key(), 0, o.size())) {
              p = ObjectParts.of(in.readAllBytes());
            }
          }
          return new Row(s, o, read, m, Restores.of(m, s.objects(), inspector), p, null);
        } catch (Exception e) {
          return new Row(s, o, read, null, null, null, e.getMessage());
        }
      }));
    }
    List<Row> rows = new ArrayList<>();
    for (Future<Row> f : futures) {
      rows.add(f.get());
    }
    return rows;
  }

  private static String objectName(String key) {
    long g = StoreLayout.generationOf(key);
    if (g > 0) {
      return "g" + g;
    }
    String a = StoreLayout.attemptOf(key);
    return a != null ? a : "layout 1";
  }

  private static Map<String, Object> json(Row r) {
    Map<String, Object> j = new LinkedHashMap<>();
    j.put("operator", r.store().operator());
    j.put("partition", r.store().partition());
    j.put("store", r.store().name());
    j.put("version", StoreLayout.versionOf(r.object().key()));
    j.put("key", r.store().relativeLocation() + "/" + r.object().key());
    j.put("size", r.object().size());
    j.put("readByLoad", r.read());
    Manifest m = r.manifest();
    if (m != null) {
      j.put("attempt", m.attempt());
      j.put("epoch", m.epoch() == 0 ? null : m.epoch());
      j.put("parentVersion", m.parentVersion());
      j.put("parentAttempt", m.parentAttempt().orElse(null));
      j.put("baseSnapshotVersion", m.base().map(BaseSnapshot::version).orElse(null));
      j.put("deltaChainLength", m.deltaChainLength());
      j.put("keys", m.numKeys());
      j.put("stateBytes", m.totalBytes());
      j.put("committed", Table.time(m.createdAtMillis()));
      Map<String, Object> restore = new LinkedHashMap<>();
      restore.put("publishedSnapshotVersion", r.restore().from() < 0 ? null : r.restore().from());
      restore.put("baseSnapshotVersion",
          r.restore().baseVersion() < 0 ? null : r.restore().baseVersion());
      restore.put("objects", r.restore().objects());
      restore.put("bytes", r.restore().bytes());
      restore.put("deltas", r.restore().deltas());
      restore.put("missingObjects", r.restore().missing());
      j.put("restore", restore);
    }
    if (r.parts() != null) {
      j.put("parts", r.parts().json());
    }
    j.put("error", r.error());
    return j;
  }

  /** The readable rows' parts, in order. */
  private static List<ObjectParts> partsOf(List<Row> rows) {
    return rows.stream().map(Row::parts).filter(java.util.Objects::nonNull).toList();
  }

  /**
   * What the summary is over: the objects with an SST delta, whose parts it describes (an
   * object without one, a batch that wrote nothing, would count zeros into every SST part);
   * all of them if none has a delta.
   */
  private static List<ObjectParts> summarized(List<ObjectParts> all) {
    List<ObjectParts> withDelta = all.stream().filter(p -> p.dataBlocks() > 0).toList();
    return withDelta.isEmpty() ? all : withDelta;
  }

  private static Map<String, Object> partsSummaryJson(List<Row> rows) {
    List<ObjectParts> all = partsOf(rows);
    Map<String, Object> j = new LinkedHashMap<>();
    j.put("versionObjects", all.size());
    j.put("withDelta", all.stream().filter(p -> p.dataBlocks() > 0).count());
    if (!all.isEmpty()) {
      Map<String, Object> byPart = new LinkedHashMap<>();
      j.put("summarized", summarized(all).size());
      ObjectParts.summary(summarized(all)).forEach((part, stat) -> {
        Map<String, Object> s = new LinkedHashMap<>();
        s.put("mean", stat.mean());
        s.put("p50", stat.p50());
        byPart.put(part.json(), s);
      });
      j.put("bytes", byPart);
    }
    return j;
  }

  /**
   * One table per store, in the rows' order: a title line, then {@code columns}, a row per
   * version object (its first three cells, version, object and what a load reads, then {@code
   * cells}).
   */
  private static void perStore(ToolContext ctx, List<Row> rows, String title,
      List<String> columns, java.util.function.Function<Row, List<Object>> cells) {
    String current = null;
    Table t = null;
    for (Row r : rows) {
      if (!r.store().id().equals(current)) {
        if (t != null) {
          t.print(ctx.out);
          ctx.out.println();
        }
        current = r.store().id();
        ctx.out.println("Store " + current + " (" + r.store().relativeLocation() + ")" + title);
        List<String> header = new ArrayList<>(List.of("VERSION", "OBJECT", "LOAD READS"));
        header.addAll(columns);
        t = new Table(header.toArray(String[]::new));
      }
      List<Object> row = new ArrayList<>(List.of(StoreLayout.versionOf(r.object().key()),
          objectName(r.object().key()), r.read() ? "yes"
              : (StoreLayout.generationOf(r.object().key()) > 0 ? "superseded"
                  : "other attempt")));
      row.addAll(cells.apply(r));
      t.row(row.toArray());
    }
    if (t != null) {
      t.print(ctx.out);
    }
  }

  /** Per store, each version object's bytes by part; then the parts' mean and p50 over all. */
  private static void printParts(ToolContext ctx, List<Row> rows) {
    perStore(ctx, rows, ", bytes by part", List.of("SIZE", "SST DATA", "BLOCKS", "FILTER",
        "INDEX", "PROPERTIES", "METAINDEX", "SST FOOTER", "MANIFEST", "FOOTER"), r -> {
          ObjectParts p = r.parts();
          return java.util.Arrays.asList(r.object().size(),
              p == null ? "UNREADABLE" : p.sstData(), p == null ? null : p.dataBlocks(),
              p == null ? null : p.sstFilter(), p == null ? null : p.sstIndex(),
              p == null ? null : p.sstProperties(), p == null ? null : p.sstMetaindex(),
              p == null ? null : p.sstFooter(), p == null ? null : p.manifest(),
              p == null ? null : p.footer());
        });
    List<ObjectParts> all = partsOf(rows);
    if (all.isEmpty()) {
      return;
    }
    ctx.out.println();
    List<ObjectParts> over = summarized(all);
    boolean noDelta = all.stream().noneMatch(p -> p.dataBlocks() > 0);
    ctx.out.println("Bytes by part over " + Table.count(over.size(), "version object")
        + (noDelta ? " (none holds an SST delta: every batch shown wrote nothing)"
            : over.size() == all.size() ? "" : " with an SST delta (of " + all.size()
                + " shown; those without one left out)"));
    Map<ObjectParts.Part, ObjectParts.Stat> summary = ObjectParts.summary(over);
    double whole = summary.get(ObjectParts.PARTS.get(ObjectParts.PARTS.size() - 1)).mean();
    Table s = new Table("PART", "MEAN", "P50", "SHARE OF MEAN");
    summary.forEach((part, stat) -> s.row(part.label(),
        String.format(java.util.Locale.ROOT, "%.1f", stat.mean()),
        String.format(java.util.Locale.ROOT, "%.1f", stat.p50()),
        whole == 0 ? null : String.format(java.util.Locale.ROOT, "%.1f %%",
            100 * stat.mean() / whole)));
    s.print(ctx.out);
  }

  private static void print(ToolContext ctx, List<Row> rows) {
    perStore(ctx, rows, "", List.of("SIZE", "ATTEMPT", "EPOCH", "PARENT", "BASE", "CHAIN",
        "KEYS", "COMMITTED", "RESTORE DOWNLOADS"), r -> {
          Manifest m = r.manifest();
          return java.util.Arrays.asList(Table.bytes(r.object().size()),
              m == null ? "UNREADABLE" : m.attempt(),
              m == null || m.epoch() == 0 ? null : m.epoch(),
              m == null ? null : m.parentVersion(),
              m == null ? null : m.base().map(BaseSnapshot::version).orElse(null),
              m == null ? null : m.deltaChainLength(),
              m == null ? null : m.numKeys(),
              m == null ? null : Table.time(m.createdAtMillis()),
              r.restore() == null ? null : r.restore().describe());
        });
  }
}
