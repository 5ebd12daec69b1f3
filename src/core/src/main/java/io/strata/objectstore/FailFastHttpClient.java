// SPDX-License-Identifier: Apache-2.0
package io.strata.objectstore;

import java.io.IOException;
import java.net.ConnectException;
import java.net.NoRouteToHostException;
import java.net.UnknownHostException;
import java.security.cert.CertificateException;
import java.util.Optional;
import javax.net.ssl.SSLException;
import javax.net.ssl.SSLPeerUnverifiedException;
import software.amazon.awssdk.core.exception.SdkClientException;
import software.amazon.awssdk.http.ExecutableHttpRequest;
import software.amazon.awssdk.http.HttpExecuteRequest;
import software.amazon.awssdk.http.HttpExecuteResponse;
import software.amazon.awssdk.http.SdkHttpClient;
import software.amazon.awssdk.utils.AttributeMap;

/**
 * An HTTP client that fails at once, without the SDK's retries, when the endpoint cannot be
 * reached at all before it ever answered: the connection is refused, the host name does not
 * resolve, no route leads to it, or TLS cannot start (an untrusted or mismatched certificate, TLS spoken to a plain-HTTP
 * port). Those come from a wrong endpoint, port, scheme or addressing style, not from a busy
 * server; the SDK's standard strategy retries every {@link IOException}, so a wrong port cost
 * tens of seconds of back-off before any error (issue 46). Once the host has answered any
 * request in this JVM, the same failures are an outage and keep the SDK's retries, as do
 * resets, timeouts, a resolver's temporary failure, throttling and 5xx at any time.
 *
 * <p>How: the failure leaves {@link ExecutableHttpRequest#call()} as an {@link
 * SdkClientException} (the SDK passes only those and {@code IOException}s through its retry
 * stage; anything else escapes its exception handling) whose cause is an {@link
 * EndpointUnreachableException}, itself caused by the I/O failure: the SDK's conditions retry an
 * exception that is, or whose direct cause is, an {@code IOException}, and neither is here.
 * {@link S3Errors} finds the marker and names the endpoint and the setting it comes from.
 */
final class FailFastHttpClient implements SdkHttpClient {
  private final SdkHttpClient delegate;
  /**
   * The hosts ({@code scheme://host:port}, the bucket's virtual host included) that answered a
   * request of any client in this JVM: the endpoint was right, so a refused or unresolved
   * connection to it from then on is an outage (a server restarting, a load balancer without a
   * backend, a DNS blip), which the SDK's retries ride out as before. JVM-wide, not per client,
   * because a shared client is closed with its last lease and built again for the next one (an
   * executor's stores all unloaded, a query restarted on the driver), and the new client must
   * not take the endpoint for a wrong one. A few short strings per endpoint and bucket.
   */
  private static final java.util.Set<String> ANSWERED =
      java.util.concurrent.ConcurrentHashMap.newKeySet();

  private FailFastHttpClient(SdkHttpClient delegate) {
    this.delegate = delegate;
  }

  /** A builder of this client around what {@code delegate} builds. */
  static SdkHttpClient.Builder<?> around(SdkHttpClient.Builder<?> delegate) {
    return new Builder(delegate);
  }

  @Override
  public ExecutableHttpRequest prepareRequest(HttpExecuteRequest request) {
    ExecutableHttpRequest call = delegate.prepareRequest(request);
    String host = request.httpRequest().protocol() + "://" + request.httpRequest().host() + ":"
        + request.httpRequest().port();
    return new ExecutableHttpRequest() {
      @Override
      public HttpExecuteResponse call() throws IOException {
        try {
          HttpExecuteResponse r = call.call();
          ANSWERED.add(host);
          return r;
        } catch (IOException e) {
          Optional<String> why = ANSWERED.contains(host) ? Optional.empty() : unreachable(e);
          if (why.isPresent()) {
            throw SdkClientException.builder().message(why.get())
                .cause(new EndpointUnreachableException(why.get(), e)).build();
          }
          throw e;
        }
      }

      @Override
      public void abort() {
        call.abort();
      }
    };
  }

  @Override
  public String clientName() {
    return delegate.clientName();
  }

  @Override
  public void close() {
    delegate.close();
  }

  /**
   * What makes {@code e} a failure to reach the endpoint at all, or empty for any other I/O
   * failure (retried as before).
   */
  static Optional<String> unreachable(Throwable e) {
    for (Throwable t = e; t != null && t != t.getCause(); t = t.getCause()) {
      if (t instanceof java.io.InterruptedIOException) {
        return Optional.empty(); // a timeout (connect timeout included) or an interrupt
      }
      if (t instanceof UnknownHostException && t.getMessage() != null
          && t.getMessage().contains("Temporary failure")) {
        return Optional.empty(); // EAI_AGAIN: the resolver could not answer now
      }
      if (t instanceof UnknownHostException) {
        return Optional.of("the host name " + t.getMessage() + " does not resolve");
      }
      if (t instanceof ConnectException || t instanceof NoRouteToHostException) {
        return Optional.of("the connection was refused or has no route (" + t.getMessage()
            + ")");
      }
      if (t instanceof SSLPeerUnverifiedException || t instanceof CertificateException) {
        return Optional.of("TLS failed: the server's certificate is not trusted or does not "
            + "match the host (" + t.getMessage() + ")");
      }
      if (t instanceof SSLException && t.getMessage() != null
          && t.getMessage().contains("Unsupported or unrecognized SSL message")) {
        return Optional.of("TLS failed: the server does not speak TLS on this port (an "
            + "https:// endpoint for a plain-HTTP server?)");
      }
    }
    return Optional.empty();
  }

  /**
   * Marks a failure to reach the endpoint at all, between the SDK's exception and the I/O
   * failure (see the class comment); not an {@link IOException} on purpose.
   */
  static final class EndpointUnreachableException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    EndpointUnreachableException(String message, IOException failure) {
      super(message, failure);
    }
  }

  private static final class Builder implements SdkHttpClient.Builder<Builder> {
    private final SdkHttpClient.Builder<?> delegate;

    Builder(SdkHttpClient.Builder<?> delegate) {
      this.delegate = delegate;
    }

    @Override
    public SdkHttpClient buildWithDefaults(AttributeMap serviceDefaults) {
      return new FailFastHttpClient(delegate.buildWithDefaults(serviceDefaults));
    }
  }
}
