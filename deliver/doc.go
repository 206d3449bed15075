// Package deliver is the HTTP side of webhook delivery: it signs a payload
// (Standard Webhooks), sends it to an endpoint over a keep-alive HTTP client
// guarded against SSRF, and classifies what came back into an [Outcome] that
// tells the caller whether to acknowledge, retry, slow down or dead-letter.
//
// The package is deliberately free of queueing concerns: it knows nothing
// about NATS, JetStream or local state. It is the first implementation of
// package destination: [Client.Open] returns an endpoint's [Webhook], whose
// Send is one attempt, and the engine decides what to do with the class:
//
//   - [Success]: acknowledge.
//   - [Transient]: retry after a full-jitter backoff (package backoff).
//   - [RateLimited]: retry after [Outcome.RetryAfter], clamped and
//     jittered, and slow the whole endpoint down.
//   - [Permanent], [Gone], [Rejected]: dead-letter at once.
//
// [Client.Do] is the same attempt with the HTTP-level [Request] and
// [Result], for callers that hold no endpoint.
//
// # Signing
//
// [Signer] computes webhook-signature values: for each active secret,
// "v1," followed by base64(HMAC-SHA256(secret, id + "." + timestamp + "." + body)),
// space-separated so that secrets rotate without downtime.
//
// # SSRF protection
//
// A [Guard] refuses loopback, private, link-local, shared (CGNAT), multicast,
// reserved and documentation addresses, including IPv6 forms that embed an
// IPv4 address (IPv4-mapped, NAT64, 6to4). The [Client] applies it at dial
// time to the address actually being connected to, so every resolved address
// is checked and DNS rebinding has no window. Requests never go through a
// proxy the environment names (HTTP_PROXY), which would hide the target from
// the guard; through the egress proxy an operator configures
// ([ClientOptions.EgressProxy], an endpoint's proxy) the guard judges the
// target's addresses first and the proxy is asked for the checked one
// (package reach).
//
// # Authentication and what the receiver is told
//
// Every request carries Hookjet-Event-Type (and Hookjet-Tenant when the
// event names one), which no configured header can replace. An endpoint's
// credentials (package reach: basic, bearer, OAuth2 client credentials,
// mTLS) are opened once per endpoint by [Client.Open]; an OAuth2 token is
// fetched through the endpoint's own route, and a token endpoint's refusal
// is [Auth] with [Result.Unsent] set.
//
// # Secrets
//
// Nothing in this package logs, and neither errors nor [Outcome.Reason]
// contain request or response bodies, header values or URL query strings.
package deliver
