// SPDX-License-Identifier: Apache-2.0
package io.strata.tools;

import com.fasterxml.jackson.databind.JsonNode;
import io.strata.engine.SharedMemory;
import io.strata.format.StoreLayout;
import io.strata.objectstore.ObjectStores;
import io.strata.objectstore.RequestListener;
import io.strata.sync.GcSettings;
import io.strata.sync.StoreIdentity;
import io.strata.sync.StoreSettings;
import io.strata.sync.SyncedStore;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.Optional;
import java.util.stream.Stream;

/** Checkpoints on the local file system for the tool's tests, and the tool run in-process. */
final class ToolFixtures {
  private static final long TWO_DAYS = 2 * 24 * 3600_000L;

  private ToolFixtures() { }

  /** One run of the tool: exit code, standard output and error. */
  record Run(int code, String out, String err) {
    JsonNode json() throws Exception {
      return ToolContext.JSON.readTree(out);
    }
  }

  /** {@code strata args...} in this JVM. */
  static Run tool(String... args) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    int code = StrataTool.run(args, new PrintStream(out, true, StandardCharsets.UTF_8),
        new PrintStream(err, true, StandardCharsets.UTF_8));
    return new Run(code, out.toString(StandardCharsets.UTF_8),
        err.toString(StandardCharsets.UTF_8));
  }

  /**
   * {@code <tmp>/ckpt}: store {@code state/0/0} with versions 1 to 6 (written by strata-core's
   * store, as a query's would be; no base snapshot, so each version's load reads the deltas of
   * every version up to it), {@code offsets/0} to {@code 6} and {@code commits/0} to {@code 5}
   * (batch 6 planned, not committed).
   */
  static Path checkpoint(Path tmp) throws IOException {
    return checkpoint(tmp, 1);
  }

  /** As {@link #checkpoint(Path)}, with stores {@code state/0/0} to {@code state/0/<p - 1>}. */
  static Path checkpoint(Path tmp, int partitions) throws IOException {
    Path checkpoint = tmp.resolve("ckpt");
    for (int p = 0; p < partitions; p++) {
      sixVersions(checkpoint.resolve("state/0/" + p), p, tmp.resolve("local-" + p), false);
    }
    Files.createDirectories(checkpoint.resolve("offsets"));
    Files.createDirectories(checkpoint.resolve("commits"));
    for (int b = 0; b <= 6; b++) {
      Files.writeString(checkpoint.resolve("offsets/" + b), "v1\n{\"batchWatermarkMs\":0,"
          + "\"batchTimestampMs\":" + b + ",\"conf\":{}}\n{\"logOffset\":" + b + "}");
      if (b < 6) {
        Files.writeString(checkpoint.resolve("commits/" + b),
            "v1\n{\"nextBatchWatermarkMs\":0}");
      }
    }
    return checkpoint;
  }

  /**
   * Versions 1 to 6 of store {@code 0/<partition>/default} at {@code store} (version {@code v}
   * puts key {@code k<v>}), by strata-core's store with local state in {@code local}; per
   * attempt keys (Spark's checkpoint format 2) if {@code attemptKeys}.
   */
  private static void sixVersions(Path store, int partition, Path local, boolean attemptKeys)
      throws IOException {
    try (SyncedStore s = new SyncedStore(new StoreIdentity(0, partition, "default",
        store.toString()), ObjectStores.open(store.toUri().toString(), () -> null,
        RequestListener.NONE), local, new StoreSettings(3, 2, 1 << 20, attemptKeys,
        SharedMemory.Limits.DEFAULT, GcSettings.DEFAULT), "{}", "{}")) {
      s.load(0, Optional.empty());
      for (int v = 1; v <= 6; v++) {
        s.put(("k" + v).getBytes(StandardCharsets.UTF_8),
            ("v" + v).getBytes(StandardCharsets.UTF_8));
        s.commit();
      }
    }
  }

  /**
   * {@code <tmp>/ckpt2}: as {@link #checkpoint}, written under Spark's checkpoint format 2: the
   * store's version objects are per attempt ({@code v/<version>/<attempt>.svo}) and each
   * {@code commits/<b>} names, in {@code stateUniqueIds}, the attempt of version {@code b + 1}.
   */
  static Path checkpointFormat2(Path tmp) throws IOException {
    Path checkpoint = tmp.resolve("ckpt2");
    Path store = checkpoint.resolve("state/0/0");
    sixVersions(store, 0, tmp.resolve("local2"), true);
    Files.createDirectories(checkpoint.resolve("offsets"));
    Files.createDirectories(checkpoint.resolve("commits"));
    for (int b = 0; b <= 6; b++) {
      Files.writeString(checkpoint.resolve("offsets/" + b), "v1\n{\"batchWatermarkMs\":0,"
          + "\"batchTimestampMs\":" + b + ",\"conf\":{}}\n{\"logOffset\":" + b + "}");
      if (b < 6) {
        Files.writeString(checkpoint.resolve("commits/" + b),
            "v2\n{\"nextBatchWatermarkMs\":0,\"stateUniqueIds\":{\"0\":[[\""
                + attempts(store, b + 1).get(0) + "\"]]}}");
      }
    }
    return checkpoint;
  }

  /**
   * {@code <tmp>/merged}: store {@code state/0/0} with versions 1 to 22 of an append-only key
   * space whose small files maintenance merged at version 20, published in a base snapshot of
   * version 20 (so versions 20 and later need no object of versions 1 to 19), {@code offsets/0}
   * to {@code 21} and {@code commits/0} to {@code 21}.
   */
  static Path mergedCheckpoint(Path tmp) throws IOException {
    return mergedCheckpoint(tmp, 22);
  }

  /**
   * As {@link #mergedCheckpoint(Path)} with versions 1 to {@code last} (at least 20) and batches 0
   * to {@code last - 1} in both logs.
   */
  static Path mergedCheckpoint(Path tmp, int last) throws IOException {
    Path checkpoint = tmp.resolve("merged");
    Path store = checkpoint.resolve("state/0/0");
    try (SyncedStore s = new SyncedStore(new StoreIdentity(0, 0, "default", store.toString()),
        ObjectStores.open(store.toUri().toString(), () -> null, RequestListener.NONE),
        tmp.resolve("local-merged"), new StoreSettings(100, 2, 1 << 20, false,
            SharedMemory.Limits.DEFAULT, new GcSettings(false, 100, 1, 3_600_000L)), "{}",
            "{}")) {
      s.load(0, Optional.empty());
      for (int v = 1; v <= last; v++) {
        s.put(String.format("k%03d", v).getBytes(StandardCharsets.UTF_8),
            ("v" + v).getBytes(StandardCharsets.UTF_8));
        s.commit();
        if (v == 20) {
          s.maintenance(); // merges the 20 small files of the append-only key space
          if (!s.snapshotNow()) {
            throw new IllegalStateException("no base snapshot of version 20");
          }
        }
      }
    }
    Files.createDirectories(checkpoint.resolve("offsets"));
    Files.createDirectories(checkpoint.resolve("commits"));
    for (int b = 0; b < last; b++) {
      Files.writeString(checkpoint.resolve("offsets/" + b), "v1\n{}\n{\"logOffset\":" + b + "}");
      Files.writeString(checkpoint.resolve("commits/" + b), "v1\n{\"nextBatchWatermarkMs\":0}");
    }
    return checkpoint;
  }

  /** The attempts of {@code version} of the store at {@code store}, in key order. */
  static java.util.List<String> attempts(Path store, long version) throws IOException {
    try (Stream<Path> s = Files.walk(store.resolve("v"))) {
      return s.filter(Files::isRegularFile).map(p -> store.relativize(p).toString())
          .filter(k -> StoreLayout.versionOf(k) == version).sorted()
          .map(StoreLayout::attemptOf).toList();
    }
  }

  /** Deletes every version object of {@code version} of the store at {@code store}. */
  static void deleteVersion(Path store, long version) throws IOException {
    try (Stream<Path> s = Files.walk(store.resolve("v"))) {
      for (Path p : s.filter(Files::isRegularFile).toList()) {
        if (StoreLayout.versionOf(store.relativize(p).toString()) == version) {
          Files.delete(p);
        }
      }
    }
  }

  /** Sets every file's modification time two days back (older than any grace or idle time). */
  static void age(Path checkpoint) throws IOException {
    try (Stream<Path> files = Files.walk(checkpoint)) {
      for (Path p : files.filter(Files::isRegularFile).toList()) {
        Files.setLastModifiedTime(p, FileTime.fromMillis(System.currentTimeMillis() - TWO_DAYS));
      }
    }
  }
}
