// SPDX-License-Identifier: Apache-2.0
package io.strata.config;

import io.strata.objectstore.S3Credentials.Provider;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * Reads a credentials provider list, {@code s3.credentialsProvider} or S3A's {@code
 * fs.s3a.aws.credentials.provider}: comma-separated (whitespace and newlines allowed, as S3A
 * allows), each entry either a {@link Provider#id()} such as {@code web-identity} or a class name
 * that S3A users put there, mapped to the provider that reads the same source. Strata does not
 * load provider classes: the SDK inside the runtime jar is relocated, so a user's class could not
 * implement it; an unknown name is refused with the names known.
 *
 * <p>The class names are read from the resource {@code credential-provider-classes.txt} beside
 * this class, never written as string constants: the runtime jars' shading rewrites every string
 * constant that looks like an AWS SDK class name to its relocated name, so a constant would stop
 * matching what users write (the resource's header says more).
 */
public final class CredentialProviderNames {
  /** The resource of class names, beside this class. */
  static final String CLASSES_RESOURCE = "credential-provider-classes.txt";
  /** Class names, S3A's and both AWS SDKs', mapped to the providers that read the same source. */
  static final Map<String, List<Provider>> CLASSES = classes();

  private CredentialProviderNames() { }

  private static Map<String, List<Provider>> classes() {
    Map<String, List<Provider>> m = new LinkedHashMap<>();
    for (String line : resourceLines(CLASSES_RESOURCE)) {
      String[] parts = line.split("\\s+");
      if (parts.length != 2) {
        throw new IllegalStateException(CLASSES_RESOURCE + ": expected '<class> <ids>': " + line);
      }
      List<Provider> providers = new ArrayList<>();
      for (String id : parts[1].split(",")) {
        providers.add(Arrays.stream(Provider.values()).filter(p -> p.id().equals(id)).findFirst()
            .orElseThrow(() -> new IllegalStateException(CLASSES_RESOURCE
                + ": unknown provider id '" + id + "' in: " + line)));
      }
      m.put(parts[0], List.copyOf(providers));
    }
    return m;
  }

  /**
   * The lines of a UTF-8 resource of this package, stripped, without blank lines and lines
   * starting with {@code #}.
   *
   * @throws IllegalStateException if the resource is missing or unreadable (a broken jar)
   */
  static List<String> resourceLines(String name) {
    try (InputStream in = CredentialProviderNames.class.getResourceAsStream(name)) {
      if (in == null) {
        throw new IllegalStateException("resource " + name + " missing beside "
            + CredentialProviderNames.class.getName());
      }
      return new String(in.readAllBytes(), StandardCharsets.UTF_8).lines().map(String::strip)
          .filter(l -> !l.isEmpty() && !l.startsWith("#")).toList();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read resource " + name, e);
    }
  }

  /**
   * Parses a provider list.
   *
   * @param raw comma-separated provider ids or mapped class names; blank entries are skipped
   * @return the providers in order, without repeats; never empty
   * @throws IllegalArgumentException naming the first unknown entry and the known ids, or if
   *     the list is empty
   */
  public static List<Provider> parse(String raw) {
    List<Provider> out = new ArrayList<>();
    for (String entry : raw.split(",")) {
      String name = entry.strip();
      if (name.isEmpty()) {
        continue;
      }
      List<Provider> mapped = CLASSES.get(name);
      if (mapped == null) {
        mapped = Arrays.stream(Provider.values())
            .filter(p -> p.id().equals(name.toLowerCase(Locale.ROOT)))
            .map(List::of).findFirst()
            .orElseThrow(() -> new IllegalArgumentException("unknown credentials provider '"
                + name + "': expected " + allowed() + " (Strata does not load provider "
                + "classes)"));
      }
      for (Provider p : mapped) {
        if (!out.contains(p)) {
          out.add(p);
        }
      }
    }
    if (out.isEmpty()) {
      throw new IllegalArgumentException("expected at least one credentials provider: "
          + allowed());
    }
    return List.copyOf(out);
  }

  /** Writes a list as {@link #parse} reads it back. */
  public static String format(List<Provider> providers) {
    return providers.stream().map(Provider::id).collect(Collectors.joining(","));
  }

  /** The allowed values in words, for messages and the configuration table. */
  static String allowed() {
    return "a comma-separated list of " + Arrays.stream(Provider.values())
        .map(p -> "`" + p.id() + "`").collect(Collectors.joining(", "))
        + ", or the S3A and AWS SDK class names for them (see docs/operations.md)";
  }
}
