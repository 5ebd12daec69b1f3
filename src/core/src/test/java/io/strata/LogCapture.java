// SPDX-License-Identifier: Apache-2.0
package io.strata;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.core.LogEvent;
import org.apache.logging.log4j.core.LoggerContext;
import org.apache.logging.log4j.core.appender.AbstractAppender;
import org.apache.logging.log4j.core.config.Configurator;
import org.apache.logging.log4j.core.config.Property;

/**
 * Collects log events ("LEVEL logger: message") of every logger while open, with Strata's loggers
 * at INFO; a test helper for strata-core's tests.
 */
public final class LogCapture extends AbstractAppender implements AutoCloseable {
  /** The events so far, in order. */
  public final List<String> lines = new CopyOnWriteArrayList<>();
  private final Level strataLevel = LogManager.getLogger("io.strata").getLevel();

  /** Starts collecting. */
  public LogCapture() {
    super("config-capture-" + System.nanoTime(), null, null, true, Property.EMPTY_ARRAY);
    start();
    LoggerContext ctx = (LoggerContext) LogManager.getContext(false);
    ctx.getConfiguration().getRootLogger().addAppender(this, Level.ALL, null);
    Configurator.setLevel("io.strata", Level.INFO);
    ctx.updateLoggers();
  }

  @Override
  public void append(LogEvent event) {
    lines.add(event.getLevel() + " " + event.getLoggerName() + ": "
        + event.getMessage().getFormattedMessage());
  }

  @Override
  public void close() {
    LoggerContext ctx = (LoggerContext) LogManager.getContext(false);
    ctx.getConfiguration().getRootLogger().removeAppender(getName());
    Configurator.setLevel("io.strata", strataLevel);
    ctx.updateLoggers();
    stop();
  }
}
