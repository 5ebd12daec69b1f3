// SPDX-License-Identifier: Apache-2.0
package io.strata.tools;

import java.io.PrintStream;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A one-line progress bar on standard error, redrawn at most every 200 ms, only when the tool
 * runs on a terminal ({@link System#console()}) and not with {@code --json}; otherwise silent.
 */
final class Progress {
  private final PrintStream err;
  private final boolean on;
  private final long totalFiles;
  private final long totalBytes;
  private final AtomicLong files = new AtomicLong();
  private final AtomicLong bytes = new AtomicLong();
  private volatile long lastDraw;

  Progress(PrintStream err, boolean on, long totalFiles, long totalBytes) {
    this.err = err;
    this.on = on;
    this.totalFiles = totalFiles;
    this.totalBytes = totalBytes;
  }

  /** One more file of {@code n} bytes checked. */
  void done(long n) {
    files.incrementAndGet();
    bytes.addAndGet(n);
    long now = System.nanoTime();
    if (on && now - lastDraw > 200_000_000L) {
      lastDraw = now;
      draw();
    }
  }

  private synchronized void draw() {
    int width = 30;
    double f = totalBytes == 0 ? 1 : (double) bytes.get() / totalBytes;
    int full = (int) Math.min(width, Math.round(f * width));
    err.print("\r[" + "#".repeat(full) + ".".repeat(width - full) + "] " + files.get() + "/"
        + totalFiles + " files, " + Table.bytes(bytes.get()) + " of " + Table.bytes(totalBytes)
        + "   ");
    err.flush();
  }

  /** Clears the line. */
  void finish() {
    if (on) {
      draw();
      err.println();
    }
  }
}
