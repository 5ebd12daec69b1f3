// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.strata.LogCapture;
import io.strata.engine.SharedMemory;
import io.strata.format.StoreLayout;
import io.strata.metrics.GcStats;
import io.strata.objectstore.ObjectInfo;
import io.strata.objectstore.ObjectStore;
import io.strata.objectstore.ObjectStores;
import io.strata.objectstore.RequestListener;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A published snapshot that cannot be decoded (bytes that are not one, or one naming a file
 * twice) never stops garbage collection: every round keeps deleting what expired, counts and
 * logs the damaged objects, deletes them once they are older than the grace period (base
 * snapshot files, any of which they might name, in a later round), and every retained version
 * still loads (from the manifest's own chain). Local-filesystem object store;
 * time passing is modelled by moving last-modified times back.
 */
class DamagedPublishedSnapshotGcTest {
  private static final Duration GRACE = Duration.ofHours(1);
  private static final int RETAIN = 3;

  @TempDir Path tmp;

  private SyncedStore open(String name) {
    ObjectStore o = ObjectStores.open(tmp.resolve("remote").toUri().toString(),
        SyncedStoreTest.UNUSED_S3, RequestListener.NONE);
    return new SyncedStore(new StoreIdentity(0, 1, "default", tmp.resolve("remote").toString()),
        o, tmp.resolve("local-" + name), new StoreSettings(3, 2, 2048, false,
            SharedMemory.Limits.DEFAULT, new GcSettings(true, RETAIN, 1_000, GRACE.toMillis())),
        "{}", "{}", new OffsetClock());
  }

  /**
   * Moves every object's last-modified time back by more than the grace period, but sets {@code
   * keep}'s to now.
   */
  private void ageAllBut(List<String> keep) throws IOException {
    Path remote = tmp.resolve("remote");
    try (Stream<Path> files = Files.walk(remote)) {
      for (Path p : files.filter(Files::isRegularFile).toList()) {
        if (p.getFileName().toString().contains(".strata-tmp-")) {
          continue; // a write in progress
        }
        long t = keep.contains(remote.relativize(p).toString().replace('\\', '/'))
            ? System.currentTimeMillis()
            : Files.getLastModifiedTime(p).toMillis() - GRACE.plusMinutes(1).toMillis();
        Files.setLastModifiedTime(p, FileTime.fromMillis(t));
      }
    }
  }

  private static void commit(SyncedStore s, Map<Long, TreeMap<String, String>> states, long v)
      throws IOException {
    states.put(v, GcWorkload.write(s, states.get(v - 1), v, "d"));
    assertEquals(v, s.commit().manifest().version());
  }

  @Test
  void damagedPublishedSnapshotsAreReportedAndCollectedWhileEveryRoundDeletesTheRest()
      throws Exception {
    Map<Long, TreeMap<String, String>> states = new HashMap<>();
    states.put(0L, new TreeMap<>());
    Path remote = tmp.resolve("remote");
    try (SyncedStore w = open("w")) {
      w.load(0, Optional.empty());
      for (long v = 1; v <= 6; v++) {
        commit(w, states, v);
        if (v == 3 || v == 6) {
          assertTrue(w.snapshotNow(), "a published snapshot of version " + v);
        }
      }
    }
    try (ObjectStore objects = ObjectStores.open(remote.toUri().toString(),
        SyncedStoreTest.UNUSED_S3, RequestListener.NONE);
        SyncedStore a = open("a")) {
      List<String> published = objects.list(StoreLayout.PUBLISHED_SNAPSHOTS).stream()
          .map(ObjectInfo::key).sorted().toList();
      assertEquals(2, published.size(), "published: " + published);
      // The older: bytes that are not a published snapshot at all. The newer (usable by every
      // retained version): valid JSON that names its first file twice (counts.bytes adjusted).
      String garbled = published.get(0);
      String twice = published.get(1);
      // Its inline files (base files the retained manifests may name) stay intact; what
      // follows them is not a published snapshot's JSON and footer.
      byte[] garbledObject = Files.readAllBytes(remote.resolve(garbled));
      long inline = io.strata.format.VersionObjectCodec.footer(garbledObject,
          garbledObject.length, io.strata.format.VersionObjectCodec.Magic.PUBLISHED_SNAPSHOT)
          .manifestOffset();
      java.io.ByteArrayOutputStream junk = new java.io.ByteArrayOutputStream();
      junk.write(garbledObject, 0, (int) inline);
      junk.write("{\"formatVersion\": 1, \"stor".getBytes(StandardCharsets.UTF_8));
      Files.write(remote.resolve(garbled), junk.toByteArray());
      ObjectMapper json = new ObjectMapper();
      byte[] object = Files.readAllBytes(remote.resolve(twice));
      io.strata.format.VersionObjectCodec.Footer footer = io.strata.format.VersionObjectCodec
          .footer(object, object.length,
              io.strata.format.VersionObjectCodec.Magic.PUBLISHED_SNAPSHOT);
      ObjectNode root = (ObjectNode) json.readTree(
          io.strata.format.VersionObjectCodec.manifestFromTail(object, footer));
      ArrayNode files = (ArrayNode) root.get("files");
      files.add(files.get(0).deepCopy());
      ((ObjectNode) root.get("counts")).put("bytes", root.get("counts").get("bytes").asLong()
          + files.get(0).get("length").asLong());
      java.io.ByteArrayOutputStream rewritten = new java.io.ByteArrayOutputStream();
      rewritten.write(object, 0, (int) footer.manifestOffset()); // its inline files, unchanged
      rewritten.write(io.strata.format.VersionObjectCodec.jsonAndFooter(
          json.writeValueAsBytes(root), footer.manifestOffset(),
          io.strata.format.VersionObjectCodec.Magic.PUBLISHED_SNAPSHOT));
      Files.write(remote.resolve(twice), rewritten.toByteArray());
      List<String> damaged = List.of(garbled, twice);
      // The next owner (the writer would have them cached as it wrote them): its load skips the
      // damaged snapshot and restores from the manifest's own chain.
      a.load(6, Optional.empty());
      GcWorkload.assertState(a, states.get(6L), "version 6");

      long v = 6;
      try (LogCapture log = new LogCapture()) {
        for (int round = 1; round <= 4; round++) {
          // An aborted batch that spilled: its spill deltas are garbage once old enough (and
          // no longer of the newest version).
          GcWorkload.writeJunk(a, 100);
          a.abort();
          a.load(v, Optional.empty());
          commit(a, states, ++v);
          commit(a, states, ++v);
          a.awaitLocalIngestion(); // and the first round, and the snapshot the commits started
          assertTrue(a.awaitSnapshotUpload(30_000));
          ageAllBut(damaged);
          GcStats stats = a.collectGarbage();
          assertTrue(stats.objectsDeleted() > 0, "round " + round + " deletes what expired: "
              + stats);
          assertEquals(2, stats.unreadablePublishedSnapshots(), "round " + round + ": " + stats);
          for (String k : damaged) {
            assertTrue(objects.head(k).isPresent(), k + " is younger than the grace period");
          }
        }
        for (String k : damaged) {
          List<String> warns = log.lines.stream().filter(l -> l.startsWith("WARN ")
              && l.contains("GarbageCollector") && l.contains(objects.describe(k))).toList();
          assertEquals(1, warns.size(), "one WARN naming " + k + ": " + log.lines);
        }
        assertTrue(log.lines.stream().anyMatch(l -> l.contains("names file") && l.contains(
            "twice")), "the WARN says what is wrong: " + log.lines);
      }
      try (SyncedStore fresh = open("fresh")) {
        for (long r = v - RETAIN; r <= v; r++) {
          fresh.load(r, Optional.empty());
          GcWorkload.assertState(fresh, states.get(r), "retained version " + r);
        }
      }

      // Older than the grace period: the damaged objects go like anything nothing names; the
      // base snapshot files (any of which they might name) stay while they are listed.
      ageAllBut(List.of());
      List<String> baseFiles = objects.list("").stream().map(ObjectInfo::key)
          .filter(k -> k.startsWith("sst/") || k.startsWith("snap/")).toList();
      GcStats last = a.collectGarbage();
      assertEquals(2, last.unreadablePublishedSnapshots(), last.toString());
      assertTrue(last.publishedSnapshotsDeleted() >= 2, last.toString());
      for (String k : damaged) {
        assertFalse(objects.head(k).isPresent(), k + " is deleted");
      }
      for (String k : baseFiles) {
        assertTrue(objects.head(k).isPresent(), k + " stays in the round that deleted them");
      }
      ageAllBut(List.of());
      GcStats after = a.collectGarbage();
      assertEquals(0, after.unreadablePublishedSnapshots(), after.toString());
      // The files only they named go now (format 2 keeps a snapshot's small files inside its
      // own object, so those went with it): nothing but what the retained versions need stays.
      try (SyncedStore reader = open("reader")) {
        GcWorkload.assertOnlyRetainedAndNamedRemain(reader, objects, v, RETAIN,
            java.util.Set.of());
        for (long r = v - RETAIN; r <= v; r++) {
          reader.load(r, Optional.empty());
          GcWorkload.assertState(reader, states.get(r), "retained version " + r);
        }
      }
    }
  }
}
