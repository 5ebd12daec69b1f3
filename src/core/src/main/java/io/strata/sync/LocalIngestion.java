package io.strata.sync;

import io.strata.engine.DeltaFile;
import io.strata.engine.LocalStore;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;

/**
 * The local half of a commit, run while the version object's PUT is in flight: ingests a hard
 * link of the commit's delta (a copy where the file system has no hard links; ingestion moves
 * the file it is given, and the PUT, whose retries re-open the body, keeps reading the original)
 * and clears the pending writes.
 */
final class LocalIngestion {
  private LocalIngestion() { }

  /**
   * Starts the ingestion of {@code delta} (or, if empty, only the clearing of the pending writes)
   * into {@code l} on {@code pool}.
   *
   * @param tmp the directory for the hard link
   * @return the task; its result is the time it took, ns
   */
  static Future<Long> start(ExecutorService pool, LocalStore l, Optional<DeltaFile> delta,
      Path tmp) {
    return pool.submit(() -> {
      long start = System.nanoTime();
      if (delta.isEmpty()) {
        l.commitPending(Optional.empty());
        return System.nanoTime() - start;
      }
      DeltaFile d = delta.get();
      Path link = tmp.resolve(d.path().getFileName() + ".ingest");
      try {
        try {
          Files.createLink(link, d.path());
        } catch (UnsupportedOperationException | IOException e) {
          Files.copy(d.path(), link, StandardCopyOption.REPLACE_EXISTING);
        }
        l.commitPending(Optional.of(new DeltaFile(link, d.size(), d.checksum(), d.entries())));
      } finally {
        Files.deleteIfExists(link); // gone already if ingestion moved it
      }
      return System.nanoTime() - start;
    });
  }

  /**
   * Waits for an ingestion, even when interrupted (the database must not be closed under a
   * running ingestion).
   *
   * @return the time it took, ns
   * @throws IOException the ingestion's failure (a {@link RuntimeException} is thrown as is)
   */
  static long await(Future<Long> ingestion) throws IOException {
    return Futures.awaitUninterruptibly(ingestion, Futures.rethrow("Local ingestion failed: "));
  }
}
