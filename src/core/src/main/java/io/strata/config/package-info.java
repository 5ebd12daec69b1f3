// SPDX-License-Identifier: Apache-2.0
/**
 * Strata's settings: each option defined once as a {@link io.strata.config.ConfigOption} (key,
 * {@link io.strata.config.OptionType} with bounds, typed default, S3A fallback key, description),
 * resolved and validated once into {@link io.strata.config.StrataConf}. README.md's
 * configuration table is generated from the same definitions. Imports nothing from Spark.
 */
package io.strata.config;
