package destination

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/hookjet/hookjet/reach"
	"github.com/hookjet/hookjet/signature"
)

// Webhook is the type of the HTTP POST destination, every endpoint's
// destination unless it names another.
const Webhook = "webhook"

// Destination is where one endpoint's deliveries go.
//
// Send makes one attempt and classifies it; it never returns an error apart
// from the [Result]. It is bounded by the endpoint's timeout and by ctx;
// when ctx is canceled the result is [Transient]. Send is safe for
// concurrent use. It must neither modify r.Payload nor keep it, or anything
// else of r, after it returns.
//
// The request is passed by value on purpose: a pointer passed through an
// interface method escapes to the heap, which would cost every attempt an
// allocation the engine does not make today.
type Destination interface {
	Send(ctx context.Context, r Request) Result
}

// Opener opens the destination of one endpoint. The engine calls it each
// time it builds an endpoint's settings (when the endpoint is created or
// changed, or a secret's grace ends), so what it returns should be a cheap
// handle: connections are the opener's to share (per address and
// credentials) and to close when idle. An error refuses the endpoint's
// settings; a destination that is merely unreachable is no error here but a
// [Transient] or [Rejected] result of Send.
type Opener func(ep Endpoint) (Destination, error)

// Endpoint is what a destination is opened for: the endpoint's settings
// that are the same for every attempt.
type Endpoint struct {
	// ID is the endpoint's id.
	ID string
	// Tenant is the tenant the endpoint belongs to; empty: the operator's.
	Tenant string
	// Type is the destination type, e.g. [Webhook]; empty means [Webhook].
	Type string
	// URL is a webhook destination's URL, used as it is: a destination
	// refuses an invalid one in Send ([Rejected]), not when opened.
	URL string
	// Header holds the endpoint's extra headers (canonical keys). Their
	// values are secret: they never appear in a reason or an error. It is
	// shared, never modified: a destination must not change it.
	Header http.Header
	// Signer signs each attempt (Standard Webhooks: webhook-id,
	// webhook-timestamp, webhook-signature); nil or a Signer without keys
	// signs nothing.
	Signer *signature.Signer
	// Timeout bounds each attempt; 0 means the destination's default.
	Timeout time.Duration
	// InsecureSkipVerify turns TLS certificate verification off.
	InsecureSkipVerify bool
	// Strict dials through the strict SSRF guard, which the operator's
	// opening of private ranges does not reach: the endpoint belongs to a
	// tenant (portal.allow_private_networks decides).
	Strict bool
	// Options are the endpoint's destination settings beyond these fields
	// (its config's `destination` object, as JSON, credentials revealed),
	// which the opener of [Endpoint.Type] decodes; nil for a webhook. They
	// are secret as a whole: never logged, never in a reason or an error.
	Options []byte
	// Auth is how the endpoint's requests authenticate (basic, bearer,
	// OAuth2 client credentials, a TLS client certificate); the zero value
	// is none. Its secrets never appear in a reason or an error.
	Auth reach.Auth
	// Proxy is the endpoint's egress proxy: "" the destination's default
	// (security.egress_proxy), [reach.None] none, or an http:// URL.
	Proxy string
}

// Request is one attempt to deliver one event.
type Request struct {
	// EventID is the event's id: webhook-id, identical on every retry and
	// replay.
	EventID string
	// EventType is the event's type.
	EventType string
	// Tenant is the tenant the event names; empty: none.
	Tenant string
	// OrderingKey is the event's ordering key; empty: none. The engine
	// has checked it: it is sent as it is.
	OrderingKey string
	// ContentType is the payload's content type; empty means
	// application/json.
	ContentType string
	// Payload is the body, sent byte for byte and signed as it is.
	Payload []byte
	// Trace holds this attempt's trace context headers (traceparent,
	// tracestate); nil when untraced. Its values are not secret.
	Trace http.Header
	// URL, when not empty, replaces the endpoint's URL for this request:
	// the endpoint's transformation changed it (package transform checked
	// it is an absolute http or https URL). Destinations without a URL
	// ignore it; the webhook's SSRF guard applies to it as to the
	// endpoint's.
	URL string
	// Header holds the headers the endpoint's transformation set (canonical
	// keys, checked by transform.CheckHeader): they override the
	// endpoint's configured ones. Nil means none.
	Header http.Header
	// Replay is n for the n-th replay of the event to the endpoint, 0 for
	// its first delivery and that delivery's retries. A broker that
	// dedupes on a message id (NATS JetStream's Nats-Msg-Id) takes it
	// into the id, so that retries are deduped and replays are not.
	Replay int
}

