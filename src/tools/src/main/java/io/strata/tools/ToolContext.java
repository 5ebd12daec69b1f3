// SPDX-License-Identifier: Apache-2.0
package io.strata.tools;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import io.strata.config.StrataConf;
import io.strata.objectstore.ObjectInfo;
import io.strata.objectstore.ObjectStore;
import io.strata.objectstore.ObjectStores;
import io.strata.sync.StoreIdentity;
import io.strata.sync.StoreInspector;
import java.io.IOException;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * What one command works with: the checkpoint's object store, the settings, a pool of
 * {@code --threads} for S3 requests, and the output streams. Closing it closes the stores and
 * the pool.
 */
final class ToolContext implements AutoCloseable {
  static final ObjectMapper JSON = new ObjectMapper()
      .enable(SerializationFeature.INDENT_OUTPUT);

  final String checkpoint;
  final CommonOptions options;
  final ToolSettings settings;
  final StrataConf conf;
  final PrintStream out;
  final PrintStream err;
  /** Per-store tasks (a store's describe, history, gc decision, verify plan). */
  final ExecutorService pool;
  /**
   * The requests those tasks wait for (a version's manifest, a GC round's manifest reads):
   * a pool of its own, so that tasks waiting on it never hold every thread it needs.
   */
  final ExecutorService requests;
  private final ObjectStore root;
  private final List<ObjectStore> opened = new ArrayList<>();

  ToolContext(StrataTool tool, CommonOptions options, String checkpoint) throws ToolException {
    this.checkpoint = checkpoint.endsWith("/") ? checkpoint.substring(0, checkpoint.length() - 1)
        : checkpoint;
    this.options = options;
    this.out = tool.out;
    this.err = tool.err;
    if (options.threads < 1 || options.threads > 256) {
      throw new ToolException(StrataTool.EXIT_USAGE, "Invalid --threads " + options.threads
          + ": expected 1 to 256", null);
    }
    this.settings = ToolSettings.from(options);
    this.conf = settings.strata(this.checkpoint);
    try {
      this.root = ObjectStores.open(this.checkpoint, conf::s3, null);
    } catch (IllegalArgumentException e) {
      throw new ToolException(StrataTool.EXIT_USAGE, e.getMessage(), e);
    }
    this.pool = daemons(options.threads, "strata-tool-store");
    this.requests = daemons(options.threads, "strata-tool-request");
  }

  /**
   * Lists the whole checkpoint once.
   *
   * @throws ToolException (exit 3) if the listing fails (no such bucket, credentials refused, S3
   *     unreachable: the message is the object store's, which names the bucket and endpoint) or
   *     nothing is stored there
   */
  CheckpointScan scan() throws ToolException {
    List<ObjectInfo> listing;
    try {
      listing = root.list("");
    } catch (IOException | RuntimeException e) {
      throw new ToolException(StrataTool.EXIT_UNREADABLE, "Cannot list checkpoint "
          + checkpoint + ": " + e.getMessage(), e);
    }
    if (listing.isEmpty()) {
      throw new ToolException(StrataTool.EXIT_UNREADABLE, "No checkpoint at " + checkpoint
          + ": nothing is stored under it (check the path, the bucket and the endpoint)", null);
    }
    return CheckpointScan.of(listing);
  }

  /**
   * Lists the checkpoint and checks that its state, if any, is Strata's.
   *
   * @throws ToolException (exit 3) as {@link #scan}, or if no Strata store exists and a store
   *     holds another provider's files, or Spark wrote nothing here either (not a checkpoint's
   *     root)
   */
  CheckpointScan strataScan() throws ToolException {
    CheckpointScan scan = scan();
    if (scan.strataStores().isEmpty()) {
      var foreign = scan.foreignProvider();
      if (foreign.isPresent()) {
        throw new ToolException(StrataTool.EXIT_UNREADABLE, "Not a Strata checkpoint: "
            + checkpoint + " holds state of " + foreign.get()[0] + " (for example "
            + foreign.get()[1] + "), and no Strata store; this tool reads only Strata's "
            + "format (docs/format.md)", null);
      }
      if (!scan.spark.any()) {
        throw new ToolException(StrataTool.EXIT_UNREADABLE, "Not a checkpoint: " + checkpoint
            + " holds neither Spark's offset or commit log nor a Strata store under "
            + "state/<operator>/<partition>/" + levelHint(scan) + "; give the checkpoint's "
            + "root (the directory holding offsets/, commits/ and state/)", null);
      }
    }
    return scan;
  }

  /**
   * As {@link #strataScan}, also refusing a checkpoint where any store holds another provider's
   * state (a command that changes the checkpoint must check every store).
   *
   * @param refusal how the message begins, e.g. "Refusing to rewind"
   * @throws ToolException (exit 3) as {@link #strataScan}, or naming the other provider's file
   */
  CheckpointScan strataOnlyScan(String refusal) throws ToolException {
    CheckpointScan scan = strataScan();
    var foreign = scan.foreignProvider();
    if (foreign.isPresent()) {
      throw new ToolException(StrataTool.EXIT_UNREADABLE, refusal + " " + checkpoint + ": it "
          + "holds state of " + foreign.get()[0] + " (for example " + foreign.get()[1]
          + "), which this tool cannot check", null);
    }
    return scan;
  }

