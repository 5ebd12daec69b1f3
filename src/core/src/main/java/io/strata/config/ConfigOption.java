// SPDX-License-Identifier: Apache-2.0
package io.strata.config;

import java.util.Objects;
import java.util.Optional;

/**
 * One Strata setting, everything about it in one place: its key (relative to {@link
 * StrataConf#PREFIX}), its type with bounds, its typed default, the Hadoop S3A key it falls back
 * to, and its description. {@link StrataConf#from} parses with it and README.md's configuration
 * table is generated from it, so a default can never drift from its documentation. Build one
 * with {@link #key}:
 *
 * <pre>{@code
 * ConfigOption<Integer> SNAPSHOT_INTERVAL = ConfigOption.key("snapshotInterval")
 *     .type(OptionType.intAtLeast(1))
 *     .defaultValue(10)
 *     .description("Versions committed after the last base snapshot before ...");
 * }</pre>
 *
 * <p>A bad value fails in {@link StrataConf#from} with an {@link IllegalArgumentException} that
 * names the full key, the value (unless secret) and what is allowed.
 *
 * @param <T> the parsed type
 * @param key key relative to {@link StrataConf#PREFIX}, for example {@code s3.endpoint}
 * @param type how the value is parsed and written back, and what is allowed
 * @param defaultValue the value when the option is set neither under its key nor under its
 *     fallback key; empty when there is none (then {@code whenUnset} says what happens)
 * @param whenUnset what an unset option without a default means, as Markdown (for example "a
 *     directory inside Spark's local dirs"); empty when there is a default
 * @param fallbackKey the Hadoop S3A key read when the option is not set (see {@link
 *     S3aFallbacks}), for example {@code fs.s3a.endpoint}
 * @param secret true if the value must never be logged or echoed in an error message
 * @param description what the option does, as Markdown on one line (the README's "meaning")
 */
public record ConfigOption<T>(
    String key,
    OptionType<T> type,
    Optional<T> defaultValue,
    String whenUnset,
    Optional<String> fallbackKey,
    boolean secret,
    String description) {

  /**
   * Checks the definition.
   *
   * @throws NullPointerException if a part is null
   * @throws IllegalArgumentException if the key is blank, not exactly one of {@code
   *     defaultValue} and {@code whenUnset} is given, a text would break a table row, or the
   *     default does not read back from its own text
   */
  public ConfigOption {
    Objects.requireNonNull(key, "key");
    Objects.requireNonNull(type, "type");
    Objects.requireNonNull(defaultValue, "defaultValue");
    Objects.requireNonNull(whenUnset, "whenUnset");
    Objects.requireNonNull(fallbackKey, "fallbackKey");
    Objects.requireNonNull(description, "description");
    if (key.isBlank() || key.startsWith(StrataConf.PREFIX)) {
      throw new IllegalArgumentException("key must be relative to " + StrataConf.PREFIX + ": "
          + key);
    }
    if (defaultValue.isPresent() == !whenUnset.isEmpty()) {
      throw new IllegalArgumentException(key + ": give a default value or say what unset "
          + "means, not both or neither");
    }
    for (String text : new String[] {whenUnset, description}) {
      if (text.contains("|") || text.contains("\n")) {
        throw new IllegalArgumentException(key + ": text must be one line without '|': "
            + text);
      }
    }
    if (description.isBlank()) {
      throw new IllegalArgumentException(key + ": description is empty");
    }
    defaultValue.ifPresent(d -> {
      String text = type.format(d);
      T back;
      try {
        back = type.parse(text);
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException(key + ": default " + d + " does not read back from "
            + "its text '" + text + "': " + e.getMessage(), e);
      }
      if (!back.equals(d)) {
        throw new IllegalArgumentException(key + ": default " + d + " does not read back from "
            + "its text '" + text + "' (reads as " + back + ")");
      }
    });
  }

  /**
   * Starts the definition of an option.
   *
   * @param key key relative to {@link StrataConf#PREFIX}, for example {@code s3.endpoint}
   * @return a builder that next takes the type
   */
  public static Builder key(String key) {
    return new Builder(key);
  }

  /** The full Spark configuration key, {@code spark.sql.streaming.stateStore.strata.<key>}. */
  public String fullKey() {
    return StrataConf.PREFIX + key;
  }

  /**
   * The default as documented, Markdown: the default's text in backticks (for example {@code
   * `10`}) or {@link #whenUnset}, followed by {@code (or `<fallback key>`)} when the option
   * falls back to a Hadoop S3A key.
   *
   * @return one line of Markdown
   */
  public String defaultText() {
    String text = defaultValue.map(d -> "`" + type.format(d) + "`").orElse(whenUnset);
    return text + fallbackKey.map(k -> " (or `" + k + "`)").orElse("");
  }

  /** First step of {@link ConfigOption#key}: the type. */
  public static final class Builder {
    private final String key;

    private Builder(String key) {
      this.key = Objects.requireNonNull(key, "key");
    }

    /**
     * Sets the type, with its bounds.
     *
     * @param type for example {@link OptionType#intAtLeast}
     * @param <T> the parsed type
     * @return a builder for the rest
     */
    public <T> TypedBuilder<T> type(OptionType<T> type) {
      return new TypedBuilder<>(key, Objects.requireNonNull(type, "type"));
    }
  }

  /**
   * The rest of {@link ConfigOption#key}: a default (or what unset means), optionally a fallback
   * key and secrecy, and last the description, which builds the option.
   *
   * @param <T> the parsed type
   */
  public static final class TypedBuilder<T> {
    private final String key;
    private final OptionType<T> type;
    private Optional<T> defaultValue = Optional.empty();
    private String whenUnset = "";
    private Optional<String> fallbackKey = Optional.empty();
    private boolean secret;

    private TypedBuilder(String key, OptionType<T> type) {
      this.key = key;
      this.type = type;
    }

    /**
     * The typed default, used when the option (and its fallback key) is not set.
     *
     * @param value non-null; must read back from {@code type.format(value)}
     * @return this builder
     */
    public TypedBuilder<T> defaultValue(T value) {
      this.defaultValue = Optional.of(value);
      return this;
    }

    /**
     * Declares that the option has no default and says what leaving it unset means.
     *
     * @param whenUnset Markdown on one line, for example "AWS default credential chain"
     * @return this builder
     */
    public TypedBuilder<T> noDefaultValue(String whenUnset) {
      this.whenUnset = Objects.requireNonNull(whenUnset, "whenUnset");
      return this;
    }

    /**
     * The Hadoop S3A key read when the option is not set.
     *
     * @param hadoopKey for example {@code fs.s3a.endpoint}
     * @return this builder
     */
    public TypedBuilder<T> fallbackKey(String hadoopKey) {
      this.fallbackKey = Optional.of(hadoopKey);
      return this;
    }

    /**
     * Marks the value as secret: never logged, never echoed in an error message.
     *
     * @return this builder
     */
    public TypedBuilder<T> secret() {
      this.secret = true;
      return this;
    }

    /**
     * Sets the description and builds the option.
     *
     * @param description Markdown on one line: what the option does, with its unit
     * @return the option
     * @throws IllegalArgumentException as {@link ConfigOption}'s constructor
     */
    public ConfigOption<T> description(String description) {
      return new ConfigOption<>(key, type, defaultValue, whenUnset, fallbackKey, secret,
          description);
    }
  }
}
