// Package reach is how hookjet reaches an endpoint: the credentials a
// request carries ([Auth]: HTTP basic, a bearer token, an OAuth2 client
// credentials token, a TLS client certificate) and the egress proxy it goes
// through ([Proxy]).
//
// It sits below the delivery engine and beside the destinations that use it
// (package deliver, the HTTP webhook): it imports neither the engine nor
// NATS, only the standard library and golang.org/x/oauth2.
//
// # Credentials
//
// [Open] turns an [Auth] into [Credentials], one per endpoint. Basic and
// bearer credentials are an Authorization header computed once. An OAuth2
// endpoint's token is fetched from its token endpoint with the client
// credentials grant (golang.org/x/oauth2/clientcredentials) through the
// http.Client its user gives (the guarded, proxied transport, following no
// redirects), shared by every delivery of the endpoint, and fetched again
// min(10s, a tenth of its lifetime) before it expires or when a receiver
// answered 401 ([Credentials.Drop]). A fetch that fails is a
// [*TokenError]: [TokenError.Temporary] tells a failure worth retrying
// (429, 5xx, a timeout or a lost connection) from a refusal (400, 401,
// 403 and the rest), and its message carries the token endpoint's error
// code and description, never the client secret. An mTLS endpoint's
// certificate and key are parsed once ([Credentials.Certificate]).
//
// # Egress proxy
//
// A [Proxy] resolves the target's name itself, checks every address with
// the caller's SSRF check, and asks the proxy for the checked address
// (CONNECT 203.0.113.7:443), so a second resolution at the proxy cannot
// steer the request elsewhere; the caller keeps the name for Host and
// TLS SNI.
//
// # Secrets
//
// An [Auth] prints, logs and marshals as its type alone. Errors never hold
// a password, token, client secret or key.
package reach
