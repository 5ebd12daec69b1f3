/**
 * Strata's settings: typed options with keys, defaults and descriptions ({@link
 * io.strata.config.ConfigOption}), resolved and validated once into {@link
 * io.strata.config.StrataConf}. Imports nothing from Spark.
 */
package io.strata.config;
