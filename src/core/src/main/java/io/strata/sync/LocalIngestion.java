// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import io.strata.engine.DeltaFile;
import io.strata.engine.LocalFiles;
import io.strata.engine.LocalStore;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.FutureTask;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The local half of a commit, prepared once the version object's PUT succeeded and run on the
 * ingest threads when the committer starts it (else by the store's next call that needs the local
 * database): ingests the commit's delta into the local database and clears the pending writes.
 * It owns the delta file: a file in the database's temporary directory is ingested as it is
 * (ingestion moves it into the database); one staged elsewhere ({@link DeltaStaging}, another
 * file system, where a hard link cannot go) is copied into that directory first. Either way
 * nothing of it is left behind.
 */
final class LocalIngestion {
  private static final Logger LOG = LoggerFactory.getLogger(LocalIngestion.class);

  private LocalIngestion() { }

  /**
   * Prepares the ingestion of {@code delta} (or, if empty, only the clearing of the pending writes)
   * into {@code l}, without starting it: {@link #start} hands it to the ingest threads, and
   * {@link #await} runs it on the caller's thread if it has not started by then.
   *
   * @param tmp the database's temporary directory, on its file system (created if missing)
   * @return the task, not started
   */
  static FutureTask<Done> prepare(LocalStore l, Optional<DeltaFile> delta, Path tmp) {
    return new FutureTask<>(() -> {
      long start = System.nanoTime();
      ingest(l, delta, tmp);
      // The stamps are taken here, right after the database changed, as a synchronous commit
      // took them: damage to an SST after this point is found by the next load.
      try {
        return new Done(System.nanoTime() - start, LocalIntegrity.stampsOf(l), null);
      } catch (IOException e) {
        return new Done(System.nanoTime() - start, null, e);
      }
    });
  }

  /**
   * Hands a prepared ingestion to {@code pool}. Starting it twice, or after it ran, does nothing
   * more ({@link FutureTask} runs once). Never throws: if the pool refuses it (shut down) or no
   * thread can be started for it ({@code OutOfMemoryError: unable to create native thread}), it
   * runs in {@link #await}.
   */
  static void start(ExecutorService pool, FutureTask<Done> ingestion) {
    if (ingestion.isDone()) {
      return;
    }
    try {
      pool.execute(ingestion);
    } catch (RuntimeException | OutOfMemoryError e) { // rejected, or no native thread left:
      // the commit is durable and the prepared ingestion still runs in await, so neither may
      // fail the committing task
      LOG.debug("the ingest threads refused a local ingestion; it runs when next needed", e);
    }
  }

  /**
   * A finished ingestion.
   *
   * @param nanos how long it took, ns
   * @param stamps the database's SST stamps right after it ({@link LocalIntegrity#stampsOf}),
   *     or null if they could not be listed ({@code stampFailure})
   */
  record Done(long nanos, Map<String, LocalFiles.Stamp> stamps, IOException stampFailure) { }

  private static void ingest(LocalStore l, Optional<DeltaFile> delta, Path tmp)
      throws IOException {
    {
      if (delta.isEmpty()) {
        l.commitPending(Optional.empty());
        return;
      }
      DeltaFile d = delta.get();
      Path local = d.path();
      try {
        if (d.bytes() != null) { // built in memory: the file is written only now, where it is
          // ingested (on the database's file system, so ingestion moves it)
          local = tmp.resolve(d.path().getFileName());
          Files.createDirectories(tmp);
          Files.write(local, d.bytes());
        } else if (!tmp.equals(d.path().getParent())) {
          local = tmp.resolve(d.path().getFileName());
          Files.copy(d.path(), local, StandardCopyOption.REPLACE_EXISTING);
          Files.delete(d.path());
        }
        l.commitPending(Optional.of(new DeltaFile(local, d.size(), d.checksum(), d.entries())));
      } finally {
        Files.deleteIfExists(d.path()); // gone already if ingestion moved it, or copied
        Files.deleteIfExists(local);
      }
    }
  }

  /**
   * Runs a prepared ingestion on the calling thread if it has not started yet, else waits for it,
   * even when interrupted (the database must not be closed under a running ingestion).
   *
   * @return what it did
   * @throws IOException the ingestion's failure (a {@link RuntimeException} is thrown as is)
   */
  static Done await(FutureTask<Done> ingestion) throws IOException {
    ingestion.run(); // nothing if it ran or runs on the pool already
    return Futures.awaitUninterruptibly(ingestion, Futures.rethrow("Local ingestion failed: "));
  }
}
