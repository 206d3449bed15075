package deliver

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"syscall"
	"time"

	"github.com/hookjet/hookjet/destination"
	"github.com/hookjet/hookjet/reach"
)

// Class is what an attempt's outcome means for the message being delivered:
// the classes every destination shares ([destination.Class]). The HTTP
// meaning of each is documented at [Classify].
type Class = destination.Class

// The classes of an attempt's outcome.
const (
	// Success is a 2xx response: acknowledge the message.
	Success = destination.Success
	// Transient is a failure worth retrying after a backoff: timeouts,
	// refused or reset connections, DNS failures, 408, 425 and 5xx.
	Transient = destination.Transient
	// RateLimited is 429, or 503 with a valid Retry-After: retry after the
	// receiver's Retry-After and slow the whole endpoint down.
	RateLimited = destination.RateLimited
	// Permanent is any other 4xx, a 3xx (redirects are never followed), a
	// 1xx, or a TLS certificate error: dead-letter at once.
	Permanent = destination.Permanent
	// Gone is 410: dead-letter the message and disable the endpoint.
	Gone = destination.Gone
	// Rejected means hookjet refused to send: the address is forbidden by
	// the SSRF guard, the URL is invalid, or it is http:// while HTTPS is
	// required. Dead-letter at once.
	Rejected = destination.Rejected
	// Auth means the endpoint's OAuth2 token endpoint refused to give a
	// token (400, 401, 403 and other refusals, or an answer without a
	// token). Dead-letter at once with reason auth.
	Auth = destination.Auth
)

// Outcome is the classified result of one delivery attempt.
type Outcome struct {
	// Class says what the attempt means for the message.
	Class Class
	// Status is the HTTP status code; 0 when there was no response.
	Status int
	// RetryAfter is the receiver's Retry-After, greater than zero only when
	// the header was present and valid. It is not clamped: the engine clamps it (package backoff).
	RetryAfter time.Duration
	// Err is the transport or refusal error, or nil when a response was
	// fully read. It never contains bodies or header values.
	Err error
}

// Reason returns a short human-readable description of the outcome, suitable
// for logs and dead letters: it never contains bodies, header values or URLs.
// Examples: "HTTP 422 Unprocessable Entity", "timeout after 15s",
// "connection refused", "refused: 10.0.0.5 is a private address",
// "redirect not followed (HTTP 302)".
func (o Outcome) Reason() string {
	if o.Err != nil {
		return errReason(o.Err)
	}
	if o.Status == 0 {
		return "no response"
	}
	s := "HTTP " + strconv.Itoa(o.Status)
	if t := http.StatusText(o.Status); t != "" {
		s += " " + t
	}
	switch {
	case o.Status >= 300 && o.Status < 400:
		return "redirect not followed (HTTP " + strconv.Itoa(o.Status) + ")"
	case o.RetryAfter > 0:
		return s + " (Retry-After " + o.RetryAfter.String() + ")"
	}
	return s
}

// errReason describes err without URLs, header values or bodies.
func errReason(err error) string {
	var (
		refused  *RefusedError
		timeout  *TimeoutError
		dnsErr   *net.DNSError
		hostErr  x509.HostnameError
		authErr  x509.UnknownAuthorityError
		certErr  x509.CertificateInvalidError
		verifErr *tls.CertificateVerificationError
		recErr   tls.RecordHeaderError
		urlErr   *url.Error
	)
	if te, ok := errors.AsType[*reach.TokenError](err); ok {
		if te.Status == 0 && te.Err != nil {
			return "token endpoint: " + errReason(te.Err)
		}
		return te.Error()
	}
	switch {
	case errors.As(err, &refused):
		return refused.Error()
	case errors.Is(err, ErrInvalidProxy), errors.Is(err, ErrInvalidAuth):
		return err.Error()
	case errors.Is(err, reach.ErrProxy):
		return err.Error()
	case errors.Is(err, ErrInsecureURL), errors.Is(err, ErrInvalidURL):
		return errWithoutURL(err)
	case errors.As(err, &timeout):
		return timeout.Error()
	case errors.Is(err, context.Canceled):
		return "canceled"
	case isTimeout(err):
		return "timeout"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.As(err, &dnsErr):
		if dnsErr.IsNotFound {
			return "DNS: no such host " + dnsErr.Name
		}
		return "DNS: lookup " + dnsErr.Name + " failed: " + dnsErr.Err
	case errors.As(err, &hostErr):
		return "TLS: " + hostErr.Error()
	case errors.As(err, &authErr):
		return "TLS: " + authErr.Error()
	case errors.As(err, &certErr):
		return "TLS: " + certErr.Error()
	case errors.As(err, &verifErr):
		return "TLS: " + verifErr.Err.Error()
	case errors.As(err, &recErr):
		return "TLS: endpoint does not speak TLS"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "connection closed before the response was complete"
	case errors.As(err, &urlErr):
		return urlErr.Err.Error()
	}
	return err.Error()
}

