// SPDX-License-Identifier: Apache-2.0
package io.strata.objectstore;

import java.util.Locale;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import software.amazon.awssdk.core.SdkRequest;
import software.amazon.awssdk.core.interceptor.Context;
import software.amazon.awssdk.core.interceptor.ExecutionAttribute;
import software.amazon.awssdk.core.interceptor.ExecutionAttributes;
import software.amazon.awssdk.core.interceptor.ExecutionInterceptor;
import software.amazon.awssdk.core.interceptor.SdkExecutionAttribute;
import software.amazon.awssdk.http.SdkHttpRequest;

/**
 * Reports every HTTP attempt of an S3 client to the {@link RequestListener} carried by the
 * request itself (execution attribute {@link #LISTENER}, set per request by {@link
 * S3ObjectStore}). One interceptor serves a shared client; each store view sees only its own
 * requests.
 *
 * <p>The SDK calls {@code beforeTransmission} once per attempt but {@code afterTransmission}
 * only when a response arrived. An attempt still open when the next one starts, or when the
 * call fails, got no response (timeout, reset, refused) and is reported with status -1.
 */
final class ListenerInterceptor implements ExecutionInterceptor {
  private static final Logger LOG = LoggerFactory.getLogger(ListenerInterceptor.class);

  /**
   * The listener for one request. The SDK requires attribute names to be unique in the JVM; the
   * random suffix keeps two copies of this class (two class loaders, one SDK) from clashing.
   */
  static final ExecutionAttribute<RequestListener> LISTENER =
      new ExecutionAttribute<>("strata.RequestListener." + UUID.randomUUID());

  /** The attempt sent but not yet answered (a holder: attribute values cannot be removed). */
  private static final ExecutionAttribute<AtomicReference<RequestListener.Request>> PENDING =
      new ExecutionAttribute<>("strata.PendingAttempt." + UUID.randomUUID());

  @Override
  public void beforeTransmission(Context.BeforeTransmission context, ExecutionAttributes attrs) {
    RequestListener listener = attrs.getAttribute(LISTENER);
    if (listener == null) {
      return;
    }
    flushPending(listener, attrs);
    SdkHttpRequest http = context.httpRequest();
    SdkRequest request = context.request();
    String operation = attrs.getAttribute(SdkExecutionAttribute.OPERATION_NAME);
    boolean conditional = http.firstMatchingHeader("If-None-Match").isPresent()
        || http.firstMatchingHeader("If-Match").isPresent();
    pending(attrs).set(new RequestListener.Request(
        kind(operation),
        http.method().name(),
        request.getValueForField("Bucket", String.class).orElse(""),
        request.getValueForField("Key", String.class)
            .or(() -> request.getValueForField("Prefix", String.class)).orElse(""),
        conditional,
        -1,
        bytesSent(context)));
  }

  @Override
  public void afterTransmission(Context.AfterTransmission context, ExecutionAttributes attrs) {
    RequestListener listener = attrs.getAttribute(LISTENER);
    if (listener == null) {
      return;
    }
    RequestListener.Request pending = pending(attrs).getAndSet(null);
    if (pending == null) {
      return;
    }
    notify(listener, new RequestListener.Request(pending.kind(), pending.method(),
        pending.bucket(), pending.key(), pending.conditional(),
        context.httpResponse().statusCode(), pending.bytesSent()));
  }

  @Override
  public void afterExecution(Context.AfterExecution context, ExecutionAttributes attrs) {
    RequestListener listener = attrs.getAttribute(LISTENER);
    if (listener != null) {
      flushPending(listener, attrs);
    }
  }

  @Override
  public void onExecutionFailure(Context.FailedExecution context, ExecutionAttributes attrs) {
    RequestListener listener = attrs.getAttribute(LISTENER);
    if (listener != null) {
      flushPending(listener, attrs);
    }
  }

  /**
   * The kind of an S3 operation: PUT, GET, HEAD, LIST, DELETE, COPY or OTHER. Multipart
   * uploads count as PUT, aborting one as DELETE, UploadPartCopy as COPY.
   */
  static String kind(String operation) {
    if (operation == null) {
      return "OTHER";
    }
    return switch (operation) {
      case "PutObject", "UploadPart", "CreateMultipartUpload", "CompleteMultipartUpload" -> "PUT";
      case "GetObject" -> "GET";
      case "HeadObject" -> "HEAD";
      case "ListObjectsV2", "ListObjects", "ListParts", "ListMultipartUploads" -> "LIST";
      case "DeleteObject", "DeleteObjects", "AbortMultipartUpload" -> "DELETE";
      case "CopyObject", "UploadPartCopy" -> "COPY";
      default -> "OTHER";
    };
  }

  /**
   * Body bytes of the attempt: the payload size ({@code x-amz-decoded-content-length}) when the
   * SDK sends it aws-chunked with a checksum trailer, else {@code Content-Length}, else 0.
   */
  private static long bytesSent(Context.BeforeTransmission context) {
    SdkHttpRequest http = context.httpRequest();
    Optional<String> len = http.firstMatchingHeader("x-amz-decoded-content-length")
        .or(() -> http.firstMatchingHeader("Content-Length"));
    if (len.isPresent()) {
      try {
        return Long.parseLong(len.get().trim());
      } catch (NumberFormatException e) {
        // fall through to the body's own length
      }
    }
    return context.requestBody().flatMap(b -> b.optionalContentLength()).orElse(0L);
  }

  private static void flushPending(RequestListener listener, ExecutionAttributes attrs) {
    RequestListener.Request pending = pending(attrs).getAndSet(null);
    if (pending != null) {
      notify(listener, pending);
    }
  }

  private static AtomicReference<RequestListener.Request> pending(ExecutionAttributes attrs) {
    AtomicReference<RequestListener.Request> holder = attrs.getAttribute(PENDING);
    if (holder == null) {
      holder = new AtomicReference<>();
      attrs.putAttribute(PENDING, holder);
    }
    return holder;
  }

  private static void notify(RequestListener listener, RequestListener.Request request) {
    try {
      listener.onRequest(request);
    } catch (RuntimeException e) {
      // A metrics bug must not fail the request.
      LOG.warn("RequestListener failed on {} {} {}/{}: {}", request.kind().toLowerCase(Locale.ROOT),
          request.method(), request.bucket(), request.key(), e.toString());
    }
  }
}
