// SPDX-License-Identifier: Apache-2.0
package io.strata.config;

import io.strata.objectstore.S3Credentials.Provider;
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
 */
public final class CredentialProviderNames {
  /** Class names, S3A's and both AWS SDKs', mapped to the providers that read the same source. */
  static final Map<String, List<Provider>> CLASSES = classes();

  private CredentialProviderNames() { }

  private static Map<String, List<Provider>> classes() {
    Map<String, List<Provider>> m = new LinkedHashMap<>();
    String v2 = "software.amazon.awssdk.auth.credentials.";
    String v1 = "com.amazonaws.auth.";
    String s3a = "org.apache.hadoop.fs.s3a.";
    m.put(s3a + "SimpleAWSCredentialsProvider", List.of(Provider.STATIC));
    m.put(s3a + "TemporaryAWSCredentialsProvider", List.of(Provider.TEMPORARY));
    m.put(s3a + "AnonymousAWSCredentialsProvider", List.of(Provider.ANONYMOUS));
    m.put(v2 + "AnonymousCredentialsProvider", List.of(Provider.ANONYMOUS));
    m.put(v1 + "AnonymousAWSCredentials", List.of(Provider.ANONYMOUS));
    m.put(v1 + "EnvironmentVariableCredentialsProvider", List.of(Provider.ENVIRONMENT));
    m.put(v2 + "EnvironmentVariableCredentialsProvider", List.of(Provider.ENVIRONMENT));
    m.put(v1 + "SystemPropertiesCredentialsProvider", List.of(Provider.SYSTEM_PROPERTIES));
    m.put(v2 + "SystemPropertyCredentialsProvider", List.of(Provider.SYSTEM_PROPERTIES));
    m.put(v1 + "profile.ProfileCredentialsProvider", List.of(Provider.PROFILE));
    m.put(v2 + "ProfileCredentialsProvider", List.of(Provider.PROFILE));
    // Hadoop 3.4.2's and later, which reads fs.s3a.auth.profile.name and .file (s3.profile's and
    // s3.credentialsFile's fallbacks).
    m.put(s3a + "auth.ProfileAWSCredentialsProvider", List.of(Provider.PROFILE));
    // S3A's instance provider tries the container endpoint, then the EC2 instance profile.
    m.put(s3a + "auth.IAMInstanceCredentialsProvider",
        List.of(Provider.CONTAINER, Provider.INSTANCE_PROFILE));
    // S3A's instance provider: SDK v1's name is mapped to it by S3A's provider factory, and
    // SharedInstanceCredentialProvider is a subclass of it.
    m.put(s3a + "SharedInstanceCredentialProvider",
        List.of(Provider.CONTAINER, Provider.INSTANCE_PROFILE));
    m.put(v1 + "InstanceProfileCredentialsProvider",
        List.of(Provider.CONTAINER, Provider.INSTANCE_PROFILE));
    m.put(v2 + "InstanceProfileCredentialsProvider", List.of(Provider.INSTANCE_PROFILE));
    m.put(v1 + "EC2ContainerCredentialsProviderWrapper",
        List.of(Provider.CONTAINER, Provider.INSTANCE_PROFILE));
    m.put(v1 + "ContainerCredentialsProvider", List.of(Provider.CONTAINER));
    m.put(v2 + "ContainerCredentialsProvider", List.of(Provider.CONTAINER));
    m.put(v1 + "WebIdentityTokenCredentialsProvider", List.of(Provider.WEB_IDENTITY));
    m.put(v2 + "WebIdentityTokenFileCredentialsProvider", List.of(Provider.WEB_IDENTITY));
    m.put(s3a + "auth.AssumedRoleCredentialProvider", List.of(Provider.ASSUMED_ROLE));
    m.put(v1 + "DefaultAWSCredentialsProviderChain", List.of(Provider.DEFAULT));
    m.put(v2 + "DefaultCredentialsProvider", List.of(Provider.DEFAULT));
    return m;
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
