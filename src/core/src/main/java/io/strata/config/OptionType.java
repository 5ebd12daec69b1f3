// SPDX-License-Identifier: Apache-2.0
package io.strata.config;

import io.strata.objectstore.S3Credentials;
import io.strata.objectstore.S3WriteSettings;
import java.net.URI;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Function;
import java.util.stream.Collectors;

/**
 * The type of a {@link ConfigOption}'s value and its bounds: how a raw string becomes the value,
 * how a value is written back as text (for the documented default), and what is allowed, in
 * words (the "allowed" column of README.md's configuration table). A bound such as "an integer
 * &gt;= 1" is given once, to the factory below, and reaches both the parser's error message and
 * the documentation.
 *
 * @param <T> the parsed type
 * @param allowed what is allowed, as Markdown on one line (no {@code |}), for the documentation
 * @param parser turns a raw string into a value; throws {@link IllegalArgumentException} whose
 *     message says what is allowed (the caller adds the key and the value)
 * @param formatter writes a value as text that {@code parser} reads back as an equal value
 */
public record OptionType<T>(String allowed, Function<String, T> parser,
    Function<T, String> formatter) {

  /**
   * Checks the parts.
   *
   * @throws NullPointerException if a part is null
   * @throws IllegalArgumentException if {@code allowed} is blank or would break a table row
   */
  public OptionType {
    Objects.requireNonNull(allowed, "allowed");
    Objects.requireNonNull(parser, "parser");
    Objects.requireNonNull(formatter, "formatter");
    if (allowed.isBlank() || allowed.contains("|") || allowed.contains("\n")) {
      throw new IllegalArgumentException("allowed must be one non-empty line without '|': "
          + allowed);
    }
  }

  /**
   * Parses a raw setting.
   *
   * @param raw the value as set, untrimmed
   * @return the value
   * @throws IllegalArgumentException saying what is allowed (without key or value)
   */
  public T parse(String raw) {
    return parser.apply(raw);
  }

  /**
   * Writes a value as text, the inverse of {@link #parse}.
   *
   * @param value a value of this type
   * @return text that {@link #parse} reads back as an equal value
   */
  public String format(T value) {
    return formatter.apply(value);
  }

  /**
   * An integer of at least {@code min}.
   *
   * @param min smallest allowed value (inclusive)
   * @return the type; its parser refuses other input with "expected an integer &gt;= min"
   */
  public static OptionType<Integer> intAtLeast(int min) {
    return new OptionType<>("integer >= " + min, Parsers.intAtLeast(min), String::valueOf);
  }

  /**
   * {@code true} or {@code false}, case-insensitive.
   *
   * @return the type; its parser refuses other input with "expected true or false"
   */
  public static OptionType<Boolean> bool() {
    return new OptionType<>("`true` or `false`", Parsers::bool, String::valueOf);
  }

  /**
   * A positive duration: a number with unit {@code ms}, {@code s}, {@code m}/{@code min},
   * {@code h} or {@code d}; a bare number means milliseconds.
   *
   * @return the type; its default is written with the largest unit that divides it exactly
   */
  public static OptionType<Duration> positiveDuration() {
    return new OptionType<>("duration above 0 (" + DURATION_UNITS + ")",
        Parsers::positiveDuration, Parsers::text);
  }

  /**
   * A {@link #positiveDuration} of at least {@code min}.
   *
   * @param min shortest allowed duration (inclusive), positive
   * @return the type; its parser refuses shorter durations with "expected a duration of at
   *     least &lt;min&gt;"
   */
  public static OptionType<Duration> durationAtLeast(Duration min) {
    return new OptionType<>("duration of at least `" + Parsers.text(min) + "` ("
        + DURATION_UNITS + ")", s -> Parsers.durationAtLeast(s, min), Parsers::text);
  }

  /**
   * A size in bytes, 0 or more: a number with unit {@code b}, {@code k}/{@code kb}, {@code
   * m}/{@code mb} or {@code g}/{@code gb} (binary multiples); a bare number means bytes.
   *
   * @return the type; its values are bytes, written with the largest unit that divides them
   */
  public static OptionType<Long> bytes() {
    return new OptionType<>("size, `0` or more (" + SIZE_UNITS + ")", Parsers::bytes,
        OptionType::sizeText);
  }

  /**
   * {@code auto} (case-insensitive; the empty value) or a size as {@link #bytes} of at least
   * {@code minBytes}.
   *
   * @param minBytes smallest allowed size, bytes (inclusive), a multiple of 1 MiB
   * @return the type; empty stands for {@code auto}
   */
  public static OptionType<Optional<Long>> sizeOrAuto(long minBytes) {
    return new OptionType<>("`auto`, or a size of at least `" + sizeText(minBytes) + "` ("
        + SIZE_UNITS + ")", Parsers.sizeOrAuto(minBytes),
        v -> v.map(OptionType::sizeText).orElse("auto"));
  }

  /**
   * An absolute {@code http://} or {@code https://} URI with a host and no user info.
   *
   * @return the type
   */
  public static OptionType<URI> endpoint() {
    return new OptionType<>("`http://` or `https://` URL with a host, no credentials",
        Parsers::endpoint, URI::toString);
  }

  /**
   * A region name of lower case letters, digits and dashes ({@link StrataConf#from} further
   * requires a known AWS region when no endpoint is set).
   *
   * @return the type
   */
  public static OptionType<String> region() {
    return new OptionType<>("region name such as `us-east-1`; an AWS region unless "
        + "`s3.endpoint` is set", Parsers::region, Function.identity());
  }

  /**
   * One of {@link S3WriteSettings#STORAGE_CLASSES}, case-insensitive, upper-cased.
   *
   * @return the type; {@link S3WriteSettings#ARCHIVE_CLASSES} are refused
   */
  public static OptionType<String> storageClass() {
    return new OptionType<>("one of " + S3WriteSettings.STORAGE_CLASSES.stream()
        .map(c -> "`" + c + "`").collect(Collectors.joining(", ")) + " (case-insensitive); not "
        + S3WriteSettings.ARCHIVE_CLASSES.stream().map(c -> "`" + c + "`")
            .collect(Collectors.joining(" or ")) + ": their objects cannot be read without a "
        + "restore",
        Parsers::storageClass, Function.identity());
  }

  /**
   * A server-side encryption mode, as {@link S3WriteSettings#parseServerSideEncryption}.
   *
   * @return the type; values are {@link S3WriteSettings#SSE_NONE}, {@link
   *     S3WriteSettings#SSE_S3} or {@link S3WriteSettings#SSE_KMS}
   */
  public static OptionType<String> serverSideEncryption() {
    return new OptionType<>("`" + S3WriteSettings.SSE_NONE + "`, `" + S3WriteSettings.SSE_S3
        + "` (or `SSE-S3`) or `" + S3WriteSettings.SSE_KMS + "` (or `SSE-KMS`), "
        + "case-insensitive", S3WriteSettings::parseServerSideEncryption, Function.identity());
  }

  /**
   * A non-blank file system path, trimmed.
   *
   * @return the type
   */
  public static OptionType<Path> path() {
    return new OptionType<>("path", s -> Paths.get(Parsers.nonBlank(s)), Path::toString);
  }

  /**
   * A credentials provider list ({@link CredentialProviderNames}).
   *
   * @return the type
   */
  public static OptionType<List<S3Credentials.Provider>> credentialProviders() {
    return new OptionType<>(CredentialProviderNames.allowed(), CredentialProviderNames::parse,
        CredentialProviderNames::format);
  }

  /**
   * A non-blank string, trimmed.
   *
   * @return the type
   */
  public static OptionType<String> nonBlank() {
    return new OptionType<>("non-empty string", Parsers::nonBlank, Function.identity());
  }

  private static final String DURATION_UNITS =
      "`ms`, `s`, `m`, `h` or `d`; a bare number is ms";
  private static final String SIZE_UNITS = "`b`, `k`, `m` or `g`; a bare number is bytes";

  /** A size with the largest binary unit (g, m, k) that divides it, else bare bytes. */
  static String sizeText(long bytes) {
    if (bytes != 0 && bytes % (1L << 30) == 0) {
      return (bytes >> 30) + "g";
    }
    if (bytes != 0 && bytes % (1L << 20) == 0) {
      return (bytes >> 20) + "m";
    }
    if (bytes != 0 && bytes % (1L << 10) == 0) {
      return (bytes >> 10) + "k";
    }
    return Long.toString(bytes);
  }
}
