package io.strata.config;

import java.util.Objects;
import java.util.Optional;
import java.util.function.Function;

/**
 * One Strata setting: its key (relative to {@link StrataConf#PREFIX}), type, default and
 * description. Parsing and validation happen once, in {@link StrataConf#from}; a bad value fails
 * there with an {@link IllegalArgumentException} that names the full key, the value and what is
 * allowed.
 *
 * @param <T> the parsed type
 * @param key key relative to {@link StrataConf#PREFIX}, for example {@code s3.endpoint}
 * @param defaultText default as documented (shown in docs/configuration.md); empty when the
 *     option has no default
 * @param description what the option does, with its unit
 * @param secret true if the value must never be logged or echoed in an error message
 * @param parser turns the raw string into the value; throws {@link IllegalArgumentException}
 *     with a message that says what is allowed (the key and value are added by the caller)
 */
public record ConfigOption<T>(
    String key,
    Optional<String> defaultText,
    String description,
    boolean secret,
    Function<String, T> parser) {

  public ConfigOption {
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(defaultText, "defaultText");
    Objects.requireNonNull(description, "description");
    Objects.requireNonNull(parser, "parser");
  }

  /** The full Spark configuration key, {@code spark.sql.streaming.stateStore.strata.<key>}. */
  public String fullKey() {
    return StrataConf.PREFIX + key;
  }
}
