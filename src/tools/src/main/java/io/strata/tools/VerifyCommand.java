// SPDX-License-Identifier: Apache-2.0
package io.strata.tools;

import io.strata.format.BaseSnapshot;
import io.strata.format.Checksums;
import io.strata.format.Delta;
import io.strata.format.FileRef;
import io.strata.format.Manifest;
import io.strata.format.PublishedSnapshot;
import io.strata.format.StoreLayout;
import io.strata.objectstore.ObjectInfo;
import io.strata.sync.StoreInspector;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.Future;
import org.rocksdb.Options;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.SstFileReader;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParentCommand;

/**
 * {@code strata verify <checkpoint> [--version N]}: downloads and checks everything a load of
 * the retained versions (or of version N) reads. The retained versions are the {@code
 * minBatchesToRetain} before the version a restart loads (from Spark's logs), but none older
 * than the oldest batch those logs still list. Per store: every published snapshot (readable),
 * the version objects a load reads
 * (format 1: the greatest generation of each version; format 2: every attempt, since the driver
 * names one), their footers and manifests (magic, XXHash64, format version, store, version and
 * attempt), their lineage (parent version, delta order, base before the version, the parent's
 * attempt within one query run), the published snapshot a load would restore from, then every
 * file those name, once each: present, within its object, its length and XXHash64, and for
 * SSTs RocksDB's own block checksums ({@code SstFileReader.verifyChecksum}). Also: no store
 * behind Spark's commit log. Every problem is reported with its object key. Exit 0 when all is
 * well, 1 when a problem was found, 3 when the checkpoint cannot be listed.
 */
@Command(name = "verify",
    description = "Download and check every object the retained (or the given) versions name: "
        + "footers, sizes, checksums, lineage and RocksDB's block checksums. Exit 0 when all is "
        + "well, 1 when not.")
final class VerifyCommand implements Callable<Integer> {
  @ParentCommand StrataTool tool;
  @Mixin CommonOptions options;

  @Parameters(index = "0", paramLabel = "CHECKPOINT", description = "The checkpoint location.")
  String checkpoint;

  // Not mixinStandardHelpOptions: its -V/--version would take this command's --version N.
  @Option(names = {"-h", "--help"}, usageHelp = true, description = "Show this help message "
      + "and exit.")
  boolean help;

  @Option(names = "--version", paramLabel = "N",
      description = "Only version N of each store (default: every retained version, the newest "
          + "minBatchesToRetain + 1).")
  Long version;

  /** One problem: the store, the version (or -1), the object (relative to the checkpoint). */
  record Problem(String store, long version, String key, String problem) { }

  /**
   * One byte range to check, with who names it (for messages): the first version whose load
   * reads it, and in words.
   */
  private record Check(CheckpointScan.Store store, long version, String name, FileRef file,
      boolean sst, String namedBy) { }

