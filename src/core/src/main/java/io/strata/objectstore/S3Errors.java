// SPDX-License-Identifier: Apache-2.0
package io.strata.objectstore;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Set;
import software.amazon.awssdk.awscore.exception.AwsServiceException;
import software.amazon.awssdk.core.exception.AbortedException;
import software.amazon.awssdk.core.exception.ApiCallAttemptTimeoutException;
import software.amazon.awssdk.core.exception.ApiCallTimeoutException;
import software.amazon.awssdk.core.exception.SdkException;
import software.amazon.awssdk.core.exception.SdkServiceException;

/**
 * Turns an SDK failure into an {@link ObjectStoreException} where it is thrown (after Trino's
 * {@code S3Exceptions}). The SDK has already spent its retries when these run.
 *
 * <ul>
 *   <li>404 NoSuchKey (or a 404 without a code, as HEAD gets) → {@link ObjectNotFoundException};
 *   <li>404 NoSuchBucket, 403, 400 and other 4xx → not retryable;
 *   <li>501 NotImplemented (an unsupported header or operation) → not retryable;
 *   <li>other 5xx, 429, 409 (a concurrent conditional write), throttling codes (503 SlowDown),
 *       400 RequestTimeout, SDK timeouts and I/O errors (resets) → retryable;
 *   <li>an endpoint that cannot be reached at all (refused, unresolvable, TLS failure; see
 *       {@link FailFastHttpClient}) → not retryable, naming where the endpoint is set.
 * </ul>
 *
 * <p>Messages read "Cannot &lt;action&gt; s3://bucket/key at &lt;endpoint&gt;: &lt;reason&gt;"
 * and use the S3 error code and message, never the request's headers or credentials. A
 * transient failure's reason starts with what it means for the user once the SDK's retries are
 * spent: "S3 is throttling requests" (503 SlowDown, 429, throttling codes), "S3 is unavailable"
 * (other 5xx, timeouts) or "S3 is unreachable or unavailable" (refused or reset connections).
 */
final class S3Errors {
  private static final Set<String> RETRYABLE_CODES = Set.of(
      "SlowDown", "Throttling", "ThrottlingException", "RequestThrottled", "TooManyRequests",
      "InternalError", "ServiceUnavailable", "RequestTimeout", "RequestTimeoutException",
      "ConditionalRequestConflict", "OperationAborted");

  /** Where the endpoint is set, for messages. */
  static final String ENDPOINT_SETTING = "the endpoint: spark.sql.streaming.stateStore.strata."
      + "s3.endpoint, else fs.s3a.endpoint (AWS S3 when neither is set; the strata tool's "
      + "--endpoint)";

  /** Strata's static-key settings, for a message saying no credentials were found. */
  static final String ACCESS_KEYS_SETTING = "spark.sql.streaming.stateStore.strata."
      + "s3.accessKeyId and s3.secretAccessKey (or fs.s3a.access.key and fs.s3a.secret.key; the "
      + "strata tool's --access-key and --secret-key)";
  /** Strata's providers setting, for the same message. */
  static final String CREDENTIALS_PROVIDER_SETTING = "spark.sql.streaming.stateStore.strata."
      + "s3.credentialsProvider (or fs.s3a.aws.credentials.provider)";

  private S3Errors() { }

  /**
   * The gist of the SDK's "no credentials" message, without the list of every provider and its
   * own failure (about 1 KB).
   */
  private static String firstLine(String sdkMessage) {
    int cut = sdkMessage.indexOf(" chain");
    if (sdkMessage.contains("providers in the chain") && cut > 0) {
      return sdkMessage.substring(0, cut + " chain".length());
    }
    int nl = sdkMessage.indexOf('\n');
    String line = nl < 0 ? sdkMessage : sdkMessage.substring(0, nl);
    return line.length() <= 160 ? line : line.substring(0, 160) + "...";
  }

