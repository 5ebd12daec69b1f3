// SPDX-License-Identifier: Apache-2.0
package io.strata.objectstore;

import java.net.URI;
import java.util.Locale;
import java.util.Optional;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import software.amazon.awssdk.core.exception.SdkClientException;
import software.amazon.awssdk.regions.providers.AwsProfileRegionProvider;
import software.amazon.awssdk.regions.providers.AwsRegionProviderChain;
import software.amazon.awssdk.regions.providers.SystemSettingsRegionProvider;

/**
 * The signing region when none is configured, as Hadoop S3A chooses it since it stopped
 * requiring one: never us-east-1 for a regional AWS endpoint.
 *
 * <ol>
 *   <li>A configured region wins ({@code s3.region}, else S3A's {@code fs.s3a.endpoint.region}).
 *   <li>With an endpoint: the region in an AWS endpoint's host name ({@code
 *       s3.eu-west-1.amazonaws.com}, {@code s3-eu-west-1.amazonaws.com}, {@code
 *       s3.dualstack.eu-west-1.amazonaws.com}, {@code s3-fips.us-gov-west-1.amazonaws.com}, VPC
 *       endpoints {@code bucket.vpce-....s3.eu-west-1.vpce.amazonaws.com}, China's {@code
 *       .amazonaws.com.cn}); for any other host (an S3-compatible server, which accepts any
 *       signing region, or the global {@code s3.amazonaws.com}) {@value #DEFAULT}.
 *   <li>Without one (AWS itself): the SDK's region chain without the instance metadata service,
 *       that is the {@code aws.region} system property, the {@code AWS_REGION} environment
 *       variable and the region of the AWS profile ({@code AWS_PROFILE}, {@code ~/.aws/config});
 *       else {@value #DEFAULT}. The metadata service is left out because on a machine outside
 *       EC2 its lookup waits for a timeout in every JVM; the client reaches a bucket in any
 *       region anyway, since {@link S3ClientFactory} enables the SDK's cross-region bucket
 *       access for AWS (a bucket in another region costs one redirected request, once).
 * </ol>
 */
public final class S3Regions {
  /** The region used when nothing else names one. */
  public static final String DEFAULT = "us-east-1";

  /** An AWS S3 host name with a region in it; group 1 is the region. */
  private static final Pattern AWS_HOST = Pattern.compile(
      "(?:^|\\.)s3(?:[.-]fips)?(?:\\.dualstack)?[.-]([a-z]{2,4}(?:-gov|-iso[a-z]?)?-[a-z]+-\\d+)"
          + "(?:\\.vpce)?\\.amazonaws\\.com(?:\\.cn)?$");

  private S3Regions() { }

  /**
   * The signing region for these settings (see the class comment).
   *
   * @param configured the configured region, if any
   * @param endpoint the endpoint override, if any
   * @return a region id, never blank
   */
  public static String resolve(Optional<String> configured, Optional<URI> endpoint) {
    return resolve(configured, endpoint, S3Regions::fromSdkChain);
  }

  /** As {@link #resolve(Optional, Optional)}, with the SDK's region chain given (for tests). */
  static String resolve(Optional<String> configured, Optional<URI> endpoint,
      Supplier<Optional<String>> sdkChain) {
    if (configured.isPresent()) {
      return configured.get();
    }
    if (endpoint.isPresent()) {
      return fromEndpoint(endpoint.get()).orElse(DEFAULT);
    }
    return sdkChain.get().orElse(DEFAULT);
  }

  /**
   * The region in an AWS S3 endpoint's host name, if it has one.
   *
   * @param endpoint any endpoint URI
   * @return the region, empty for the global endpoint and for hosts that are not AWS S3's
   */
  public static Optional<String> fromEndpoint(URI endpoint) {
    String host = endpoint.getHost();
    if (host == null) {
      return Optional.empty();
    }
    Matcher m = AWS_HOST.matcher(host.toLowerCase(Locale.ROOT));
    return m.find() ? Optional.of(m.group(1)) : Optional.empty();
  }

  /** The SDK's region chain without the instance metadata service; empty if none is set. */
  static Optional<String> fromSdkChain() {
    try {
      return Optional.of(new AwsRegionProviderChain(new SystemSettingsRegionProvider(),
          new AwsProfileRegionProvider()).getRegion().id());
    } catch (SdkClientException e) {
      return Optional.empty(); // no provider in the chain names a region
    }
  }
}
