package deliver

import (
	"errors"
	"fmt"
	"net/netip"
	"time"
)

var (
	// ErrRefused is wrapped by every error a [Guard] returns: the address
	// is one hookjet does not connect to. Such a delivery is [Rejected].
	ErrRefused = errors.New("refused")

	// ErrInsecureURL is returned for an http:// URL when
	// [ClientOptions.HTTPSOnly] is set. Such a delivery is [Rejected].
	ErrInsecureURL = errors.New("refused: http:// URL while HTTPS is required")

	// ErrInvalidURL is returned for a URL that cannot be parsed or whose
	// scheme is neither http nor https. Such a delivery is [Rejected].
	ErrInvalidURL = errors.New("invalid endpoint URL")

	// ErrInvalidProxy is returned for an endpoint's proxy that is neither
	// "none" nor an http:// URL. Such a delivery is [Rejected].
	ErrInvalidProxy = errors.New("invalid egress proxy")

	// ErrInvalidAuth is returned for an endpoint whose auth cannot be
	// opened (configuration validates it first). Such a delivery is
	// [Rejected].
	ErrInvalidAuth = errors.New("invalid endpoint auth")
)

// RefusedError is the error a [Guard] returns for an address it refuses.
// It wraps [ErrRefused]; match it with errors.As to get the address.
type RefusedError struct {
	// Addr is the refused address, as it was presented to the guard.
	Addr netip.Addr
	// Kind describes the range Addr falls in, with its article,
	// e.g. "a private address".
	Kind string
	// Why, when not empty, says which rule refused it, e.g. "the
	// endpoint belongs to a tenant: portal.allow_private_networks is off".
	Why string
	// Name, when not empty, is the host name that stands for Addr
	// ("localhost").
	Name string
}

// Error returns, for example, "refused: 10.0.0.5 is a private address" or
// "refused: localhost is 127.0.0.1, a loopback address".
func (e *RefusedError) Error() string {
	msg := "refused: " + e.Kind
	switch {
	case e.Addr.IsValid() && e.Name != "":
		msg = fmt.Sprintf("refused: %s is %s, %s", e.Name, e.Addr, e.Kind)
	case e.Addr.IsValid():
		msg = fmt.Sprintf("refused: %s is %s", e.Addr, e.Kind)
	}
	if e.Why != "" {
		msg += " (" + e.Why + ")"
	}
	return msg
}

// Unwrap returns [ErrRefused].
func (e *RefusedError) Unwrap() error { return ErrRefused }

// TimeoutError reports that an attempt hit its own deadline
// ([Request.Timeout]) before the response was fully read.
type TimeoutError struct {
	// After is the request timeout that expired.
	After time.Duration
	// Err is the underlying error (usually wrapping context.DeadlineExceeded).
	Err error
}

// Error returns, for example, "timeout after 15s".
func (e *TimeoutError) Error() string { return "timeout after " + e.After.String() }

// Unwrap returns the underlying error.
func (e *TimeoutError) Unwrap() error { return e.Err }

// Timeout reports true, so that a TimeoutError satisfies net.Error's
// Timeout method.
func (e *TimeoutError) Timeout() bool { return true }
