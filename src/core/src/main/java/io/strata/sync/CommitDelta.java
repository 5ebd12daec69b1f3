// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import io.strata.engine.DeltaFile;
import io.strata.engine.LocalStore;
import io.strata.format.Manifest;
import io.strata.format.ManifestCodec;
import io.strata.format.VersionObjectCodec;
import io.strata.metrics.CommitStats;
import io.strata.objectstore.ObjectBody;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The SST delta of one commit, where it was written, and the version object that carries it: a
 * delta of up to {@link LocalStore#IN_MEMORY_DELTA_BYTES} is built in memory and written under
 * the database's {@code tmp} only by its ingestion, so the commit touches no file for it; a
 * larger one is streamed to the staging directory ({@link DeltaStaging}), or to {@code tmp}
 * (created then) if that fails. The version object is the delta's bytes followed by the manifest
 * and footer ({@link VersionObjectCodec}), sent with one PUT.
 *
 * @param sst the delta's file (written, or to be written by the ingestion)
 * @param tmp the database's temporary directory (where the ingestion writes or moves it)
 * @param delta the delta, empty if the version changed nothing
 * @param startNanos {@link System#nanoTime()} when building started
 * @param builtNanos {@link System#nanoTime()} when the delta was built
 */
record CommitDelta(Path sst, Path tmp, Optional<DeltaFile> delta, long startNanos,
    long builtNanos) {
  private static final Logger LOG = LoggerFactory.getLogger(CommitDelta.class);

  /**
   * Builds the delta of {@code l}'s pending writes for {@code version} (see the class comment).
   * On failure, its file is deleted.
   *
   * @param stageInMemory {@link StoreSettings#stageDeltasInMemory()}
   * @throws IOException if the SST cannot be written (to the local disk, last)
   */
  static CommitDelta build(StoreIdentity identity, LocalStore l, LocalDatabase db,
      boolean stageInMemory, long version, String attempt) throws IOException {
    boolean inMemory = l.pendingBytes() <= LocalStore.IN_MEMORY_DELTA_BYTES;
    Path tmp = inMemory ? db.tmpPath() : db.tmpDir();
    Path sst = (inMemory ? tmp : DeltaStaging.dirFor(stageInMemory, l.pendingBytes(), tmp))
        .resolve(DeltaStaging.fileName(version, attempt));
    try {
      long t0 = System.nanoTime();
      Optional<DeltaFile> delta;
      try {
        delta = l.buildDelta(sst);
      } catch (IOException e) {
        if (sst.startsWith(tmp)) {
          throw e;
        }
        // The memory-backed directory is full or failing: write the delta to the local disk.
        LOG.info("{} version {}: cannot write the SST delta to {} ({}); writing it to {}",
            identity, version, sst.getParent(), e.getMessage(), tmp);
        db.deleteQuietly(sst);
        sst = tmp.resolve(sst.getFileName());
        delta = l.buildDelta(sst);
      }
      return new CommitDelta(sst, tmp, delta, t0, System.nanoTime());
    } catch (IOException | RuntimeException | Error e) {
      db.deleteQuietly(sst);
      throw e;
    }
  }

  /** The delta's size, bytes; 0 if empty. */
  long size() {
    return delta.map(DeltaFile::size).orElse(0L);
  }

  /**
   * The version object of {@code m}: the delta's bytes (from memory or its file), then the
   * encoded manifest and the footer.
   *
   * @throws IOException if the manifest cannot be encoded or the file opened
   */
  ObjectBody body(Manifest m) throws IOException {
    byte[] tail = VersionObjectCodec.manifestAndFooter(ManifestCodec.encode(m), size());
    if (delta.isEmpty()) {
      return ObjectBody.of(tail);
    }
    byte[] bytes = delta.get().bytes();
    return ObjectBody.concat(bytes != null ? ObjectBody.of(bytes) : ObjectBody.of(sst),
        ObjectBody.of(tail));
  }

  /**
   * The cost of the commit of {@code m}.
   *
   * @param encodedNanos {@link System#nanoTime()} when the body was ready (the PUT started)
   * @param putNanos {@link System#nanoTime()} when the PUT ended
   * @param ingestNanos how long the previous commit's local ingestion took, ns
   */
  CommitStats stats(long encodedNanos, long putNanos, long ingestNanos, ObjectBody body,
      Manifest m) {
    long sstBytes = size();
    CommitStats.ObjectParts parts = delta.map(DeltaFile::parts)
        .map(p -> new CommitStats.ObjectParts(p.data(), p.filter(), p.index(), p.tableMeta(),
            body.length() - sstBytes))
        .orElse(new CommitStats.ObjectParts(0, 0, 0, 0, body.length() - sstBytes));
    return new CommitStats(ms(builtNanos - startNanos), ms(putNanos - encodedNanos),
        ms(encodedNanos - builtNanos), ms(ingestNanos), sstBytes, body.length(),
        m.deltaChainLength(), m.versionsSinceBase(),
        TimeUnit.NANOSECONDS.toMicros(encodedNanos - startNanos), parts);
  }

  private static long ms(long nanos) {
    return TimeUnit.NANOSECONDS.toMillis(nanos);
  }
}
