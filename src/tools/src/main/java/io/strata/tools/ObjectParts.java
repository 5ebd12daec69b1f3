// SPDX-License-Identifier: Apache-2.0
package io.strata.tools;

import io.strata.format.ManifestFormatException;
import io.strata.format.VersionObjectCodec;
import io.strata.format.sst.SstFormatException;
import io.strata.format.sst.SstLayout;
import io.strata.format.sst.SstReader;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.ToLongFunction;

/**
 * A version object's bytes by part (issue 45, "the bytes of a commit"), read from the object
 * itself with strata-core's codecs: its footer ({@link VersionObjectCodec}) says where the SST
 * delta ends and the manifest begins, and the delta's own handles ({@link SstReader#layout()})
 * split it into data blocks, index, filter, properties, metaindex and footer. Every field is in
 * bytes; they add up to {@link #objectBytes()}.
 *
 * @param objectBytes the whole object
 * @param dataBlocks the SST delta's data blocks (0 for a version without writes)
 * @param sstData those data blocks, as stored (LZ4 where it saved an eighth), with trailers
 * @param sstIndex the delta's index block
 * @param sstFilter the delta's Bloom filter block
 * @param sstProperties the delta's properties block
 * @param sstMetaindex the delta's metaindex block
 * @param sstFooter the delta's footer (53 bytes)
 * @param sstOther the delta's bytes none of the above account for (0 for Strata's deltas)
 * @param manifest the manifest JSON
 * @param footer Strata's footer ({@value VersionObjectCodec#FOOTER_BYTES} bytes)
 */
record ObjectParts(long objectBytes, int dataBlocks, long sstData, long sstIndex, long sstFilter,
    long sstProperties, long sstMetaindex, long sstFooter, long sstOther, long manifest,
    long footer) {

  /** A part's name for people, its JSON name, and how to read it from the parts. */
  record Part(String label, String json, ToLongFunction<ObjectParts> bytes) { }

  /** The parts in the object's order (the SST's blocks as RocksDB lays them out), then the whole. */
  static final List<Part> PARTS = List.of(
      new Part("SST data blocks", "sstData", ObjectParts::sstData),
      new Part("SST filter", "sstFilter", ObjectParts::sstFilter),
      new Part("SST index", "sstIndex", ObjectParts::sstIndex),
      new Part("SST properties", "sstProperties", ObjectParts::sstProperties),
      new Part("SST metaindex", "sstMetaindex", ObjectParts::sstMetaindex),
      new Part("SST footer", "sstFooter", ObjectParts::sstFooter),
      new Part("SST other", "sstOther", ObjectParts::sstOther),
      new Part("manifest", "manifest", ObjectParts::manifest),
      new Part("Strata footer", "footer", ObjectParts::footer),
      new Part("whole object", "object", ObjectParts::objectBytes));

  /**
   * Splits one whole version object.
   *
   * @param object the object's bytes, all of them
   * @throws ManifestFormatException if it does not end with a valid version-object footer, the
   *     footer points outside it, or the manifest's checksum does not match
   * @throws SstFormatException if its delta is not an SST Strata's reader opens
   */
  static ObjectParts of(byte[] object) throws ManifestFormatException, SstFormatException {
    VersionObjectCodec.Footer f = VersionObjectCodec.footer(object, object.length);
    VersionObjectCodec.manifestFromTail(object, f); // checks the manifest's checksum
    long delta = f.manifestOffset();
    SstLayout l = delta == 0 ? new SstLayout(0, 0, 0, 0, 0, 0, 0, 0)
        : SstReader.open(ByteBuffer.wrap(object, 0, (int) delta).slice()).layout();
    return new ObjectParts(object.length, l.dataBlocks(), l.dataBytes(), l.indexBytes(),
        l.filterBytes(), l.propertiesBytes(), l.metaindexBytes(), l.footerBytes(),
        l.otherBytes(), f.manifestLength(), VersionObjectCodec.FOOTER_BYTES);
  }

  /** The JSON form: each part's bytes by its JSON name, and the data blocks. */
  Map<String, Object> json() {
    Map<String, Object> j = new LinkedHashMap<>();
    for (Part p : PARTS) {
      j.put(p.json(), p.bytes().applyAsLong(this));
    }
    j.put("dataBlocks", dataBlocks);
    return j;
  }

  /**
   * Mean and median of one part over several objects.
   *
   * @param mean the mean, bytes
   * @param p50 the median, bytes (the mean of the two middle values for an even count)
   */
  record Stat(double mean, double p50) { }

  /**
   * Each part's mean and median over {@code all}, in {@link #PARTS}' order.
   *
   * @param all at least one object's parts
   * @throws IllegalArgumentException if {@code all} is empty
   */
  static Map<Part, Stat> summary(List<ObjectParts> all) {
    if (all.isEmpty()) {
      throw new IllegalArgumentException("no version object to summarize");
    }
    Map<Part, Stat> out = new LinkedHashMap<>();
    for (Part p : PARTS) {
      long[] v = all.stream().mapToLong(p.bytes()).sorted().toArray();
      int n = v.length;
      double p50 = n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
      out.put(p, new Stat(Arrays.stream(v).average().orElse(0), p50));
    }
    return out;
  }
}
