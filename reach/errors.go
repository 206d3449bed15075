package reach

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
)

var (
	// ErrAuth is wrapped by every refusal of an [Auth] by [Auth.Check]
	// and [Open].
	ErrAuth = errors.New("invalid auth")

	// ErrProxy is wrapped by every error of a [Proxy] that is the
	// proxy's answer rather than the network's ([*ProxyError]).
	ErrProxy = errors.New("egress proxy")
)

// FieldError is a problem with one field of an [Auth] or of a proxy URL.
// It wraps [ErrAuth] and never holds a secret.
type FieldError struct {
	// Field is the field's name as in the endpoint's JSON: "token_url",
	// "cert".
	Field string
	// Err says what is wrong.
	Err error
}

// Error returns, for example, "token_url: must be an https:// or http:// URL".
func (e *FieldError) Error() string { return e.Field + ": " + e.Err.Error() }

// Unwrap returns Err and [ErrAuth].
func (e *FieldError) Unwrap() []error { return []error{e.Err, ErrAuth} }

// TokenError is a failed fetch of an OAuth2 token. Its message names the
// token endpoint's status and error (RFC 6749 error and
// error_description), never the client secret or the token endpoint's
// whole answer.
type TokenError struct {
	// Status is the token endpoint's HTTP status; 0 when it did not answer.
	Status int
	// Code and Description are the token endpoint's error and
	// error_description; empty when it gave none.
	Code, Description string
	// Err is the cause when the token endpoint did not answer (a timeout, a
	// refused connection, an SSRF refusal) or its answer held no token; nil
	// otherwise.
	Err error
}

// maxDescription bounds the token endpoint's words kept in a TokenError.
const maxDescription = 200

// Error returns, for example, `token endpoint answered HTTP 401
// Unauthorized: invalid_client (client authentication failed)`.
func (e *TokenError) Error() string {
	var b strings.Builder
	b.WriteString("token endpoint")
	switch {
	case e.Status != 0:
		b.WriteString(" answered HTTP " + strconv.Itoa(e.Status))
		if t := http.StatusText(e.Status); t != "" {
			b.WriteString(" " + t)
		}
		if e.Code != "" {
			b.WriteString(": " + e.Code)
			if e.Description != "" {
				b.WriteString(" (" + e.Description + ")")
			}
		}
		if e.Err != nil {
			b.WriteString(": " + e.Err.Error())
		}
	case e.Err != nil:
		b.WriteString(": " + e.Err.Error())
	}
	return b.String()
}

// Unwrap returns Err.
func (e *TokenError) Unwrap() error { return e.Err }

// Temporary reports whether the fetch is worth trying again later: the
// token endpoint answered 429 or a 5xx, or did not answer for a reason
// other than a refusal (the caller classifies Err, e.g. an SSRF refusal,
// itself).
func (e *TokenError) Temporary() bool {
	switch {
	case e.Status == http.StatusTooManyRequests, e.Status == http.StatusRequestTimeout:
		return true
	case e.Status >= 500:
		return true
	case e.Status != 0:
		return false
	}
	return e.Err != nil && !errors.Is(e.Err, errNoToken)
}

// errNoToken is the cause of a 2xx answer that held no usable token.
var errNoToken = errors.New("its answer held no access token")

// ProxyError is the egress proxy's refusal of a CONNECT.
type ProxyError struct {
	// Status is the proxy's HTTP status, e.g. 403 or 502.
	Status int
}

// Error returns, for example, "egress proxy answered CONNECT with HTTP 403 Forbidden".
func (e *ProxyError) Error() string {
	s := "egress proxy answered CONNECT with HTTP " + strconv.Itoa(e.Status)
	if t := http.StatusText(e.Status); t != "" {
		s += " " + t
	}
	return s
}

// Unwrap returns [ErrProxy].
func (e *ProxyError) Unwrap() error { return ErrProxy }

// Temporary reports whether the proxy's refusal may pass: a 5xx (it could
// not reach the target) or 429.
func (e *ProxyError) Temporary() bool {
	return e.Status >= 500 || e.Status == http.StatusTooManyRequests
}