// errWithoutURL returns err's message, stripping a *url.Error's URL.
func errWithoutURL(err error) string {
	if urlErr, ok := errors.AsType[*url.Error](err); ok {
		return urlErr.Err.Error()
	}
	return err.Error()
}

// isTimeout reports whether err is a deadline or a network timeout.
func isTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	// errors.As would stop at the first net.Error (often a *url.Error that
	// only asks its direct cause), so look at every error in the chain.
	for e := err; e != nil; e = errors.Unwrap(e) {
		if t, ok := e.(interface{ Timeout() bool }); ok && t.Timeout() { //nolint:errorlint // deliberate walk of the chain
			return true
		}
	}
	return false
}

// Classify turns the result of one HTTP attempt into an [Outcome]. It is
// pure: now is only used to interpret an HTTP-date Retry-After. resp's body
// is not touched; callers read and close it.
//
// An error takes precedence over a response (a response whose body could not
// be read is classified by the read error). Statuses: 2xx [Success]; 408,
// 425 and 5xx [Transient], except 503 with a valid Retry-After, which is
// [RateLimited] like 429; 410 [Gone]; other 4xx, 3xx and 1xx [Permanent].
// Errors: refusals ([ErrRefused], [ErrInsecureURL], [ErrInvalidURL]) are
// [Rejected]; TLS certificate errors and a non-TLS server behind https are
// [Permanent]; everything else (timeouts, refused or reset connections, EOF,
// DNS failures, cancellation) is [Transient].
func Classify(resp *http.Response, err error, now time.Time) Outcome {
	var o Outcome
	if resp != nil {
		o.Status = resp.StatusCode
		if v := resp.Header["Retry-After"]; len(v) > 0 {
			if d, ok := ParseRetryAfter(v[0], now); ok {
				o.RetryAfter = d
				if o.Status == http.StatusServiceUnavailable {
					o.Class = RateLimited
				}
			}
		}
	}
	if err != nil {
		o.Err = err
		o.Class = classifyErr(err)
		return o
	}
	if resp == nil {
		o.Class = Transient
		return o
	}
	if o.Class == RateLimited {
		return o
	}
	o.Class = classifyStatus(o.Status)
	return o
}

// classifyStatus classifies an HTTP status code alone.
func classifyStatus(code int) Class {
	switch {
	case code >= 200 && code < 300:
		return Success
	case code == http.StatusTooManyRequests:
		return RateLimited
	case code == http.StatusGone:
		return Gone
	case code == http.StatusRequestTimeout, code == http.StatusTooEarly:
		return Transient
	case code >= 500 && code < 600:
		return Transient
	}
	return Permanent
}

// classifyErr classifies a transport or refusal error.
func classifyErr(err error) Class {
	if te, ok := errors.AsType[*reach.TokenError](err); ok {
		return classifyToken(te)
	}
	if errors.Is(err, ErrRefused) || errors.Is(err, ErrInsecureURL) || errors.Is(err, ErrInvalidURL) ||
		errors.Is(err, ErrInvalidProxy) || errors.Is(err, ErrInvalidAuth) {
		return Rejected
	}
	if pe, ok := errors.AsType[*reach.ProxyError](err); ok {
		if pe.Temporary() {
			return Transient
		}
		return Permanent
	}
	if isTimeout(err) {
		return Transient
	}
	var (
		hostErr  x509.HostnameError
		authErr  x509.UnknownAuthorityError
		certErr  x509.CertificateInvalidError
		verifErr *tls.CertificateVerificationError
		recErr   tls.RecordHeaderError
	)
	if errors.As(err, &verifErr) || errors.As(err, &hostErr) || errors.As(err, &authErr) ||
		errors.As(err, &certErr) || errors.As(err, &recErr) {
		return Permanent
	}
	return Transient
}

// classifyToken classifies a failed OAuth2 token fetch: 408, 429, 5xx and
// failures to reach the token endpoint are [Transient] (an SSRF refusal of
// its address is [Rejected]); its refusals (400, 401, 403, any other
// status) and an answer without a token are [Auth].
func classifyToken(te *reach.TokenError) Class {
	if te.Status == 0 && te.Err != nil && te.Temporary() {
		switch c := classifyErr(te.Err); c {
		case Transient, Rejected:
			return c
		}
		return Auth // a TLS error: the token endpoint cannot be trusted
	}
	if te.Temporary() {
		return Transient
	}
	return Auth
}
