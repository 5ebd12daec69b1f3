// SPDX-License-Identifier: Apache-2.0
package io.strata.format;

import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * A base snapshot: the files of a RocksDB checkpoint taken right after version {@code version}
 * was committed. Restoring it means downloading every file under its local name into an empty
 * directory and opening that directory as a RocksDB database.
 *
 * @param version the committed version the checkpoint holds
 * @param attempt the attempt id of that version
 * @param files every file of the checkpoint (SSTs, the RocksDB MANIFEST, CURRENT, OPTIONS), each
 *     name once
 *
 * <p>The constructor throws {@link IllegalArgumentException} if the attempt id is invalid or two
 * files share a name (decoding turns it into a {@link ManifestFormatException}).
 */
public record BaseSnapshot(long version, String attempt, List<BaseFile> files) {
  public BaseSnapshot {
    Objects.requireNonNull(attempt, "attempt");
    if (!StoreLayout.isAttemptId(attempt)) {
      throw new IllegalArgumentException("invalid attempt id '" + attempt + "'");
    }
    files = List.copyOf(files);
    requireUniqueNames("base snapshot", version, files);
  }

  /**
   * Checks that no two of {@code files} share a name: a restore downloads each file under its
   * name into one directory, so a second file of the same name has nowhere to go, and either
   * copy could be the one RocksDB needs.
   *
   * @throws IllegalArgumentException naming {@code what}, its version and the repeated name
   */
  static void requireUniqueNames(String what, long version, List<BaseFile> files) {
    Set<String> names = new HashSet<>();
    for (BaseFile f : files) {
      if (!names.add(f.name())) {
        throw new IllegalArgumentException(what + " of version " + version + " names file '"
            + f.name() + "' twice");
      }
    }
  }

  /**
   * One file of a base snapshot.
   *
   * @param name the file's name in the RocksDB directory, e.g. {@code 000042.sst}, {@code
   *     MANIFEST-000005}, {@code CURRENT}
   * @param file where its bytes are
   */
  public record BaseFile(String name, FileRef file) {
    public BaseFile {
      Objects.requireNonNull(name, "name");
      Objects.requireNonNull(file, "file");
      if (name.isEmpty() || name.contains("/") || name.contains("\\") || name.startsWith(".")) {
        throw new IllegalArgumentException("invalid base file name: '" + name + "'");
      }
    }
  }
}
