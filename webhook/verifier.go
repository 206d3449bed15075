package webhook

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/hookjet/hookjet/signature"
)

// Standard Webhooks header names, from package signature.
const (
	// HeaderID carries the event id, identical on every retry and replay.
	HeaderID = signature.HeaderID
	// HeaderTimestamp carries the unix time in seconds of the attempt.
	HeaderTimestamp = signature.HeaderTimestamp
	// HeaderSignature carries space-separated "v1,<base64>" signatures.
	HeaderSignature = signature.HeaderSignature
)

// Canonical forms of the header names, for map lookups that neither
// allocate nor re-canonicalize on every request.
const (
	keyID        = "Webhook-Id"
	keyTimestamp = "Webhook-Timestamp"
	keySignature = "Webhook-Signature"
)

// DefaultTolerance is how far webhook-timestamp may lie from the current time
// unless [WithTolerance] says otherwise, as Standard Webhooks recommends.
const DefaultTolerance = 5 * time.Minute

// maxTimestamp bounds webhook-timestamp so that converting it to a time.Time
// cannot overflow; anything larger is certainly too new.
const maxTimestamp = 1 << 62

// Verifier checks Standard Webhooks signatures. Create one with
// [NewVerifier]; the zero value is not usable. It is safe for concurrent use.
type Verifier struct {
	signer    *signature.Signer
	tolerance time.Duration
	now       func() time.Time
}

// NewVerifier returns a Verifier that accepts a request signed with any of
// secrets. A secret is "whsec_" followed by standard base64 (padded or not)
// of 24 to 64 bytes; surrounding white space is ignored. These are the rules
// of [signature.DecodeSecret], which hookjet's configuration also applies.
// Several secrets let the sender rotate: add the new secret, let the sender
// switch, then drop the old one.
func NewVerifier(secrets []string, opts ...Option) (*Verifier, error) {
	if len(secrets) == 0 {
		return nil, ErrNoSecrets
	}
	o := buildOptions(opts)
	if o.tolerance <= 0 {
		return nil, fmt.Errorf("%w: %v", ErrInvalidTolerance, o.tolerance)
	}
	keys := make([][]byte, len(secrets))
	for i, s := range secrets {
		k, err := signature.DecodeSecret(s)
		if err != nil {
			return nil, fmt.Errorf("secret %d: %w", i, err)
		}
		keys[i] = k
	}
	return &Verifier{signer: signature.NewSigner(keys...), tolerance: o.tolerance, now: o.now}, nil
}

// Format implements fmt.Formatter so that a Verifier prints, at any verb, as
// a summary without key material: webhook.Verifier{secrets: 2, tolerance: 5m0s}.
func (v *Verifier) Format(f fmt.State, _ rune) {
	if v == nil || v.signer == nil {
		_, _ = fmt.Fprint(f, "webhook.Verifier(nil)")
		return
	}
	_, _ = fmt.Fprintf(f, "webhook.Verifier{secrets: %d, tolerance: %v}", v.signer.Len(), v.tolerance)
}

// Verify reports whether a request with headers h and body body was signed
// by the sender, returning nil if so. It checks, in this order, that
// webhook-id, webhook-timestamp and webhook-signature are present
// ([ErrMissingHeader]); that webhook-timestamp is an integer
// ([ErrInvalidTimestamp]) no further from now than the tolerance, in either
// direction ([ErrTimestampTooOld], [ErrTimestampTooNew]); and that some "v1,"
// entry of webhook-signature matches the HMAC of any secret
// ([ErrNoMatchingSignature]). Entries of other versions are ignored.
// Signatures are compared in constant time.
//
// body must be the raw request body, byte for byte: verify before decoding.
func (v *Verifier) Verify(h http.Header, body []byte) error {
	return v.verify(first(h[keyID]), first(h[keyTimestamp]), h[keySignature], body)
}

// checkTimestamp parses ts and compares it with the clock.
func (v *Verifier) checkTimestamp(ts string) error {
	sec, err := strconv.ParseUint(ts, 10, 64)
	if err != nil {
		// The value is not echoed: it is attacker-controlled and unbounded.
		return fmt.Errorf("%w: not an integer number of seconds", ErrInvalidTimestamp)
	}
	if sec > maxTimestamp {
		return ErrTimestampTooNew
	}
	age := v.now().Sub(time.Unix(int64(sec), 0))
	switch {
	case age > v.tolerance:
		return fmt.Errorf("%w: %v old, tolerance %v", ErrTimestampTooOld, age.Truncate(time.Second), v.tolerance)
	case age < -v.tolerance:
		return fmt.Errorf("%w: %v ahead, tolerance %v", ErrTimestampTooNew, (-age).Truncate(time.Second), v.tolerance)
	}
	return nil
}

// first returns the first value of a header, like http.Header.Get.
func first(values []string) string {
	if len(values) == 0 {
		return ""
	}
	return values[0]
}

func hasNonEmpty(values []string) bool {
	for _, s := range values {
		if strings.TrimSpace(s) != "" {
			return true
		}
	}
	return false
}
