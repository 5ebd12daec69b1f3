// SPDX-License-Identifier: Apache-2.0
package io.strata.objectstore;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.ConnectException;
import java.net.SocketException;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.awscore.exception.AwsErrorDetails;
import software.amazon.awssdk.core.exception.ApiCallTimeoutException;
import software.amazon.awssdk.core.exception.SdkClientException;
import software.amazon.awssdk.core.exception.SdkException;
import software.amazon.awssdk.services.s3.model.S3Exception;

class S3ErrorsTest {
  private static final String LOC = "s3://bkt/ckpt/k";
  private static final String EP = "http://127.0.0.1:9000";

  private static S3Exception s3(int status, String code) {
    return (S3Exception) S3Exception.builder().statusCode(status)
        .awsErrorDetails(AwsErrorDetails.builder().errorCode(code).errorMessage("msg " + code)
            .build())
        .build();
  }

  private static ObjectStoreException classify(SdkException e) {
    return S3Errors.classify("read", LOC, EP, e);
  }

  @Test
  void anInterruptedRequestIsAStopNotAFailureToRetry() {
    for (SdkException e : new SdkException[] {
        software.amazon.awssdk.core.exception.AbortedException.create("Thread was interrupted"),
        SdkClientException.create("read failed", new java.io.InterruptedIOException("stop"))}) {
      ObjectStoreException c = classify(e);
      assertInstanceOf(ObjectStoreInterruptedException.class, c, c.getMessage());
      assertFalse(c.retryable());
      assertTrue(c.getMessage().startsWith("Cannot read " + LOC + " at " + EP + ": interrupted"),
          c.getMessage());
    }
  }

  @Test
  void timeoutsAreNotInterruptsButRetryableUnavailability() {
    for (SdkException e : new SdkException[] {
        SdkClientException.create("read", new java.net.SocketTimeoutException("Read timed out")),
        SdkClientException.create("connect",
            new org.apache.hc.client5.http.ConnectTimeoutException("Connect timed out"))}) {
      ObjectStoreException c = classify(e);
      assertFalse(c instanceof ObjectStoreInterruptedException, c.getMessage());
      assertTrue(c.retryable(), c.getMessage());
      assertTrue(c.getMessage().contains("unreachable or unavailable"), c.getMessage());
    }
  }

  @Test
  void transientServiceErrorsAreRetryable() {
    for (S3Exception e : new S3Exception[] {s3(503, "SlowDown"), s3(500, "InternalError"),
        s3(502, null), s3(429, "TooManyRequests"), s3(409, "ConditionalRequestConflict"),
        s3(400, "RequestTimeout")}) {
      ObjectStoreException c = classify(e);
      assertTrue(c.retryable(), c.getMessage());
      assertEquals(ObjectStoreException.class, c.getClass());
    }
  }

  @Test
  void permanentServiceErrorsAreNot() {
    for (S3Exception e : new S3Exception[] {s3(403, "AccessDenied"),
        s3(403, "SignatureDoesNotMatch"), s3(400, "InvalidArgument"),
        s3(416, "InvalidRange"), s3(412, "PreconditionFailed")}) {
      ObjectStoreException c = classify(e);
      assertFalse(c.retryable(), c.getMessage());
    }
  }

  @Test
  void notFoundVersusNoSuchBucket() {
    assertInstanceOf(ObjectNotFoundException.class, classify(s3(404, "NoSuchKey")));
    assertInstanceOf(ObjectNotFoundException.class, classify(s3(404, null)),
        "a HEAD 404 has no code");
    ObjectStoreException bucket = classify(s3(404, "NoSuchBucket"));
    assertEquals(ObjectStoreException.class, bucket.getClass());
    assertFalse(bucket.retryable());
    assertTrue(bucket.getMessage().contains("bucket does not exist"), bucket.getMessage());
  }

  @Test
  void messageNamesActionLocationEndpointAndReason() {
    ObjectStoreException c = classify(s3(503, "SlowDown"));
    assertEquals("Cannot read s3://bkt/ckpt/k at http://127.0.0.1:9000: S3 is throttling requests:"
        + " 503 SlowDown: msg SlowDown", c.getMessage());
    assertEquals("Cannot read s3://bkt/ckpt/k at http://127.0.0.1:9000: S3 is unavailable: 500"
        + " InternalError: msg InternalError", classify(s3(500, "InternalError")).getMessage());
  }

  @Test
  void clientSideFailures() {
    assertTrue(classify(ApiCallTimeoutException.create(1000)).retryable(), "call timeout");
    assertTrue(classify(SdkClientException.create("connect",
        new ConnectException("Connection refused"))).retryable(), "refused");
    assertTrue(classify(SdkClientException.create("reset",
        new SocketException("Connection reset"))).retryable(), "reset");
    ObjectStoreException body = classify(SdkClientException.create("body",
        new S3Errors.BodyReadException(new IOException("gone.sst"))));
    assertFalse(body.retryable(), "a local body that cannot be read is not transient");
    assertTrue(body.getMessage().contains("gone.sst"), body.getMessage());
    assertFalse(classify(SdkClientException.create("Unable to load credentials")).retryable());
  }

  @Test
  void accessDeniedNamesWhereTheCredentialsCameFrom() {
    ObjectStoreException c = S3Errors.classify("read", LOC, EP,
        "the static keys of fs.s3a.bucket.b1.access.key", s3(403, "InvalidAccessKeyId"));
    assertFalse(c.retryable());
    assertTrue(c.getMessage().contains("access denied; check the credentials (the static keys "
        + "of fs.s3a.bucket.b1.access.key) and their permissions (403 InvalidAccessKeyId"),
        c.getMessage());
  }

  @Test
  void noCredentialsAtAllIsOneLineNamingStratasSettings() {
    String sdk = "Unable to load credentials from any of the providers in the chain "
        + "AwsCredentialsProviderChain(credentialsProviders=[SystemPropertyCredentialsProvider(),"
        + " EnvironmentVariableCredentialsProvider()]) : [SystemPropertyCredentialsProvider(): "
        + "Unable to load credentials from system settings. Access key must be specified either "
        + "via environment variable (AWS_ACCESS_KEY_ID) or system property (aws.accessKeyId)., "
        + "EnvironmentVariableCredentialsProvider(): Unable to load credentials from system "
        + "settings.]";
    ObjectStoreException c = S3Errors.classify("read", LOC, EP, S3Settings.DEFAULT_CHAIN,
        software.amazon.awssdk.core.exception.SdkClientException.create(sdk));
    assertFalse(c.retryable());
    String m = c.getMessage();
    assertTrue(m.contains("no credentials found: " + S3Settings.DEFAULT_CHAIN + " supplied none; "
        + "set spark.sql.streaming.stateStore.strata.s3.accessKeyId and s3.secretAccessKey"), m);
    assertTrue(m.contains("s3.credentialsProvider"), m);
    assertTrue(m.contains("(the SDK said: Unable to load credentials from any of the providers "
        + "in the chain)"), m);
    assertFalse(m.contains("EnvironmentVariableCredentialsProvider"), m);
  }
}
