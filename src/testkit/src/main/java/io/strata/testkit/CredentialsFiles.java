// SPDX-License-Identifier: Apache-2.0
package io.strata.testkit;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.FileTime;
import java.time.Instant;

/** AWS credentials files for the key-rotation tests. */
public final class CredentialsFiles {
  private CredentialsFiles() { }

  /**
   * Writes a credentials file with one profile, replacing the old one atomically (a temporary
   * file, then a rename), as an operator rotating keys would.
   *
   * @param mtime the file's modification time, set explicitly so that a rewrite is seen as a
   *     change even on a file system with coarse timestamps
   * @throws IOException if the file cannot be written
   */
  public static void write(Path file, String profile, String accessKey, String secretKey,
      Instant mtime) throws IOException {
    Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
    Files.writeString(tmp, "[" + profile + "]\naws_access_key_id = " + accessKey
        + "\naws_secret_access_key = " + secretKey + "\n", StandardCharsets.UTF_8);
    Files.setLastModifiedTime(tmp, FileTime.from(mtime));
    Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
  }
}