  /**
   * A hint when the host that did not resolve is {@code <bucket>.<endpoint host>}: the SDK
   * addressed the bucket virtual-hosted style, which most S3-compatible servers do not serve.
   */
  private static String pathStyleHint(String location, Throwable unreachable) {
    java.net.UnknownHostException u = find(unreachable, java.net.UnknownHostException.class);
    if (u == null || u.getMessage() == null || !location.startsWith("s3://")) {
      return "";
    }
    String rest = location.substring("s3://".length());
    String bucket = rest.contains("/") ? rest.substring(0, rest.indexOf('/')) : rest;
    if (bucket.isEmpty() || !u.getMessage().startsWith(bucket + ".")) {
      return "";
    }
    return "; the bucket was addressed virtual-hosted style (" + u.getMessage() + "), which "
        + "most S3-compatible servers do not serve: set spark.sql.streaming.stateStore.strata."
        + "s3.pathStyleAccess=true (or fs.s3a.path.style.access=true)";
  }

  /**
   * Classifies {@code e}.
   *
   * @param action verb for the message, for example "read" or "create"
   * @param location {@code s3://bucket/key} (or {@code s3://bucket/prefix})
   * @param endpoint see {@link S3ClientFactory#describeEndpoint}
   */
  static ObjectStoreException classify(
      String action, String location, String endpoint, SdkException e) {
    return classify(action, location, endpoint, "", e);
  }

  /**
   * {@link #classify(String, String, String, SdkException)} naming where the credentials came
   * from in a 403 or a failure to find any ({@code credentialsOrigin}, {@link
   * S3Settings#credentialsOrigin()}; never a key).
   */
  static ObjectStoreException classify(String action, String location, String endpoint,
      String credentialsOrigin, SdkException e) {
    String prefix = "Cannot " + action + " " + location + " at " + endpoint + ": ";
    if (interrupted(e)) {
      return new ObjectStoreInterruptedException(prefix + "interrupted: the calling thread was "
          + "stopped (a stopped query or a killed task); the request may or may not have reached "
          + "S3" + attempts(e), e);
    }
    if (e instanceof SdkServiceException se) {
      int status = se.statusCode();
      String code = errorCode(se);
      String reason = status + (code.isEmpty() ? "" : " " + code) + errorMessage(se)
          + attempts(e);
      if (status == 404 && !"NoSuchBucket".equals(code)) {
        return new ObjectNotFoundException(prefix + "no such object (" + reason + ")", e);
      }
      if ("NoSuchBucket".equals(code)) {
        return new ObjectStoreException(prefix + "the bucket does not exist (" + reason + ")",
            false, e);
      }
      if (status == 403) {
        return new ObjectStoreException(prefix + "access denied; check the credentials"
            + (credentialsOrigin.isEmpty() ? "" : " (" + credentialsOrigin + ")")
            + " and their permissions (" + reason + ")", false, e);
      }
      boolean retryable = retryable(se, status, code);
      return new ObjectStoreException(prefix + transientCause(se, status, code) + reason,
          retryable, e);
    }
    if (String.valueOf(e.getMessage()).startsWith("Unable to load credentials")) {
      // The SDK's chain found none; its message lists every provider it tried in about 1 KB.
      return new ObjectStoreException(prefix + "no credentials found: "
          + (credentialsOrigin.isEmpty() ? "the credentials providers" : credentialsOrigin)
          + " supplied none; set " + ACCESS_KEYS_SETTING + ", or "
          + CREDENTIALS_PROVIDER_SETTING + " (the SDK said: " + firstLine(e.getMessage())
          + ")", false, e);
    }
    FailFastHttpClient.EndpointUnreachableException unreachable =
        find(e, FailFastHttpClient.EndpointUnreachableException.class);
    if (unreachable != null) {
      return new ObjectStoreException(prefix + "the endpoint cannot be reached: "
          + unreachable.getMessage() + pathStyleHint(location, unreachable) + "; check "
          + ENDPOINT_SETTING + " (not retried: a wrong endpoint does not heal)", false, e);
    }
    Throwable body = find(e, BodyReadException.class);
    if (body != null) {
      return new ObjectStoreException(
          prefix + "cannot read the request body: " + body.getCause(), false, e);
    }
    if (e instanceof ApiCallTimeoutException || e instanceof ApiCallAttemptTimeoutException) {
      return new ObjectStoreException(prefix + "S3 is unavailable: timed out: " + e.getMessage()
          + attempts(e), true, e);
    }
    Throwable io = find(e, IOException.class);
    if (io != null) {
      return new ObjectStoreException(prefix + "S3 is unreachable or unavailable: " + io
          + attempts(e), true, e);
    }
    return new ObjectStoreException(prefix + e.getMessage(), e.retryable(), e);
  }

