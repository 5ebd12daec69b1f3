// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import io.strata.format.Manifest;
import io.strata.format.ManifestCodec;
import io.strata.format.Reachability;
import io.strata.format.StoreLayout;
import io.strata.format.VersionObjectCodec;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/**
 * Checks a checkpoint in S3Proxy's filesystem data directory: every manifest (in every version
 * object under {@code <prefix>/state/}) names only objects that exist. Reads the files directly,
 * as the server stores them (one file per key). Public for the cluster tests ({@code
 * io.strata.cluster}).
 */
public final class CheckpointAudit {
  private CheckpointAudit() { }

  /**
   * Objects named by a manifest but absent, as "version-object-key names missing-key"; empty
   * when the checkpoint is whole.
   *
   * @throws IllegalStateException if a version object cannot be decoded
   */
  public static List<String> missingNamedObjects(Path dataDir, String bucket, String prefix)
      throws IOException {
    return missingNamedObjects(dataDir, bucket, prefix, Integer.MAX_VALUE);
  }

  /**
   * As {@link #missingNamedObjects(Path, String, String)}, for the manifests of the newest
   * {@code retained} versions of each store only: garbage collection may delete what an older
   * version's manifest names (an older version object can stay, pinned, because a retained base
   * snapshot reuses the SST delta inside it), so only retained versions must be loadable.
   */
  public static List<String> missingNamedObjects(Path dataDir, String bucket, String prefix,
      int retained) throws IOException {
    Path root = dataDir.resolve(bucket);
    Path state = root.resolve(prefix).resolve("state");
    List<String> missing = new ArrayList<>();
    if (!Files.exists(state)) {
      return missing;
    }
    List<String> keys = new ArrayList<>();
    Map<String, Long> newest = new HashMap<>();
    try (Stream<Path> files = Files.walk(state)) {
      for (Path f : files.filter(Files::isRegularFile).toList()) {
        String key = root.relativize(f).toString().replace('\\', '/');
        int v = key.lastIndexOf("/v/");
        if (v >= 0 && key.endsWith(".svo")) {
          keys.add(key);
          newest.merge(key.substring(0, v + 1), StoreLayout.versionOf(key.substring(v + 1)),
              Math::max);
        }
      }
    }
    // A superseded format-1 generation (an earlier run's object of a version a later run
    // re-committed) is read by no load: what only it names may be collected.
    Map<String, Long> greatestGeneration = new HashMap<>();
    for (String key : keys) {
      int v = key.lastIndexOf("/v/");
      String rel = key.substring(v + 1);
      greatestGeneration.merge(key.substring(0, v + 1) + StoreLayout.versionOf(rel),
          StoreLayout.generationOf(rel), Math::max);
    }
    for (String key : keys) {
      Path f = root.resolve(key);
      int v = key.lastIndexOf("/v/");
      String storeRoot = key.substring(0, v + 1);
      String rel = key.substring(v + 1);
      long generation = StoreLayout.generationOf(rel);
      if (generation >= 0 && generation
          < greatestGeneration.get(storeRoot + StoreLayout.versionOf(rel))) {
        continue;
      }
      if (StoreLayout.versionOf(key.substring(v + 1))
          <= newest.get(storeRoot) - (long) retained) {
        continue;
      }
      for (String named : Reachability.namedKeys(manifest(f, key))) {
        if (!Files.exists(root.resolve(storeRoot + named))) {
          missing.add(key + " names " + storeRoot + named);
        }
      }
    }
    return missing;
  }

  /** The manifest of the version object in file {@code f}. */
  static Manifest manifest(Path f, String key) {
    try {
      byte[] all = Files.readAllBytes(f);
      VersionObjectCodec.Footer footer = VersionObjectCodec.footer(all, all.length);
      return ManifestCodec.decode(VersionObjectCodec.manifestFromTail(all, footer));
    } catch (IOException e) {
      throw new UncheckedIOException("Cannot read " + key, e);
    } catch (Exception e) {
      throw new IllegalStateException("Cannot decode the manifest of " + key + ": " + e, e);
    }
  }
}
