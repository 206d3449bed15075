package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"hash"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Standard Webhooks header names.
const (
	// HeaderID carries the event id, identical on every retry and replay.
	HeaderID = "webhook-id"
	// HeaderTimestamp carries the unix time in seconds of the attempt.
	HeaderTimestamp = "webhook-timestamp"
	// HeaderSignature carries space-separated "v1,<base64>" signatures.
	HeaderSignature = "webhook-signature"
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

// secretPrefix starts every Standard Webhooks secret.
const secretPrefix = "whsec_"

// maxTimestamp bounds webhook-timestamp so that converting it to a time.Time
// cannot overflow; anything larger is certainly too new.
const maxTimestamp = 1 << 62

// sigEncoding decodes signatures. Strict: exactly one encoding of a MAC is
// accepted, the one every Standard Webhooks sender produces.
var sigEncoding = base64.StdEncoding.Strict()

// maxPooledPrefix bounds the signed-prefix buffer kept for reuse, so that one
// request with a huge webhook-id does not pin memory.
const maxPooledPrefix = 4 << 10

// keyring holds the decoded signing keys. Verifier refers to it through a
// pointer so that formatting a Verifier with fmt, at any verb, prints an
// address rather than key bytes.
type keyring struct {
	keys [][]byte
}

// Verifier checks Standard Webhooks signatures. Create one with
// [NewVerifier]; the zero value is not usable. It is safe for concurrent use.
type Verifier struct {
	ring      *keyring
	tolerance time.Duration
	now       func() time.Time
	pool      sync.Pool // *scratch
}

// scratch holds per-call buffers and HMAC states, one per key, reused through
// Verifier.pool so that Verify does not allocate in the common case.
type scratch struct {
	macs   []hash.Hash
	sums   [][sha256.Size]byte
	prefix []byte
}

// NewVerifier returns a Verifier that accepts a request signed with any of
// secrets. A secret is "whsec_" followed by standard base64 (padded or not),
// or the base64 alone; surrounding white space is ignored. Several secrets
// let the sender rotate: add the new secret, let the sender switch, then drop
// the old one.
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
		k, err := decodeSecret(s)
		if err != nil {
			return nil, fmt.Errorf("secret %d: %w", i, err)
		}
		keys[i] = k
	}
	v := &Verifier{ring: &keyring{keys: keys}, tolerance: o.tolerance, now: o.now}
	v.pool.New = func() any {
		s := &scratch{
			macs: make([]hash.Hash, len(keys)),
			sums: make([][sha256.Size]byte, len(keys)),
		}
		for i, k := range keys {
			s.macs[i] = hmac.New(sha256.New, k)
		}
		return s
	}
	return v, nil
}

// Format implements fmt.Formatter so that a Verifier prints, at any verb, as
// a summary without key material: webhook.Verifier{secrets: 2, tolerance: 5m0s}.
func (v *Verifier) Format(f fmt.State, _ rune) {
	if v == nil || v.ring == nil {
		_, _ = fmt.Fprint(f, "webhook.Verifier(nil)")
		return
	}
	_, _ = fmt.Fprintf(f, "webhook.Verifier{secrets: %d, tolerance: %v}", len(v.ring.keys), v.tolerance)
}

// decodeSecret turns "whsec_<base64>" or "<base64>" into key bytes. Its
// errors never contain the secret.
func decodeSecret(s string) ([]byte, error) {
	s = strings.TrimPrefix(strings.TrimSpace(s), secretPrefix)
	k, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		k, err = base64.RawStdEncoding.DecodeString(s)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: not base64", ErrInvalidSecret)
	}
	if len(k) == 0 {
		return nil, fmt.Errorf("%w: empty", ErrInvalidSecret)
	}
	return k, nil
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
	id := first(h[keyID])
	if id == "" {
		return fmt.Errorf("%w: %s", ErrMissingHeader, HeaderID)
	}
	ts := first(h[keyTimestamp])
	if ts == "" {
		return fmt.Errorf("%w: %s", ErrMissingHeader, HeaderTimestamp)
	}
	sigs := h[keySignature]
	if !hasNonEmpty(sigs) {
		return fmt.Errorf("%w: %s", ErrMissingHeader, HeaderSignature)
	}
	if err := v.checkTimestamp(ts); err != nil {
		return err
	}

	s := v.pool.Get().(*scratch)
	defer v.put(s)
	s.prefix = append(s.prefix[:0], id...)
	s.prefix = append(s.prefix, '.')
	s.prefix = append(s.prefix, ts...)
	s.prefix = append(s.prefix, '.')
	for i, m := range s.macs {
		m.Reset()
		m.Write(s.prefix) // hash.Hash.Write never returns an error
		m.Write(body)
		m.Sum(s.sums[i][:0])
	}

	var got [sha256.Size + 2]byte // DecodedLen of 44 base64 characters is 33
	for _, header := range sigs {
		for entry := range strings.FieldsSeq(header) {
			version, sig, ok := strings.Cut(entry, ",")
			if !ok || version != "v1" || len(sig) != sigEncoding.EncodedLen(sha256.Size) {
				continue
			}
			n, err := sigEncoding.Decode(got[:], []byte(sig))
			if err != nil || n != sha256.Size {
				continue
			}
			for i := range s.sums {
				if hmac.Equal(got[:n], s.sums[i][:]) {
					return nil
				}
			}
		}
	}
	return ErrNoMatchingSignature
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

func (v *Verifier) put(s *scratch) {
	if cap(s.prefix) > maxPooledPrefix {
		s.prefix = nil
	}
	v.pool.Put(s)
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
