// SPDX-License-Identifier: Apache-2.0
package io.strata.objectstore;

import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Optional;

/**
 * Where the S3 client takes its credentials from: an ordered list of {@link Provider}s (tried
 * in turn, the first that yields credentials wins, as S3A's {@code
 * fs.s3a.aws.credentials.provider} list), and what the profile and assumed-role providers need.
 * The static keys themselves stay in {@link S3Settings}. Resolved by the config layer; {@link
 * S3ClientFactory} builds the SDK providers.
 *
 * <p>Profile files (the {@code profile} and {@code default} providers) are read through the
 * SDK's reloading supplier ({@code ProfileFileSupplier.reloadWhenModified} for {@code
 * profileFile}, else {@code ProfileFileSupplier.defaultSupplier()}): a rewritten credentials
 * file is picked up at the next request that needs credentials, without a restart.
 *
 * @param providers providers in the order tried; empty for Strata's default: the static keys
 *     when {@link S3Settings#accessKeyId()} is set, else {@link Provider#DEFAULT}
 * @param profileFile the credentials file the {@code profile} and {@code default} providers
 *     read; empty for the SDK's files ({@code AWS_SHARED_CREDENTIALS_FILE} or {@code
 *     ~/.aws/credentials}, and {@code ~/.aws/config})
 * @param profileName the profile to read; empty for the SDK's ({@code AWS_PROFILE}, else {@code
 *     default})
 * @param assumedRole the role {@link Provider#ASSUMED_ROLE} assumes; required by it
 */
public record S3Credentials(List<Provider> providers, Optional<Path> profileFile,
    Optional<String> profileName, Optional<AssumedRole> assumedRole) {

  /** Strata's default: the static keys if set, else the SDK's default chain. */
  public static final S3Credentials AUTO =
      new S3Credentials(List.of(), Optional.empty(), Optional.empty(), Optional.empty());

  /**
   * Checks the parts.
   *
   * @throws NullPointerException if a part is null
   * @throws IllegalArgumentException if {@link Provider#ASSUMED_ROLE} is listed without {@code
   *     assumedRole}
   */
  public S3Credentials {
    providers = List.copyOf(providers);
    Objects.requireNonNull(profileFile, "profileFile");
    Objects.requireNonNull(profileName, "profileName");
    Objects.requireNonNull(assumedRole, "assumedRole");
    if (providers.contains(Provider.ASSUMED_ROLE) && assumedRole.isEmpty()) {
      throw new IllegalArgumentException("the assumed-role credentials provider needs a role ARN");
    }
  }

  /** The providers, by name, for messages; never a key or token. */
  @Override
  public String toString() {
    return "S3Credentials[providers=" + (providers.isEmpty() ? "auto"
        : providers.stream().map(Provider::id).toList())
        + profileFile.map(p -> ", profileFile=" + p).orElse("")
        + profileName.map(p -> ", profile=" + p).orElse("")
        + assumedRole.map(r -> ", role=" + r.roleArn()).orElse("") + "]";
  }

  /**
   * A credentials provider, after the SDK's providers of the same name. {@link #id()} is the
   * name Strata's {@code s3.credentialsProvider} setting takes.
   */
  public enum Provider {
    /** The static access key id and secret key (and session token, if set). */
    STATIC,
    /** The static access key id, secret key and session token; all three required. */
    TEMPORARY,
    /** {@code AWS_ACCESS_KEY_ID}, {@code AWS_SECRET_ACCESS_KEY}, {@code AWS_SESSION_TOKEN}. */
    ENVIRONMENT,
    /** The {@code aws.accessKeyId}, {@code aws.secretAccessKey} system properties. */
    SYSTEM_PROPERTIES,
    /** A profile of the credentials and config files, reloaded when the file changes. */
    PROFILE,
    /** The ECS/EKS container credentials endpoint ({@code AWS_CONTAINER_CREDENTIALS_*}). */
    CONTAINER,
    /** The EC2 instance profile (IMDS). */
    INSTANCE_PROFILE,
    /** A web identity token file and role ({@code AWS_WEB_IDENTITY_TOKEN_FILE}, EKS IRSA). */
    WEB_IDENTITY,
    /**
     * STS AssumeRole of {@link S3Credentials#assumedRole()}, signed with the static keys if set,
     * else with the SDK's default chain; the session is refreshed before it expires.
     */
    ASSUMED_ROLE,
    /** The SDK's default chain (all of the above that need no settings, in the SDK's order). */
    DEFAULT,
    /** No credentials: unsigned requests, for public buckets. */
    ANONYMOUS;

    /** The setting's name for this provider: lower case with hyphens, e.g. {@code web-identity}. */
    public String id() {
      return name().toLowerCase(Locale.ROOT).replace('_', '-');
    }
  }

  /**
   * An IAM role to assume with STS.
   *
   * @param roleArn the role's ARN, {@code arn:aws:iam::<account>:role/<name>}
   * @param sessionName the role session name STS records (CloudTrail shows it)
   * @param sessionDuration how long each session lasts, 15 min to 12 h (STS's bounds; the role's
   *     maximum applies too)
   * @param stsEndpoint an STS endpoint override; empty for the region's STS endpoint
   */
  public record AssumedRole(String roleArn, String sessionName, Duration sessionDuration,
      Optional<URI> stsEndpoint) {
    /** Shortest session STS grants. */
    public static final Duration MIN_SESSION = Duration.ofMinutes(15);
    /** Longest session STS grants. */
    public static final Duration MAX_SESSION = Duration.ofHours(12);

    /**
     * Checks the parts.
     *
     * @throws NullPointerException if a part is null
     * @throws IllegalArgumentException if the duration is outside 15 min to 12 h
     */
    public AssumedRole {
      Objects.requireNonNull(roleArn, "roleArn");
      Objects.requireNonNull(sessionName, "sessionName");
      Objects.requireNonNull(sessionDuration, "sessionDuration");
      Objects.requireNonNull(stsEndpoint, "stsEndpoint");
      if (sessionDuration.compareTo(MIN_SESSION) < 0
          || sessionDuration.compareTo(MAX_SESSION) > 0) {
        throw new IllegalArgumentException("assumed role session duration must be 15m to 12h, was "
            + sessionDuration);
      }
    }
  }
}