  /**
   * True if {@code e} comes from an interrupt of the calling thread: the SDK's {@code
   * AbortedException}, or an {@link InterruptedException}, {@link
   * java.nio.channels.ClosedByInterruptException} or plain {@link java.io.InterruptedIOException}
   * among its causes. Not the {@code InterruptedIOException} subclasses that mean a timeout
   * ({@link java.net.SocketTimeoutException}, HttpClient's connect and connection-request
   * timeouts): those are S3 being slow or unreachable, and retryable.
   */
  static boolean interrupted(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
      if (t instanceof AbortedException || t instanceof InterruptedException
          || t instanceof java.nio.channels.ClosedByInterruptException
          || t.getClass() == java.io.InterruptedIOException.class) {
        return true;
      }
    }
    return false;
  }

  /** The S3 error code ({@code AccessDenied}, {@code SlowDown}, ...), or "" if none. */
  static String errorCode(SdkServiceException e) {
    if (e instanceof AwsServiceException ae && ae.awsErrorDetails() != null
        && ae.awsErrorDetails().errorCode() != null) {
      return ae.awsErrorDetails().errorCode();
    }
    return "";
  }

  private static String errorMessage(SdkServiceException e) {
    if (e instanceof AwsServiceException ae && ae.awsErrorDetails() != null) {
      String m = ae.awsErrorDetails().errorMessage();
      if (m != null && !m.isBlank()) {
        return ": " + m;
      }
    }
    return "";
  }

  /**
   * "S3 is throttling requests: " for throttling answers (503 SlowDown, 429, throttling codes),
   * "S3 is unavailable: " for other 5xx, else "" (the status and code follow in the message).
   */
  private static String transientCause(SdkServiceException e, int status, String code) {
    if (status == 429 || e.isThrottlingException() || code.equals("SlowDown")
        || code.contains("Throttl") || code.equals("TooManyRequests")) {
      return "S3 is throttling requests: ";
    }
    if (status >= 500 && status != 501) {
      return "S3 is unavailable: ";
    }
    return "";
  }

  private static boolean retryable(SdkServiceException e, int status, String code) {
    // 501 NotImplemented: the server does not support what was asked (a header, an operation);
    // asking again cannot help.
    return (status >= 500 && status != 501) || status == 429 || status == 409
        || e.isThrottlingException() || RETRYABLE_CODES.contains(code);
  }

  private static String attempts(SdkException e) {
    Integer n = e.numAttempts();
    return n != null && n > 1 ? " (after " + n + " attempts)" : "";
  }

  private static <T extends Throwable> T find(Throwable e, Class<T> type) {
    for (Throwable t = e; t != null && t != t.getCause(); t = t.getCause()) {
      if (type.isInstance(t)) {
        return type.cast(t);
      }
    }
    return null;
  }

  /**
   * A failure to open the local bytes of an upload ({@link ObjectBody#open()}), carried through
   * the SDK's {@code ContentStreamProvider} which cannot throw checked exceptions. Not retryable:
   * the local source, not the network, is at fault.
   */
  static final class BodyReadException extends UncheckedIOException {
    private static final long serialVersionUID = 1L;

    BodyReadException(IOException cause) {
      super(cause.getMessage(), cause);
    }
  }
}