  /**
   * The attempts Spark's commit log names (checkpoint format 2), for the stores of {@code scan}
   * that have per-attempt keys; none otherwise.
   */
  CommitLogAttempts commitLogAttempts(CheckpointScan scan) throws InterruptedException {
    return CommitLogAttempts.read(scan, root, requests);
  }

  /** What the listing looks like when it is not a checkpoint's root, or "". */
  private static String levelHint(CheckpointScan scan) {
    if (!scan.queriesBelow.isEmpty()) {
      return " (it holds the checkpoints of " + String.join(", ", scan.queriesBelow)
          + ": give one of them, <location>/<name>)";
    }
    if (scan.topLevel.contains("v") || scan.topLevel.contains("runs")) {
      return " (it looks like one store's directory, state/<operator>/<partition>)";
    }
    if (scan.topLevel.stream().anyMatch(d -> d.chars().allMatch(Character::isDigit))) {
      return " (it looks like state/ or state/<operator>)";
    }
    return "";
  }

  /**
   * {@code spark.sql.shuffle.partitions} as {@code offsets/<batch>} records it: the number of
   * state partitions every stateful operator had in that batch (a repartition changes it), or
   * the count a rescale job's claim on it names. One GET; -1 if the file has none or cannot be
   * read.
   */
  int partitionsOfBatch(long batch) {
    if (batch < 0) {
      return -1;
    }
    try (java.io.InputStream in = root().get("offsets/" + batch)) {
      String[] lines = new String(in.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8)
          .split("\n", 3);
      java.util.regex.Matcher claim = CLAIM.matcher(lines[0].trim());
      if (claim.matches()) {
        // A rescale job's claim (its commit may be written already): its new count.
        return Integer.parseInt(claim.group(1));
      }
      if (lines.length < 2) {
        return -1;
      }
      com.fasterxml.jackson.databind.JsonNode n = JSON.readTree(lines[1])
          .path("conf").path("spark.sql.shuffle.partitions");
      return n.isMissingNode() ? -1 : Integer.parseInt(n.asText());
    } catch (java.io.IOException | RuntimeException e) {
      return -1;
    }
  }

  /** The first line of a rescale job's claim on {@code offsets/<batch>}, with its count. */
  private static final java.util.regex.Pattern CLAIM =
      java.util.regex.Pattern.compile("v-strata-repartition-pending-.*-([0-9]{1,6})");

  /**
   * The count a rescale job ({@code io.strata.spark.StrataRepartition}) claimed {@code
   * offsets/<batch>} for: the job writes that entry first as a marker Spark cannot read
   * ({@code v-strata-repartition-pending-...-partitions-<M>}), and replaces it with the batch's
   * real entry once the state is written. One GET.
   *
   * @return the new count, or empty if {@code offsets/<batch>} is not such a marker (or cannot
   *     be read)
   */
  java.util.OptionalInt repartitionClaim(long batch) {
    if (batch < 0) {
      return java.util.OptionalInt.empty();
    }
    try (java.io.InputStream in = root().get("offsets/" + batch)) {
      String first = new String(in.readNBytes(256), java.nio.charset.StandardCharsets.UTF_8)
          .split("\n", 2)[0];
      java.util.regex.Matcher m = CLAIM.matcher(first.trim());
      return m.matches() ? java.util.OptionalInt.of(Integer.parseInt(m.group(1)))
          : java.util.OptionalInt.empty();
    } catch (java.io.IOException | RuntimeException e) {
      return java.util.OptionalInt.empty();
    }
  }

  /** The checkpoint's object store (keys relative to the checkpoint; closed with this). */
  ObjectStore root() {
    return root;
  }

  /** A read-only view of {@code store} (its object store is closed with this context). */
  StoreInspector inspector(CheckpointScan.Store store) {
    String location = ObjectStores.child(checkpoint, store.relativeLocation());
    ObjectStore objects = ObjectStores.open(location, conf::s3, null);
    synchronized (opened) {
      opened.add(objects);
    }
    return new StoreInspector(new StoreIdentity(store.operator(), store.partition(),
        store.name(), location), objects, requests);
  }

  private static ExecutorService daemons(int threads, String name) {
    return Executors.newFixedThreadPool(threads, r -> {
      Thread t = new Thread(r, name);
      t.setDaemon(true);
      return t;
    });
  }

  /** Prints {@code value} as JSON on {@link #out}. */
  void printJson(Object value) {
    try {
      out.println(JSON.writeValueAsString(value));
    } catch (IOException e) {
      throw new IllegalStateException("Cannot write JSON", e);
    }
  }

  @Override
  public void close() {
    pool.shutdownNow();
    requests.shutdownNow();
    synchronized (opened) {
      opened.forEach(ObjectStore::close);
    }
    root.close();
  }
}
