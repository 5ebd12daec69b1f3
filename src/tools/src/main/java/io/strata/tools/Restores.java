// SPDX-License-Identifier: Apache-2.0
package io.strata.tools;

import io.strata.format.BaseSnapshot;
import io.strata.format.Delta;
import io.strata.format.Manifest;
import io.strata.format.PublishedSnapshot;
import io.strata.objectstore.ObjectInfo;
import io.strata.sync.StoreInspector;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * What a cold load of a version downloads, decided as the load decides it (docs/format.md,
 * "Loading a version" and "Published snapshots"): the newest published snapshot on the
 * manifest's lineage after its base, if one is listed and readable, plus the deltas after it;
 * otherwise the manifest's base files and deltas.
 *
 * @param from the published snapshot's version when the load restores from one, else -1
 * @param baseVersion the version of the manifest's base snapshot the load restores from when
 *     it uses no published snapshot, else -1 (also -1 when the manifest has no base)
 * @param objects distinct objects read (one GET each, more for objects larger than a part)
 * @param bytes bytes downloaded
 * @param deltas deltas ingested after the base
 * @param missing of the objects read, those the store's listing lacks (collected or deleted: the
 *     load fails)
 */
record Restores(long from, long baseVersion, int objects, long bytes, int deltas, int missing) {

  /** The plan for {@code m}, given its store's listing (to find published snapshots). */
  static Restores of(Manifest m, List<ObjectInfo> listing, StoreInspector inspector) {
    Manifest restored = m;
    long from = -1;
    if (!m.deltas().isEmpty()) {
      Optional<PublishedSnapshot> p = inspector.usablePublishedSnapshot(m, listing);
      if (p.isPresent()) {
        restored = p.get().rebase(m);
        from = p.get().version();
      }
    }
    Set<String> keys = new HashSet<>();
    long bytes = 0;
    for (BaseSnapshot.BaseFile f : restored.base().map(BaseSnapshot::files).orElse(List.of())) {
      keys.add(f.file().key());
      bytes += f.file().length();
    }
    for (Delta d : restored.deltas()) {
      keys.add(d.file().key());
      bytes += d.file().length();
    }
    long base = from >= 0 ? -1 : restored.base().map(BaseSnapshot::version).orElse(-1L);
    Set<String> listed = new HashSet<>();
    listing.forEach(o -> listed.add(o.key()));
    int missing = (int) keys.stream().filter(k -> !listed.contains(k)).count();
    return new Restores(from, base, keys.size(), bytes, restored.deltas().size(), missing);
  }

  /**
   * "12 objects, 1.5 MiB (published snapshot 40 + 3 deltas)", "1 object, 1.3 KiB (1 delta)";
   * "cannot load: 2 of 5 objects gone" when some are missing.
   */
  String describe() {
    if (missing > 0) {
      return "cannot load: " + missing + " of " + Table.count(objects, "object") + " gone "
          + "(collected below the retention, or deleted)";
    }
    String start = from >= 0 ? "published snapshot " + from : baseVersion >= 0
        ? "base snapshot " + baseVersion : null;
    String tail = Table.count(deltas, "delta");
    return Table.count(objects, "object") + ", " + Table.bytes(bytes) + " ("
        + (start == null ? tail : start + " + " + tail) + ")";
  }
}