  @Override
  public Integer call() throws Exception {
    try (ToolContext ctx = new ToolContext(tool, options, checkpoint)) {
      CheckpointScan scan = ctx.strataScan();
      if (version != null && version < 1) {
        throw new ToolException(StrataTool.EXIT_USAGE, "Invalid --version " + version
            + ": expected a state version >= 1", null);
      }
      int retain = scan.spark.checkedRetention(ctx.settings.gc(ctx.conf).versionsToRetain());
      long restart = scan.spark.restartVersion();
      List<Problem> problems = Collections.synchronizedList(new ArrayList<>());
      long expected = scan.spark.latestCommit().isPresent()
          ? scan.spark.latestCommit().getAsLong() + 1 : 0;

      // 1. Manifests (and published snapshots) of the versions a load reads.
      List<Future<List<Check>>> plans = new ArrayList<>();
      int[] versions = {0};
      int partitions = ctx.partitionsOfBatch(expected - 1);
      for (CheckpointScan.Store s : scan.strataStores()) {
        long newest = s.newestVersion();
        if (newest < expected && !s.beyond(partitions)) {
          problems.add(new Problem(s.id(), newest, "commits/" + (expected - 1), "the store's "
              + "newest version is " + newest + ", but Spark's commit log has batch "
              + (expected - 1) + " committed, which needs version " + expected));
        }
        List<ObjectInfo> targets = targets(s, restart, retain);
        if (version == null) {
          holes(s, targets, problems);
        }
        versions[0] += targets.size();
        StoreInspector inspector = ctx.inspector(s);
        plans.add(ctx.pool.submit(() -> manifests(s, inspector, targets, problems)));
      }
      if (version != null && versions[0] == 0) {
        long greatest = scan.strataStores().stream()
            .mapToLong(CheckpointScan.Store::newestVersion).max().orElse(0);
        throw new ToolException(StrataTool.EXIT_USAGE, "Invalid --version " + version + ": no "
            + "store of " + ctx.checkpoint + " has a version object of it (the greatest "
            + "version listed is " + greatest + ")", null);
      }
      List<Check> checks = new ArrayList<>();
      for (Future<List<Check>> f : plans) {
        checks.addAll(f.get());
      }
      // 2. Every file range once.
      Map<String, Check> distinct = new LinkedHashMap<>();
      for (Check c : checks) {
        distinct.putIfAbsent(c.store().id() + "|" + c.file().key() + "|" + c.file().offset()
            + "|" + c.file().length() + "|" + c.file().checksum(), c);
      }
      long total = distinct.values().stream().mapToLong(c -> c.file().length()).sum();
      Progress progress = new Progress(ctx.err, System.console() != null && !options.json,
          distinct.size(), total);
      RocksDB.loadLibrary();
      Path tmp = Files.createTempDirectory("strata-verify-");
      try {
        List<Future<?>> files = new ArrayList<>();
        Map<String, Map<String, ObjectInfo>> listed = new HashMap<>();
        for (CheckpointScan.Store s : scan.strataStores()) {
          Map<String, ObjectInfo> m = new HashMap<>();
          s.objects().forEach(o -> m.put(o.key(), o));
          listed.put(s.id(), m);
        }
        Map<String, StoreInspector> inspectors = new HashMap<>();
        for (Check c : distinct.values()) {
          StoreInspector in = inspectors.computeIfAbsent(c.store().id(),
              x -> ctx.inspector(c.store()));
          files.add(ctx.pool.submit(() -> {
            check(c, listed.get(c.store().id()), in, tmp, problems);
            progress.done(c.file().length());
            return null;
          }));
        }
        for (Future<?> f : files) {
          f.get();
        }
      } finally {
        progress.finish();
        try (var w = Files.walk(tmp)) {
          w.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
      }
      List<Problem> sorted = new ArrayList<>(problems);
      sorted.sort(java.util.Comparator.comparing(Problem::store).thenComparing(Problem::key));
      long retainedFrom = retainedFrom(scan, restart, retain);
      if (version != null && version < retainedFrom && !sorted.isEmpty() && !options.json) {
        ctx.out.println("Version " + version + " is below the versions the checkpoint retains "
            + "(" + retainedFrom + " and later: minBatchesToRetain " + retain + " before the "
            + "version a restart loads): garbage collection deletes what only older versions "
            + "need, so objects it names may be missing, as below; a load of it fails, which "
            + "is expected, and the retained versions are not affected.");
      }
      report(ctx, scan, versions[0], distinct.size(), total, sorted, retainedFrom);
      return sorted.isEmpty() ? StrataTool.EXIT_OK : StrataTool.EXIT_PROBLEMS;
    }
  }

  /**
   * The version objects of {@code s} a load of the selected versions reads: version N, or the
   * retained ones, {@code [restart - retain, restart]}, where {@code restart} is the version a
   * restart loads (Spark's logs; versions above it, left by a run before a rewind, are never
   * loaded) or, without logs, the greatest listed.
   */
  private List<ObjectInfo> targets(CheckpointScan.Store s, long restart, int retain) {
    boolean attemptKeys = StoreSummary.attemptKeys(s);
    long newest = restart >= 0 ? Math.min(restart, s.newestVersion()) : s.newestVersion();
    long from = version != null ? version : Math.max(1, newest - retain);
    long to = version != null ? version : newest;
    Map<Long, ObjectInfo> best = new HashMap<>();
    List<ObjectInfo> out = new ArrayList<>();
    for (ObjectInfo o : s.versionObjects()) {
      long v = StoreLayout.versionOf(o.key());
      if (v < from || v > to) {
        continue;
      }
      if (attemptKeys) {
        out.add(o);
        continue;
      }
      ObjectInfo b = best.get(v);
      if (b == null || StoreLayout.generationOf(o.key()) > StoreLayout.generationOf(b.key())) {
        best.put(v, o);
      }
    }
    out.addAll(best.values());
    out.sort(java.util.Comparator.comparing(ObjectInfo::key));
    return out;
  }

  /**
   * A version missing between the lowest and the greatest retained version listed: its version
   * object was deleted (a load of it fails). Versions missing below the lowest are not
   * reported, since a job with a shorter retention than the tool's settings deletes them.
   */
  private static void holes(CheckpointScan.Store s, List<ObjectInfo> targets,
      List<Problem> problems) {
    java.util.TreeSet<Long> listed = new java.util.TreeSet<>();
    targets.forEach(o -> listed.add(StoreLayout.versionOf(o.key())));
    if (listed.isEmpty()) {
      return;
    }
    for (long v = listed.first() + 1; v < listed.last(); v++) {
      if (!listed.contains(v)) {
        problems.add(new Problem(s.id(), v, s.relativeLocation() + "/"
            + StoreLayout.versionPrefix(v), "missing: no version object of version " + v
            + ", which lies between retained versions " + listed.first() + " and "
            + listed.last() + " (deleted? a load of version " + v + " fails)"));
      }
    }
  }

  private List<Check> manifests(CheckpointScan.Store s, StoreInspector inspector,
      List<ObjectInfo> targets, List<Problem> problems) {
    List<Check> checks = new ArrayList<>();
    Map<Long, Manifest> read = new HashMap<>();
    // Every published snapshot: a load skips an unreadable one (it restores from an older one
    // or the chain), and garbage collection deletes it once older than the grace period unless
    // a retained manifest names files inside it (format 2).
    for (ObjectInfo o : s.objects()) {
      long p = StoreLayout.publishedSnapshotVersionOf(o.key());
      if (p < 0) {
        continue;
      }
      try {
        inspector.publishedSnapshot(o.key());
      } catch (Exception e) {
        problems.add(new Problem(s.id(), p, s.relativeLocation() + "/" + o.key(),
            "unreadable published snapshot: " + e.getMessage() + " (loads do not restore from "
            + "it; garbage collection deletes it once older than the grace period unless a "
            + "retained version's manifest names files inside it, which loads still read: do "
            + "not delete it by hand)"));
      }
    }
    if (targets.isEmpty() && version != null) {
      problems.add(new Problem(s.id(), version, s.relativeLocation() + "/"
          + StoreLayout.versionPrefix(version), "no version object of version " + version));
    }
    for (ObjectInfo o : targets) {
      long v = StoreLayout.versionOf(o.key());
      String key = s.relativeLocation() + "/" + o.key();
      Manifest m;
      try {
        m = inspector.manifest(o.key());
      } catch (Exception e) {
        problems.add(new Problem(s.id(), v, key, e.getMessage()));
        continue;
      }
      read.put(v, m);
      lineage(s, key, m, problems);
      String by = "version " + v + " (" + o.key() + ")";
      m.base().ifPresent(b -> b.files().forEach(f -> checks.add(new Check(s, v, f.name(),
          f.file(), f.name().endsWith(".sst"), by + " base " + b.version()))));
      for (Delta d : m.deltas()) {
        checks.add(new Check(s, v, "delta of version " + d.version(), d.file(), true, by));
      }
      try {
        var published = inspector.usablePublishedSnapshot(m);
        if (published.isPresent()) {
          PublishedSnapshot p = published.get();
          for (BaseSnapshot.BaseFile f : p.files()) {
            checks.add(new Check(s, v, f.name(), f.file(), f.name().endsWith(".sst"),
                "published snapshot of version " + p.version() + " (used by " + by + ")"));
          }
        }
      } catch (RuntimeException e) {
        problems.add(new Problem(s.id(), v, s.relativeLocation() + "/b/", e.getMessage()));
      }
    }
    // Within one query run, a version is built on the version a load of its parent reads.
    if (!StoreSummary.attemptKeys(s)) {
      read.forEach((v, m) -> {
        Manifest parent = read.get(v - 1);
        if (parent != null && parent.epoch() == m.epoch() && m.parentAttempt().isPresent()
            && !m.parentAttempt().get().equals(parent.attempt())) {
          problems.add(new Problem(s.id(), v, s.relativeLocation() + "/"
              + StoreLayout.versionPrefix(v), "lineage: version " + v + " was built on attempt "
              + m.parentAttempt().get() + " of version " + (v - 1) + ", but a load of version "
              + (v - 1) + " reads attempt " + parent.attempt() + " of the same query run"));
        }
      });
    }
    return checks;
  }

  private static void lineage(CheckpointScan.Store s, String key, Manifest m,
      List<Problem> problems) {
    long v = m.version();
    if (m.parentVersion() != v - 1) {
      problems.add(new Problem(s.id(), v, key, "lineage: the parent is version "
          + m.parentVersion() + ", expected " + (v - 1)));
    }
    long base = m.base().map(BaseSnapshot::version).orElse(0L);
    if (base > v) {
      problems.add(new Problem(s.id(), v, key, "lineage: the base snapshot is of version "
          + base + ", after the version itself"));
    }
    long prev = base;
    for (Delta d : m.deltas()) {
      if (d.version() <= base || d.version() > v || d.version() < prev) {
        problems.add(new Problem(s.id(), v, key, "lineage: a delta of version " + d.version()
            + " is out of order (base " + base + ", previous delta " + prev + ", version "
            + v + ")"));
        break;
      }
      prev = d.version();
    }
  }

  private static void check(Check c, Map<String, ObjectInfo> listed, StoreInspector inspector,
      Path tmp, List<Problem> problems) {
    FileRef f = c.file();
    String key = c.store().relativeLocation() + "/" + f.key();
    String what = c.name() + ", named by " + c.namedBy();
    java.util.function.Consumer<String> problem =
        text -> problems.add(new Problem(c.store().id(), c.version(), key, text));
    ObjectInfo o = listed.get(f.key());
    if (o == null) {
      problem.accept("missing: the object does not exist (" + what + ")");
      return;
    }
    long end = f.offset() + f.length();
    if (end > o.size()) {
      problem.accept("truncated: the object has " + o.size() + " bytes, but " + what
          + " is bytes [" + f.offset() + ", " + end + ")");
      return;
    }
    if (f.length() == 0) {
      return;
    }
    Path file = tmp.resolve(java.util.UUID.randomUUID().toString() + ".sst");
    try {
      try (InputStream in = inspector.range(f.key(), f.offset(), f.length())) {
        Files.copy(in, file, StandardCopyOption.REPLACE_EXISTING);
      }
      long length = Files.size(file);
      if (length != f.length()) {
        problem.accept("short read: " + length + " of " + f.length() + " bytes (" + what + ")");
        return;
      }
      long sum = Checksums.xxhash64(file);
      if (sum != f.checksum()) {
        problem.accept("checksum mismatch: XXHash64 of bytes [" + f.offset() + ", " + end
            + ") is " + Checksums.hex(sum) + ", expected " + Checksums.hex(f.checksum()) + " ("
            + what + ")");
        return;
      }
      if (c.sst()) {
        try (Options opts = new Options(); SstFileReader r = new SstFileReader(opts)) {
          r.open(file.toString());
          r.verifyChecksum();
        } catch (RocksDBException e) {
          problem.accept("RocksDB rejects the SST: " + e.getMessage() + " (" + what + ")");
        }
      }
    } catch (Exception e) {
      problem.accept("cannot read: " + e.getMessage() + " (" + what + ")");
    } finally {
      file.toFile().delete();
    }
  }

  /**
   * The oldest version every store retains: {@code restart - retain} (at least 1) with {@code
   * restart} as {@link #targets} takes it, the greatest over the stores.
   */
  private static long retainedFrom(CheckpointScan scan, long restart, int retain) {
    long from = 1;
    for (CheckpointScan.Store s : scan.strataStores()) {
      long newest = restart >= 0 ? Math.min(restart, s.newestVersion()) : s.newestVersion();
      from = Math.max(from, newest - retain);
    }
    return from;
  }

  private void report(ToolContext ctx, CheckpointScan scan, int versions, int files, long bytes,
      List<Problem> problems, long retainedFrom) {
    int stores = scan.strataStores().size();
    if (options.json) {
      Map<String, Object> j = new LinkedHashMap<>();
      j.put("checkpoint", ctx.checkpoint);
      j.put("ok", problems.isEmpty());
      j.put("oldestRetainedVersion", retainedFrom);
      j.put("belowRetention", version != null && version < retainedFrom);
      j.put("stores", stores);
      j.put("versionObjects", versions);
      j.put("files", files);
      j.put("bytes", bytes);
      List<Object> list = new ArrayList<>();
      for (Problem p : problems) {
        Map<String, Object> e = new LinkedHashMap<>();
        e.put("store", p.store());
        e.put("version", p.version() < 0 ? null : p.version());
        e.put("key", p.key());
        e.put("problem", p.problem());
        list.add(e);
      }
      j.put("problems", list);
      ctx.printJson(j);
      return;
    }
    ctx.out.println("Verified " + Table.count(versions, "version object") + " of "
        + Table.count(stores, "store") + ": " + Table.count(files, "file") + ", "
        + Table.bytes(bytes) + ".");
    if (problems.isEmpty()) {
      ctx.out.println("OK: no problems.");
      return;
    }
    ctx.out.println(Table.count(problems.size(), "problem") + ":");
    Table t = new Table("STORE", "VERSION", "OBJECT", "PROBLEM");
    for (Problem p : problems) {
      t.row(p.store(), p.version() < 0 ? null : p.version(), p.key(), p.problem());
    }
    t.print(ctx.out);
  }
}
