// SPDX-License-Identifier: Apache-2.0
package io.strata.reporting;

import com.codahale.metrics.Gauge;
import com.codahale.metrics.MetricRegistry;
import io.strata.metrics.JvmRequests;
import io.strata.metrics.RequestCounter;
import java.util.function.Supplier;
import java.util.function.ToLongFunction;
import org.apache.spark.SparkEnv;
import org.apache.spark.metrics.MetricsSystem;
import org.apache.spark.metrics.source.Source;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Strata's S3 requests as a source of Spark's metrics system (issue 46), so Spark's own sinks
 * (JMX, the Prometheus servlet, Graphite, CSV, ...) export them: one source named {@value #NAME}
 * per JVM (driver and each executor), registered when the JVM's first Strata state store or
 * checkpoint file manager on S3 starts.
 *
 * <p>Gauges, each a count since the JVM started (HTTP attempts, SDK retries included): {@code
 * stateStore.requests.<kind>} and {@code checkpointFiles.requests.<kind>} for kind {@code put},
 * {@code get}, {@code head}, {@code list}, {@code delete}, {@code other} and {@code total};
 * {@code <half>.failedAttempts} (answered 5xx or not at all; retried or failed) and {@code
 * <half>.bytesSent} (request bodies). The state stores' half is what every store of the JVM
 * sent; the checkpoint files' half is Spark's own checkpoint files through Strata's checkpoint
 * file manager (on the driver). A sink turns the counts into rates.
 *
 * <p>Spark's {@code Source} trait and {@code MetricsSystem} are {@code private[spark]} in Scala
 * and public in bytecode; Spark's own plugins' metrics go through the same call.
 */
public final class StrataMetricsSource implements Source {
  /** The source's name, the second part of every metric's name after the instance's id. */
  public static final String NAME = "strata";
  private static final Logger LOG = LoggerFactory.getLogger(StrataMetricsSource.class);
  /**
   * The metrics system this JVM's source is registered with (a new SparkContext has a new one);
   * weak, so a stopped context's metrics system is not kept alive.
   */
  private static java.lang.ref.WeakReference<MetricsSystem> registeredWith =
      new java.lang.ref.WeakReference<>(null);

  private final MetricRegistry registry = new MetricRegistry();

  private StrataMetricsSource() {
    half("stateStore", JvmRequests::stateStores);
    half("checkpointFiles", JvmRequests::checkpointFiles);
  }

  private void half(String prefix, Supplier<RequestCounter.Counts> counts) {
    gauge(prefix + ".requests.put", counts, RequestCounter.Counts::puts);
    gauge(prefix + ".requests.get", counts, RequestCounter.Counts::gets);
    gauge(prefix + ".requests.head", counts, RequestCounter.Counts::heads);
    gauge(prefix + ".requests.list", counts, RequestCounter.Counts::lists);
    gauge(prefix + ".requests.delete", counts, RequestCounter.Counts::deletes);
    gauge(prefix + ".requests.other", counts, RequestCounter.Counts::others);
    gauge(prefix + ".requests.total", counts, RequestCounter.Counts::total);
    gauge(prefix + ".failedAttempts", counts, RequestCounter.Counts::failed);
    gauge(prefix + ".bytesSent", counts, RequestCounter.Counts::bytesSent);
  }

  private void gauge(String name, Supplier<RequestCounter.Counts> counts,
      ToLongFunction<RequestCounter.Counts> field) {
    registry.register(name, (Gauge<Long>) () -> field.applyAsLong(counts.get()));
  }

  @Override
  public String sourceName() {
    return NAME;
  }

  @Override
  public MetricRegistry metricRegistry() {
    return registry;
  }

  /**
   * Registers this JVM's source with the running SparkContext's metrics system, once per
   * metrics system; nothing without a SparkEnv (a unit test, the tool). Never fails the caller:
   * metrics are not worth a failed query.
   */
  public static synchronized void registerOnce() {
    try {
      SparkEnv env = SparkEnv.get();
      if (env == null || env.metricsSystem() == null
          || env.metricsSystem() == registeredWith.get()) {
        return;
      }
      env.metricsSystem().registerSource(new StrataMetricsSource());
      registeredWith = new java.lang.ref.WeakReference<>(env.metricsSystem());
    } catch (RuntimeException | LinkageError e) {
      LOG.warn("Cannot register Strata's metrics source with Spark's metrics system; its S3 "
          + "request counts are not exported", e);
    }
  }
}
