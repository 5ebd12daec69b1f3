// SPDX-License-Identifier: Apache-2.0
package io.strata.sync;

import io.strata.objectstore.ObjectBody;
import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Named crash points for the crash tests, placed at the steps of a commit, a spill, a base
 * snapshot upload and a garbage-collection round. <b>Inert in production</b>: they act only when
 * the JVM was started with the system property {@value #PROPERTY}{@code =<name>[@<n>]} (a test
 * setting; no Strata or Spark setting enables them). Then the {@code n}-th time (default: the
 * first) the code passes the point {@code <name>} in this JVM, it prints one line to standard
 * error and halts the JVM at once with {@link Runtime#halt} exit code 137: no shutdown hooks,
 * no {@code finally} blocks, no flushes; what SIGKILL does, at a precise step.
 *
 * <p>Cost when not enabled: the property is read once when this class initializes; every point
 * then compares a {@code static final} field with null, which the JIT folds away, and {@link
 * #during} returns its argument unchanged.
 */
final class FaultPoints {
  /** The system property naming the armed point: {@code <name>} or {@code <name>@<n>}. */
  static final String PROPERTY = "strata.test.faultPoint";

  /** While a spill delta's bytes are being sent (halfway through the body). */
  static final String SPILL_UPLOAD = "spill.upload";
  /** After the version object is built, just before its PUT is sent. */
  static final String COMMIT_BEFORE_PUT = "commit.beforePut";
  /** While the version object's PUT sends its body (halfway through). */
  static final String COMMIT_DURING_PUT = "commit.duringPut";
  /** After the version object's PUT succeeded, before the local ingest. */
  static final String COMMIT_AFTER_PUT = "commit.afterPut";
  /** While a base snapshot's pack (or one of its SSTs) is being sent (halfway through). */
  static final String SNAPSHOT_UPLOAD = "snapshot.upload";
  /** In a garbage-collection round with garbage, just before its DeleteObjects requests. */
  static final String GC_BEFORE_DELETE = "gc.beforeDelete";
  /** In a garbage-collection round, right after its DeleteObjects requests succeeded. */
  static final String GC_AFTER_DELETE = "gc.afterDelete";

  /** Armed point name, or null (production). */
  private static final String ARMED;
  /** Which pass of the armed point halts (1-based). */
  private static final int ARMED_PASS;
  private static final AtomicInteger PASSES = new AtomicInteger();

  static {
    String spec = System.getProperty(PROPERTY);
    if (spec == null || spec.isBlank()) {
      ARMED = null;
      ARMED_PASS = 0;
    } else {
      int at = spec.indexOf('@');
      ARMED = (at < 0 ? spec : spec.substring(0, at)).trim();
      ARMED_PASS = at < 0 ? 1 : Integer.parseInt(spec.substring(at + 1).trim());
    }
  }

  private FaultPoints() { }

  /** Passes the point {@code name}: halts the JVM if it is the armed pass, else nothing. */
  static void pass(String name) {
    if (ARMED != null && ARMED.equals(name) && PASSES.incrementAndGet() == ARMED_PASS) {
      halt(name);
    }
  }

  /**
   * Passes the point {@code name} for an upload of {@code body}: if it is the armed pass, returns
   * a body whose stream halts the JVM once half of its bytes were read (by the HTTP client,
   * while sending); otherwise returns {@code body} itself.
   */
  static ObjectBody during(String name, ObjectBody body) {
    if (ARMED == null || !ARMED.equals(name) || PASSES.incrementAndGet() != ARMED_PASS) {
      return body;
    }
    long haltAt = body.length() / 2;
    return new ObjectBody(body.length(), () -> new HaltingStream(body.open(), haltAt, name));
  }

  private static void halt(String name) {
    System.err.println("strata fault point " + name + " reached: halting the JVM");
    System.err.flush();
    Runtime.getRuntime().halt(137);
  }

  /** Halts the JVM when the byte at {@code haltAt} is about to be read. */
  private static final class HaltingStream extends FilterInputStream {
    private final long haltAt;
    private final String name;
    private long read;

    HaltingStream(InputStream in, long haltAt, String name) {
      super(in);
      this.haltAt = haltAt;
      this.name = name;
    }

    @Override
    public int read() throws IOException {
      check(1);
      int b = super.read();
      read += b < 0 ? 0 : 1;
      return b;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
      int allowed = (int) Math.max(1, Math.min(len, haltAt - read));
      check(allowed);
      int n = super.read(b, off, allowed);
      read += Math.max(n, 0);
      return n;
    }

    private void check(int len) {
      if (read >= haltAt && len > 0) {
        halt(name);
      }
    }
  }
}
