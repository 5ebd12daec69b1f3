// SPDX-License-Identifier: Apache-2.0
package io.strata.cluster;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.FileTime;
import java.time.Instant;
import java.util.Random;

/**
 * The fault campaign's input ({@link FaultCampaignIT}): JSON-lines files of {@link
 * CampaignDriver#SCHEMA}, file {@code n} a pure function of {@code n} (so a re-run and the oracle
 * read the same events), each written beside the directory and moved in whole, with modification
 * times one second apart in file order (a file source takes the oldest unseen file first, so
 * batches read the files in order; which files each batch read is in the job's checkpoint,
 * {@link CampaignBatches}).
 *
 * <p>File {@code n}: {@value #NEW_PER_FILE} new ids, {@value #RESENT_PER_FILE} ids of earlier
 * files again (duplicates for the deduplication), keys {@code k0} to {@code k63}, event times
 * {@code n × 5 s} plus up to 5 s, and one in twenty events 40 s late (behind the watermark
 * once it passed, so dropped by the windowed count).
 */
final class CampaignInput {
  static final int NEW_PER_FILE = 300;
  static final int RESENT_PER_FILE = 100;
  static final int KEYS = 64;
  private static final long EPOCH_MILLIS = Instant.parse("2026-01-01T00:00:00Z").toEpochMilli();

  private final Path dir;
  private final Path staging;
  private long lastModified;
  private volatile int files;

  /** @param dir the directory the stream reads; created, must be new */
  CampaignInput(Path dir) throws IOException {
    this.dir = Files.createDirectories(dir);
    this.staging = Files.createDirectories(dir.resolveSibling(dir.getFileName() + "-staging"));
  }

  /** The directory the stream reads. */
  Path dir() {
    return dir;
  }

  /** How many files are in place. */
  int files() {
    return files;
  }

  /** Where file number {@code n} is (once {@link #files()} is past {@code n}). */
  Path file(int n) {
    return dir.resolve(String.format("events-%06d.json", n));
  }

  /** Writes file number {@link #files()} and moves it into place. */
  synchronized void writeNext() throws IOException {
    int n = files;
    Random r = new Random(n * 7919L + 17);
    StringBuilder sb = new StringBuilder();
    long first = (long) n * NEW_PER_FILE;
    for (int j = 0; j < NEW_PER_FILE + RESENT_PER_FILE; j++) {
      long id = j < NEW_PER_FILE ? first + j : (n == 0 ? r.nextInt(NEW_PER_FILE)
          : (long) (r.nextDouble() * first));
      long ts = EPOCH_MILLIS + n * 5_000L + r.nextInt(5_000);
      if (r.nextInt(20) == 0) {
        ts -= 40_000;
      }
      sb.append("{\"id\":\"i").append(id).append("\",\"key\":\"k").append(id % KEYS)
          .append("\",\"ts\":\"").append(Instant.ofEpochMilli(ts)).append("\"}\n");
    }
    Path target = file(n);
    Path tmp = staging.resolve(target.getFileName());
    Files.writeString(tmp, sb, StandardCharsets.UTF_8);
    lastModified = Math.max(System.currentTimeMillis(), lastModified + 1_000);
    Files.setLastModifiedTime(tmp, FileTime.fromMillis(lastModified));
    Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE);
    files = n + 1;
  }
}