// Result is the classified outcome of one attempt.
type Result struct {
	// Class says what the attempt means for the delivery.
	Class Class
	// Status is the destination's status code (the HTTP status of a
	// webhook); 0 when there was no answer.
	Status int
	// RetryAfter is how long the destination asked to be left alone,
	// greater than zero only when it said so. It is not clamped: the engine
	// clamps it to retry.cap.
	RetryAfter time.Duration
	// Sent is when the attempt started; its Unix seconds are the signed
	// webhook-timestamp.
	Sent time.Time
	// Latency is how long the attempt took, up to its answer.
	Latency time.Duration
	// Reason is a short readable description of a failure, for logs, dead
	// letters and the delivery log, e.g. "HTTP 422 Unprocessable Entity",
	// "timeout after 15s", "refused: 10.0.0.5 is a private address". It
	// never contains payloads, header values or credentials; it is empty
	// for [Success].
	Reason string
	// Err is the cause of a failure without an answer, for errors.Is and
	// errors.As; nil when the destination answered.
	Err error
	// Response is the start of what a destination answered, for the
	// delivery log: a webhook's non-2xx body (nil on success), a broker's
	// acknowledgement on success (e.g. "stream ORDERS seq 42",
	// "partition 3 offset 1207") or its words on a failure.
	Response []byte
	// Unsent reports that nothing was sent to the destination: hookjet
	// could not obtain the endpoint's credentials (an OAuth2 token fetch
	// failed; Class is [Transient] or [Auth]). Such a result is not an
	// attempt: it is charged neither to retry.max_attempts nor to the
	// breaker.
	Unsent bool
}

// Class is what an attempt's outcome means for the delivery.
type Class int

// The classes of an attempt's outcome.
const (
	// Success: the destination took the delivery (a 2xx); acknowledge.
	Success Class = iota
	// Transient is a failure worth retrying after a backoff: timeouts,
	// refused or reset connections, DNS failures, 408, 425 and 5xx.
	Transient
	// RateLimited: the destination asked to slow down (429, or 503 with a
	// Retry-After): retry after [Result.RetryAfter] and slow the whole
	// endpoint down.
	RateLimited
	// Permanent is a refusal that a retry would not change (another 4xx,
	// a 3xx, a TLS certificate error): dead-letter at once.
	Permanent
	// Gone: the destination no longer exists (410): dead-letter the
	// delivery and disable the endpoint.
	Gone
	// Rejected means hookjet refused to send: the address is forbidden by
	// the SSRF guard or invalid, or it is http:// while HTTPS is required.
	// Dead-letter at once; it does not count against the breaker.
	Rejected
	// Auth means the endpoint's credentials were refused where they are
	// obtained: its OAuth2 token endpoint answered 400, 401, 403 (or
	// another refusal), or its answer held no token. Dead-letter at once
	// with reason "auth" and [Result.Reason] (the token endpoint's error,
	// never a secret); it does not count against the breaker.
	Auth
)

var classNames = [...]string{
	Success:     "success",
	Transient:   "transient",
	RateLimited: "rate_limited",
	Permanent:   "permanent",
	Gone:        "gone",
	Rejected:    "rejected",
	Auth:        "auth",
}

// String returns the class's name as used in metrics, dead letters and the
// delivery log: "success", "transient", "rate_limited", "permanent", "gone",
// "rejected" or "auth".
func (c Class) String() string {
	if c >= 0 && int(c) < len(classNames) {
		return classNames[c]
	}
	return "Class(" + strconv.Itoa(int(c)) + ")"
}
