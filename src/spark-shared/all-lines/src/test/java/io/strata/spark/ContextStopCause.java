// SPDX-License-Identifier: Apache-2.0
package io.strata.spark;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.ArrayDeque;
import java.util.Deque;
import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.core.LogEvent;
import org.apache.logging.log4j.core.LoggerContext;
import org.apache.logging.log4j.core.appender.AbstractAppender;
import org.apache.logging.log4j.core.config.Property;

/**
 * Remembers the last ERRORs Spark logs in this JVM, so that a test whose shared SparkContext
 * Spark stopped on its own ({@code SparkContext.stopInNewThread}: an uncaught error in its
 * listener bus or context cleaner, or a failure of its DAG scheduler's event loop) can say why,
 * instead of only "Cannot call methods on a stopped SparkContext". One appender per JVM, on
 * Spark's log4j2 root logger, keeping the last {@value #KEPT} events.
 */
final class ContextStopCause {
  private static final int KEPT = 6;
  private static final Deque<String> ERRORS = new ArrayDeque<>();
  private static boolean installed;

  private ContextStopCause() { }

  /** Installs the appender once per JVM (best effort: another logging backend is left alone). */
  static synchronized void install() {
    if (installed) {
      return;
    }
    installed = true;
    if (!(LogManager.getContext(false) instanceof LoggerContext ctx)) {
      return;
    }
    AbstractAppender appender = new AbstractAppender("strata-it-errors", null, null, true,
        Property.EMPTY_ARRAY) {
      @Override
      public void append(LogEvent e) {
        if (!e.getLevel().isMoreSpecificThan(Level.ERROR)) {
          return;
        }
        StringWriter w = new StringWriter();
        w.append(e.getLoggerName()).append(" [").append(e.getThreadName()).append("]: ")
            .append(e.getMessage().getFormattedMessage());
        if (e.getThrown() != null) {
          w.append('\n');
          e.getThrown().printStackTrace(new PrintWriter(w));
        }
        synchronized (ERRORS) {
          ERRORS.addLast(w.toString().length() > 4000 ? w.toString().substring(0, 4000)
              : w.toString());
          while (ERRORS.size() > KEPT) {
            ERRORS.removeFirst();
          }
        }
      }
    };
    appender.start();
    ctx.getConfiguration().getRootLogger().addAppender(appender, Level.ERROR, null);
    ctx.updateLoggers();
  }

  /** The last ERRORs logged in this JVM, oldest first, or a note that there were none. */
  static String lastErrors() {
    synchronized (ERRORS) {
      return ERRORS.isEmpty() ? "(no ERROR was logged)" : String.join("\n---\n", ERRORS);
    }
  }

  /** True if {@code t} or a cause says a stopped SparkContext was used. */
  static boolean isStoppedContext(Throwable t) {
    for (Throwable c = t; c != null; c = c.getCause()) {
      if (c instanceof IllegalStateException && c.getMessage() != null
          && c.getMessage().contains("stopped SparkContext")) {
        return true;
      }
    }
    return false;
  }
}
