// SPDX-License-Identifier: Apache-2.0
package io.strata.objectstore;

import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CopyOnWriteArrayList;
import software.amazon.awssdk.core.interceptor.Context;
import software.amazon.awssdk.core.interceptor.ExecutionAttributes;
import software.amazon.awssdk.core.interceptor.ExecutionInterceptor;
import software.amazon.awssdk.core.interceptor.SdkExecutionAttribute;
import software.amazon.awssdk.http.SdkHttpRequest;

/**
 * Test-only SDK interceptor, registered for every S3 client of the test JVM through the SDK's
 * global interceptor list ({@code software/amazon/awssdk/global/handlers/execution.interceptors}
 * under src/test/resources): while {@link #start()}ed, records the operation, key and headers
 * of every HTTP attempt as the SDK marshalled them, just before signing and sending, so a test
 * can check what Strata asks of S3 even where the test server rejects a header. S3Proxy's
 * filesystem store answers 501 NotImplemented to any {@code x-amz-server-side-encryption}
 * header; {@link #start(boolean)} with {@code stripEncryption} records the headers and then
 * removes the encryption ones (before signing), so the write still reaches the real server.
 */
public final class HeaderRecorder implements ExecutionInterceptor {
  /** One attempt: operation name (PutObject, ...), object key, headers (lower-case names). */
  public record Sent(String operation, String key, Map<String, String> headers) { }

  private static final List<Sent> SENT = new CopyOnWriteArrayList<>();
  private static final List<Sent> TRANSMITTED = new CopyOnWriteArrayList<>();
  private static volatile boolean recording;
  private static volatile boolean strip;

  /** Clears what was recorded and starts recording; sends every header. */
  public static void start() {
    start(false);
  }

  /**
   * Clears what was recorded and starts recording.
   *
   * @param stripEncryption true to remove the server-side encryption headers after recording
   */
  public static void start(boolean stripEncryption) {
    SENT.clear();
    TRANSMITTED.clear();
    strip = stripEncryption;
    recording = true;
  }

  /**
   * The attempts recorded since {@link #start()} as they went on the wire: after the SDK's
   * checksum and signing stages (so with {@code x-amz-trailer}, {@code x-amz-content-sha256}
   * and the like), and after any stripping.
   */
  public static List<Sent> transmitted() {
    return List.copyOf(TRANSMITTED);
  }

  @Override
  public void beforeTransmission(Context.BeforeTransmission context, ExecutionAttributes attrs) {
    if (!recording) {
      return;
    }
    Map<String, String> headers = new TreeMap<>();
    context.httpRequest().headers().forEach((k, v) ->
        headers.put(k.toLowerCase(java.util.Locale.ROOT), String.join(",", v)));
    TRANSMITTED.add(new Sent(attrs.getAttribute(SdkExecutionAttribute.OPERATION_NAME),
        context.request().getValueForField("Key", String.class).orElse(""), headers));
  }

  /** Stops recording and returns what was recorded since {@link #start()}. */
  public static List<Sent> stop() {
    recording = false;
    return List.copyOf(SENT);
  }

  @Override
  public SdkHttpRequest modifyHttpRequest(Context.ModifyHttpRequest context,
      ExecutionAttributes attrs) {
    SdkHttpRequest http = context.httpRequest();
    if (!recording) {
      return http;
    }
    Map<String, String> headers = new TreeMap<>();
    http.headers().forEach((k, v) ->
        headers.put(k.toLowerCase(java.util.Locale.ROOT), String.join(",", v)));
    SENT.add(new Sent(attrs.getAttribute(SdkExecutionAttribute.OPERATION_NAME),
        context.request().getValueForField("Key", String.class).orElse(""), headers));
    if (!strip) {
      return http;
    }
    return http.toBuilder()
        .removeHeader("x-amz-server-side-encryption")
        .removeHeader("x-amz-server-side-encryption-aws-kms-key-id")
        .build();
  }
}
