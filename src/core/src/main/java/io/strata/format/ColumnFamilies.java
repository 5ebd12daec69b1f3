// SPDX-License-Identifier: Apache-2.0
package io.strata.format;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;

/**
 * The virtual column families of one version of a state store (besides {@code default}, which
 * always exists with id 0), and the greatest id ever assigned. Ids are never reused: a family
 * created after another was removed gets a new id, so keys of a removed family can never be
 * mistaken for keys of a new one. Immutable; {@link #with} and {@link #without} return copies.
 *
 * @param maxId the greatest id ever assigned in this store's lineage, 0 if none (&gt;= every
 *     family's id)
 * @param families the families that exist at this version, ordered by id
 */
public record ColumnFamilies(int maxId, List<ColumnFamily> families) {
  /** No family but {@code default}, and no id ever assigned. */
  public static final ColumnFamilies NONE = new ColumnFamilies(0, List.of());

  public ColumnFamilies {
    Objects.requireNonNull(families, "families");
    families = List.copyOf(families.stream().sorted(Comparator.comparingInt(ColumnFamily::id))
        .toList());
    if (maxId < 0 || maxId > ColumnFamily.MAX_ID) {
      throw new IllegalArgumentException("column family maxId must be 0.." + ColumnFamily.MAX_ID
          + ", was " + maxId);
    }
    Set<String> names = new HashSet<>();
    Set<Integer> ids = new HashSet<>();
    for (ColumnFamily f : families) {
      if (!names.add(f.name()) || !ids.add(f.id())) {
        throw new IllegalArgumentException("column family '" + f.name() + "' (id " + f.id()
            + ") is listed twice");
      }
      if (f.id() > maxId) {
        throw new IllegalArgumentException("column family '" + f.name() + "' has id " + f.id()
            + " above maxId " + maxId);
      }
    }
  }

  /** True if no family was ever created ({@link #NONE}). */
  public boolean isNone() {
    return maxId == 0 && families.isEmpty();
  }

  /** The family named {@code name}, if it exists. */
  public Optional<ColumnFamily> byName(String name) {
    for (ColumnFamily f : families) {
      if (f.name().equals(name)) {
        return Optional.of(f);
      }
    }
    return Optional.empty();
  }

  /**
   * A copy with a new family {@code name} under id {@code maxId + 1}.
   *
   * @throws IllegalArgumentException if {@code name} already exists or is invalid
   * @throws IllegalStateException if all {@link ColumnFamily#MAX_ID} ids were used
   */
  public ColumnFamilies with(String name, boolean internal) {
    if (byName(name).isPresent()) {
      throw new IllegalArgumentException("column family '" + name + "' already exists");
    }
    if (maxId >= ColumnFamily.MAX_ID) {
      throw new IllegalStateException("cannot create column family '" + name + "': all "
          + ColumnFamily.MAX_ID + " column family ids of this store were used");
    }
    List<ColumnFamily> l = new ArrayList<>(families);
    l.add(new ColumnFamily(name, maxId + 1, internal));
    return new ColumnFamilies(maxId + 1, l);
  }

  /** A copy without the family {@code name} (the same if absent); {@code maxId} is kept. */
  public ColumnFamilies without(String name) {
    List<ColumnFamily> l = new ArrayList<>(families);
    l.removeIf(f -> f.name().equals(name));
    return new ColumnFamilies(maxId, l);
  }
}
