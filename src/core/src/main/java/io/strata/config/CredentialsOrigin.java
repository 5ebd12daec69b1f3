// SPDX-License-Identifier: Apache-2.0
package io.strata.config;

import io.strata.objectstore.S3Credentials;
import io.strata.objectstore.S3Settings;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Which settings chose the S3 credentials, for messages (a 403 names it, {@link
 * S3Settings#credentialsOrigin()}), never a value: the key the access key id came from (Strata's
 * {@code s3.accessKeyId}, S3A's {@code fs.s3a.access.key} or its per-bucket key), the key that
 * listed the providers, or the AWS SDK's default chain.
 */
final class CredentialsOrigin {
  private CredentialsOrigin() { }

  /**
   * The description.
   *
   * @param staticKeys true if an access key id is set (by any key)
   * @param strataKey true if Strata's own {@code s3.accessKeyId} set it
   * @param providers the providers listed, if any
   * @param strataProviders true if Strata's own {@code s3.credentialsProvider} listed them
   * @param hadoop the S3A fallback entries read (to name a per-bucket key)
   */
  static String describe(boolean staticKeys, boolean strataKey,
      Optional<List<S3Credentials.Provider>> providers, boolean strataProviders,
      Map<String, String> hadoop) {
    String keys = "the static keys of " + (strataKey ? StrataConf.S3_ACCESS_KEY.fullKey()
        : S3aFallbacks.sourceKey(hadoop,
            StrataConf.S3_ACCESS_KEY.fallbackKey().orElseThrow()));
    if (providers.isPresent()) {
      String from = strataProviders ? StrataConf.S3_CREDENTIALS_PROVIDER.fullKey()
          : S3aFallbacks.sourceKey(hadoop,
              StrataConf.S3_CREDENTIALS_PROVIDER.fallbackKey().orElseThrow());
      return "the credentials providers " + providers.get().stream()
          .map(S3Credentials.Provider::id).toList() + " of " + from
          + (staticKeys ? ", with " + keys : "");
    }
    return staticKeys ? keys : S3Settings.DEFAULT_CHAIN;
  }
}
