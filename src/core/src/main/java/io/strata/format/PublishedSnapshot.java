// SPDX-License-Identifier: Apache-2.0
package io.strata.format;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * A published snapshot: a base snapshot that any later load whose lineage it lies on may restore
 * from, whichever instance uploaded it and whether or not a commit ever named it as its base
 * (docs/format.md, "Published snapshots"). Written once, create-only, as {@code
 * b/<version>-<tip>-<uuid>.bsm} ({@link StoreLayout#publishedSnapshot}) after every file it names
 * is durable.
 *
 * <p>Its <em>lineage tip</em> ({@link Tip}) says, by content, which committed state it holds: the
 * last delta of the source manifest (the manifest of {@code version} it was taken from), or, if
 * that manifest lists no delta, its base snapshot's identity (or the empty state). A delta is
 * named only by manifests built on the commit that wrote it (deltas are inherited from parent to
 * child, never copied across lineages), and a base snapshot of {@code (version, attempt)} holds
 * the state of that one commit. So a manifest {@code m} of version {@code v} holds the same state
 * at {@code version} as this snapshot if its own tip at {@code version} ({@link Tip#of}) equals
 * this one's: {@link #usableBy}.
 *
 * @param formatVersion {@link PublishedSnapshotCodec#FORMAT_VERSION}
 * @param storeId the store, {@code <operatorId>/<partitionId>/<storeName>}
 * @param version the committed version the snapshot holds, &gt;= 1
 * @param attempt the attempt id of that version's commit
 * @param sourceBase identity (version, attempt) of the source manifest's base snapshot, if any
 * @param sourceDeltas the source manifest's deltas (all &lt;= {@code version}), for diagnostics
 *     and to derive the tip
 * @param files the snapshot's files, each under its local name, as in {@link BaseSnapshot}
 * @param createdAtMillis the writer's clock, epoch ms (diagnostics only)
 */
public record PublishedSnapshot(int formatVersion, String storeId, long version, String attempt,
    Optional<Identity> sourceBase, List<Delta> sourceDeltas, List<BaseSnapshot.BaseFile> files,
    long createdAtMillis) {

  /**
   * The identity of a base snapshot: the commit whose state it holds.
   *
   * @param version the version
   * @param attempt the attempt id of its commit
   */
  public record Identity(long version, String attempt) {
    /** Checks the attempt id. */
    public Identity {
      if (!StoreLayout.isAttemptId(attempt)) {
        throw new IllegalArgumentException("invalid attempt id '" + attempt + "'");
      }
    }
  }

  /**
   * Which committed state a lineage holds at some version: exactly one of {@code delta} (the last
   * delta at or before that version), {@code base} (no delta after the base up to that version),
   * or neither (the empty state: no base and no delta).
   *
   * @param delta the last delta, or empty
   * @param base the base's identity when there is no such delta, or empty
   */
  public record Tip(Optional<Delta> delta, Optional<Identity> base) {
    /** Checks that at most one is present. */
    public Tip {
      Objects.requireNonNull(delta, "delta");
      Objects.requireNonNull(base, "base");
      if (delta.isPresent() && base.isPresent()) {
        throw new IllegalArgumentException("a tip is a delta or a base, not both");
      }
    }

    /**
     * The tip of manifest {@code m} at version {@code at}, if a snapshot of {@code at} could
     * replace part of {@code m}'s chain: empty unless {@code base version < at <= m.version()}.
     */
    public static Optional<Tip> of(Manifest m, long at) {
      long baseVersion = m.base().map(BaseSnapshot::version).orElse(0L);
      if (at <= baseVersion || at > m.version()) {
        return Optional.empty();
      }
      Delta last = null;
      for (Delta d : m.deltas()) {
        if (d.version() <= at) {
          last = d;
        }
      }
      return Optional.of(tip(m.base().map(b -> new Identity(b.version(), b.attempt())),
          last == null ? List.of() : List.of(last)));
    }

    /**
     * A stable 64-bit hash of the tip (XXHash64 of a canonical text), carried in the object's key
     * so one LIST finds the candidates; the content is compared before use.
     */
    public long hash() {
      String text;
      if (delta.isPresent()) {
        Delta d = delta.get();
        FileRef f = d.file();
        text = "delta:" + d.version() + ":" + d.attempt() + ":" + f.key() + ":" + f.offset() + ":"
            + f.length() + ":" + Checksums.hex(f.checksum());
      } else if (base.isPresent()) {
        text = "base:" + base.get().version() + ":" + base.get().attempt();
      } else {
        text = "empty";
      }
      return Checksums.xxhash64(text.getBytes(StandardCharsets.UTF_8));
    }
  }

  /**
   * A manifest's lineage tips at every version, compact enough to cache for every retained
   * manifest: {@link #hashAt} is {@link Tip#of}{@code (m, s).hash()}.
   *
   * @param version the manifest's version
   * @param baseVersion its base's version, 0 without one
   * @param baseTipHash the hash of the tip with no delta (its base's identity, or the empty state)
   * @param deltaVersions its deltas' versions, in order
   * @param deltaTipHashes the hash of the tip of each delta
   */
  public record TipIndex(long version, long baseVersion, long baseTipHash,
      List<Long> deltaVersions, List<Long> deltaTipHashes) {
    /** Copies the lists. */
    public TipIndex {
      deltaVersions = List.copyOf(deltaVersions);
      deltaTipHashes = List.copyOf(deltaTipHashes);
      if (deltaVersions.size() != deltaTipHashes.size()) {
        throw new IllegalArgumentException("one tip hash per delta");
      }
    }

    /** The tips of {@code m}. */
    public static TipIndex of(Manifest m) {
      List<Long> versions = new java.util.ArrayList<>();
      List<Long> hashes = new java.util.ArrayList<>();
      for (Delta d : m.deltas()) {
        versions.add(d.version());
        hashes.add(new Tip(Optional.of(d), Optional.empty()).hash());
      }
      Optional<Identity> base = m.base().map(b -> new Identity(b.version(), b.attempt()));
      return new TipIndex(m.version(), m.base().map(BaseSnapshot::version).orElse(0L),
          new Tip(Optional.empty(), base).hash(), versions, hashes);
    }

    /**
     * The hash of the manifest's tip at version {@code s}, or empty if a snapshot of {@code s}
     * cannot replace part of its chain ({@code s <= baseVersion} or {@code s > version}).
     */
    public java.util.OptionalLong hashAt(long s) {
      if (s <= baseVersion || s > version) {
        return java.util.OptionalLong.empty();
      }
      long h = baseTipHash;
      for (int i = 0; i < deltaVersions.size() && deltaVersions.get(i) <= s; i++) {
        h = deltaTipHashes.get(i);
      }
      return java.util.OptionalLong.of(h);
    }
  }

  /** Checks the fields (see the class comment). */
  public PublishedSnapshot {
    Objects.requireNonNull(storeId, "storeId");
    Objects.requireNonNull(sourceBase, "sourceBase");
    if (version < 1) {
      throw new IllegalArgumentException("version must be >= 1, was " + version);
    }
    if (!StoreLayout.isAttemptId(attempt)) {
      throw new IllegalArgumentException("invalid attempt id '" + attempt + "'");
    }
    sourceDeltas = List.copyOf(sourceDeltas);
    files = List.copyOf(files);
    long floor = sourceBase.map(Identity::version).orElse(0L);
    if (floor > version) {
      throw new IllegalArgumentException("source base version " + floor
          + " is newer than snapshot version " + version);
    }
    long previous = 0;
    for (Delta d : sourceDeltas) {
      if ((sourceBase.isPresent() && d.version() <= floor) || d.version() < previous
          || d.version() > version) {
        throw new IllegalArgumentException("delta of version " + d.version()
            + " out of order in the lineage of snapshot version " + version);
      }
      previous = d.version();
    }
    if (files.stream().noneMatch(f -> f.name().equals("CURRENT"))) {
      throw new IllegalArgumentException("a published snapshot must list a CURRENT file");
    }
    BaseSnapshot.requireUniqueNames("published snapshot", version, files);
  }

  /**
   * The published snapshot of base snapshot {@code snapshot}, taken from the database holding
   * the version {@code source} describes.
   *
   * @throws IllegalArgumentException if {@code snapshot} is not of {@code source}'s version and
   *     attempt
   */
  public static PublishedSnapshot of(Manifest source, BaseSnapshot snapshot, long nowMillis) {
    if (snapshot.version() != source.version() || !snapshot.attempt().equals(source.attempt())) {
      throw new IllegalArgumentException("snapshot of version " + snapshot.version()
          + " attempt " + snapshot.attempt() + " is not of the manifest of version "
          + source.version() + " attempt " + source.attempt());
    }
    return new PublishedSnapshot(PublishedSnapshotCodec.FORMAT_VERSION, source.storeId(),
        source.version(), source.attempt(),
        source.base().map(b -> new Identity(b.version(), b.attempt())), source.deltas(),
        snapshot.files(), nowMillis);
  }

  /**
   * The lineage tip a published snapshot taken from {@code source} (the manifest of the
   * version it holds) has: its {@link #tip()} once made by {@link #of}.
   */
  public static Tip tipOf(Manifest source) {
    return tip(source.base().map(b -> new Identity(b.version(), b.attempt())), source.deltas());
  }

  /** The lineage tip of the state this snapshot holds (see the class comment). */
  public Tip tip() {
    return tip(sourceBase, sourceDeltas);
  }

  private static Tip tip(Optional<Identity> base, List<Delta> deltas) {
    if (!deltas.isEmpty()) {
      return new Tip(Optional.of(deltas.get(deltas.size() - 1)), Optional.empty());
    }
    return new Tip(Optional.empty(), base);
  }

  /** The snapshot as a manifest's base: the same files, of {@code (version, attempt)}. */
  public BaseSnapshot snapshot() {
    return new BaseSnapshot(version, attempt, files);
  }

  /**
   * True if a load of the version {@code m} describes may restore this snapshot and replay only
   * {@code m}'s deltas after it: the same store, {@code m}'s base older than this snapshot, this
   * snapshot not newer than {@code m}, and {@code m}'s lineage tip at this snapshot's version
   * equal to this snapshot's (so a snapshot of a version a later query run re-committed with
   * other writes never matches).
   */
  public boolean usableBy(Manifest m) {
    return storeId.equals(m.storeId()) && Tip.of(m, version).map(tip()::equals).orElse(false);
  }

  /**
   * {@code m} as restored from this snapshot: the same version, attempt, keys and column
   * families, with this snapshot as base and only the deltas after it.
   *
   * @throws IllegalArgumentException if not {@link #usableBy}{@code (m)}
   */
  public Manifest rebase(Manifest m) {
    if (!usableBy(m)) {
      throw new IllegalArgumentException("published snapshot of version " + version
          + " is not on the lineage of the manifest of version " + m.version());
    }
    return m.rebasedOn(snapshot());
  }
}
