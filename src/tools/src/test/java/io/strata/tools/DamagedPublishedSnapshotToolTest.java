// SPDX-License-Identifier: Apache-2.0
package io.strata.tools;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.strata.engine.SharedMemory;
import io.strata.format.StoreLayout;
import io.strata.objectstore.ObjectInfo;
import io.strata.objectstore.ObjectStore;
import io.strata.objectstore.ObjectStores;
import io.strata.objectstore.RequestListener;
import io.strata.sync.GcSettings;
import io.strata.sync.StoreIdentity;
import io.strata.sync.StoreSettings;
import io.strata.sync.SyncedStore;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A damaged published snapshot ({@code b/...bsm}) of a store in a checkpoint on the local
 * filesystem: {@code strata verify} lists it as a problem naming its key, and {@code strata gc}
 * lists it as unreadable (and collects the store all the same).
 */
class DamagedPublishedSnapshotToolTest {
  @TempDir Path tmp;

  /** One run of the tool: exit code, standard output and error. */
  private record Run(int code, String out, String err) {
    JsonNode json() throws Exception {
      return ToolContext.JSON.readTree(out);
    }
  }

  private static Run tool(String... args) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    int code = StrataTool.run(args, new PrintStream(out, true, StandardCharsets.UTF_8),
        new PrintStream(err, true, StandardCharsets.UTF_8));
    return new Run(code, out.toString(StandardCharsets.UTF_8),
        err.toString(StandardCharsets.UTF_8));
  }

  @Test
  void verifyAndGcListADamagedPublishedSnapshot() throws Exception {
    Path checkpoint = tmp.resolve("ckpt");
    Path store = checkpoint.resolve("state/0/0");
    String damaged;
    try (SyncedStore s = new SyncedStore(new StoreIdentity(0, 0, "default", store.toString()),
        ObjectStores.open(store.toUri().toString(), () -> null, RequestListener.NONE),
        tmp.resolve("local"), new StoreSettings(3, 2, 1 << 20, false,
            SharedMemory.Limits.DEFAULT, GcSettings.DEFAULT), "{}", "{}")) {
      s.load(0, Optional.empty());
      for (int v = 1; v <= 4; v++) {
        s.put(("k" + v).getBytes(StandardCharsets.UTF_8), ("v" + v).getBytes(
            StandardCharsets.UTF_8));
        s.commit();
        if (v == 3) {
          assertTrue(s.snapshotNow(), "a published snapshot of version 3");
        }
      }
    }
    try (ObjectStore o = ObjectStores.open(store.toUri().toString(), () -> null,
        RequestListener.NONE)) {
      List<String> published = o.list(StoreLayout.PUBLISHED_SNAPSHOTS).stream()
          .map(ObjectInfo::key).toList();
      assertEquals(1, published.size(), published.toString());
      damaged = published.get(0);
    }
    // Its inline files (the base files version 4's manifest names) stay intact; its JSON and
    // footer are replaced by bytes that are not a published snapshot's.
    byte[] object = Files.readAllBytes(store.resolve(damaged));
    long inline = io.strata.format.VersionObjectCodec.footer(object, object.length,
        io.strata.format.VersionObjectCodec.Magic.PUBLISHED_SNAPSHOT).manifestOffset();
    java.io.ByteArrayOutputStream junk = new java.io.ByteArrayOutputStream();
    junk.write(object, 0, (int) inline);
    junk.write("not a published snapshot".getBytes(StandardCharsets.UTF_8));
    Files.write(store.resolve(damaged), junk.toByteArray());
    // Two days old: older than the grace period, so gc reads what the store names.
    try (var files = Files.walk(checkpoint)) {
      for (Path p : files.filter(Files::isRegularFile).toList()) {
        Files.setLastModifiedTime(p, java.nio.file.attribute.FileTime.fromMillis(
            System.currentTimeMillis() - 2 * 24 * 3600_000L));
      }
    }
    String key = "state/0/0/" + damaged;
    String uri = checkpoint.toUri().toString();

    Run verify = tool("verify", uri, "--json");
    assertEquals(StrataTool.EXIT_PROBLEMS, verify.code(), verify::toString);
    JsonNode problems = verify.json().get("problems");
    assertEquals(1, problems.size(), verify::toString);
    assertEquals(key, problems.get(0).get("key").asText(), verify::toString);
    assertTrue(problems.get(0).get("problem").asText().startsWith("unreadable published "
        + "snapshot"), verify::toString);

    Run gc = tool("gc", uri, "--dry-run", "--json");
    assertEquals(StrataTool.EXIT_OK, gc.code(), gc::toString);
    JsonNode unreadable = gc.json().get("stores").get(0).get("unreadablePublishedSnapshots");
    assertEquals(List.of(key), List.of(unreadable.get(0).asText()), gc::toString);
    assertEquals(1, unreadable.size(), gc::toString);
    Run text = tool("gc", uri, "--dry-run");
    assertEquals(StrataTool.EXIT_OK, text.code(), text::toString);
    assertTrue(text.out().contains("Unreadable published snapshot " + key), text::toString);
  }
}
