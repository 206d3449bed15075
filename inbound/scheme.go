package inbound

import (
	"crypto/hmac"
	"crypto/sha1" //nolint:gosec // scheme hmac offers sha1 because providers still sign with it
	"crypto/sha256"
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"hash"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/signature"
)

// verifier checks the signature of one scheme.
type verifier interface {
	// present reports whether the request carries the scheme's signature
	// headers at all; it is checked before the body is read.
	present(h http.Header) bool
	// verify checks the request's signature over body with every secret
	// and returns the event's id and type as the provider names them (either
	// may be empty). It returns an error wrapping ErrInvalidSignature or
	// ErrOutsideWindow.
	verify(h http.Header, body []byte, now time.Time) (meta, error)
}

// meta is what a provider says about its event.
type meta struct {
	id, typ string
	// unsignedID means the signature does not cover id (it signs the
	// body only): anyone holding one signed request can resend it under a
	// new id, so copies are recognised by the body's hash.
	unsignedID bool
}

// newVerifier builds the verifier of a validated source.
func newVerifier(src config.InboundSource) (verifier, error) {
	raw := make([][]byte, len(src.Secrets))
	for i, s := range src.Secrets {
		raw[i] = []byte(s.Reveal())
	}
	switch src.Scheme {
	case config.SchemeStandard:
		keys := make([][]byte, len(src.Secrets))
		for i, s := range src.Secrets {
			k, err := signature.DecodeSecret(s.Reveal())
			if err != nil {
				return nil, fmt.Errorf("secrets[%d]: %w", i, err)
			}
			keys[i] = k
		}
		return &standardVerifier{signer: signature.NewSigner(keys...), tolerance: src.Window()}, nil
	case config.SchemeStripe:
		return &stripeVerifier{keys: newMACKeys(raw, sha256.New), tolerance: src.Window()}, nil
	case config.SchemeGitHub:
		return &hmacVerifier{
			header: "X-Hub-Signature-256", prefix: "sha256=", hex: true, size: sha256.Size,
			idHeader: "X-Github-Delivery", typeHeader: "X-Github-Event",
			keys: newMACKeys(raw, sha256.New),
		}, nil
	case config.SchemeShopify:
		return &hmacVerifier{
			header: "X-Shopify-Hmac-Sha256", size: sha256.Size,
			idHeader: "X-Shopify-Webhook-Id", typeHeader: "X-Shopify-Topic", slashToDot: true,
			keys: newMACKeys(raw, sha256.New),
		}, nil
	case config.SchemeHMAC:
		newHash, size := sha256.New, sha256.Size
		switch src.Algorithm {
		case "sha1":
			newHash, size = sha1.New, sha1.Size
		case "sha512":
			newHash, size = sha512.New, sha512.Size
		}
		return &hmacVerifier{
			header: http.CanonicalHeaderKey(src.Header), prefix: src.Prefix, hex: src.Encoding != "base64", size: size,
			idHeader: canonicalOrEmpty(src.IDHeader), typeHeader: canonicalOrEmpty(src.TypeHeader),
			keys: newMACKeys(raw, newHash),
		}, nil
	}
	return nil, fmt.Errorf("scheme %q: unknown", src.Scheme)
}

func canonicalOrEmpty(h string) string {
	if h == "" {
		return ""
	}
	return http.CanonicalHeaderKey(h)
}

// first returns the first value of header key (canonical form), without
// the allocation of http.Header.Get's canonicalisation.
func first(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// inWindow reports whether the unix time ts lies within tolerance of now,
// in either direction.
func inWindow(ts int64, now time.Time, tolerance time.Duration) bool {
	d := now.Unix() - ts
	if d < 0 {
		d = -d
	}
	return d <= int64(tolerance/time.Second)
}

// bodyMeta reads the top-level "id" and "type" of a JSON body; a body that
// is not a JSON object yields neither.
func bodyMeta(body []byte) meta {
	var m struct {
		ID   any    `json:"id"`
		Type string `json:"type"`
	}
	if json.Unmarshal(body, &m) != nil {
		return meta{}
	}
	var id string
	switch v := m.ID.(type) {
	case string:
		id = v
	case float64:
		id = strconv.FormatFloat(v, 'f', -1, 64)
	}
	return meta{id: id, typ: m.Type}
}

// standardVerifier is Standard Webhooks: webhook-id, webhook-timestamp and
// webhook-signature ("v1,<base64>" entries) over id.timestamp.body, with
// package signature; the type is the body's "type".
type standardVerifier struct {
	signer    *signature.Signer
	tolerance time.Duration
}

const (
	keyWebhookID        = "Webhook-Id"
	keyWebhookTimestamp = "Webhook-Timestamp"
	keyWebhookSignature = "Webhook-Signature"
)

func (v *standardVerifier) present(h http.Header) bool {
	return first(h, keyWebhookSignature) != "" && first(h, keyWebhookID) != "" && first(h, keyWebhookTimestamp) != ""
}

func (v *standardVerifier) verify(h http.Header, body []byte, now time.Time) (meta, error) {
	id, ts := first(h, keyWebhookID), first(h, keyWebhookTimestamp)
	if !v.signer.Verify(id, ts, h[keyWebhookSignature], body) {
		return meta{}, ErrInvalidSignature
	}
	t, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || !inWindow(t, now, v.tolerance) {
		return meta{}, ErrOutsideWindow
	}
	return meta{id: id, typ: bodyMeta(body).typ}, nil
}

// macKey is one secret with a pool of HMAC states keyed by it, so that
// verifying neither re-derives the pads nor allocates.
type macKey struct {
	pool sync.Pool // of *macState
}

type macState struct {
	mac hash.Hash
	buf []byte // the signed prefix (stripe: t + ".")
	sum [sha512.Size]byte
}

func newMACKeys(secrets [][]byte, newHash func() hash.Hash) []*macKey {
	keys := make([]*macKey, len(secrets))
	for i, s := range secrets {
		key := append([]byte(nil), s...)
		keys[i] = &macKey{}
		keys[i].pool.New = func() any { return &macState{mac: hmac.New(newHash, key), buf: make([]byte, 0, 32)} }
	}
	return keys
}

// matches reports whether got is the MAC of prefix followed by body under
// this key, compared in constant time.
func (k *macKey) matches(got, prefix, body []byte) bool {
	st := k.pool.Get().(*macState)
	defer k.pool.Put(st)
	st.mac.Reset()
	if len(prefix) > 0 {
		// Copied, so that the caller's stack buffer does not escape
		// through the interface call.
		st.buf = append(st.buf[:0], prefix...)
		st.mac.Write(st.buf) // hash.Hash.Write never fails
	}
	st.mac.Write(body)
	return hmac.Equal(st.mac.Sum(st.sum[:0]), got)
}

// anyMatches reports whether got matches under any key. Every key is tried,
// so the time taken does not depend on which one matched.
func anyMatches(keys []*macKey, got, prefix, body []byte) bool {
	ok := false
	for _, k := range keys {
		if k.matches(got, prefix, body) {
			ok = true
		}
	}
	return ok
}

// hmacVerifier is an HMAC of the body in one header: github
// (X-Hub-Signature-256: sha256=<hex>), shopify (X-Shopify-Hmac-Sha256:
// <base64>) and the configurable scheme hmac.
type hmacVerifier struct {
	header     string // canonical
	prefix     string
	hex        bool // else standard base64
	size       int  // MAC bytes
	idHeader   string
	typeHeader string
	slashToDot bool // Shopify topics: orders/create is orders.create
	keys       []*macKey
}

func (v *hmacVerifier) present(h http.Header) bool { return first(h, v.header) != "" }

func (v *hmacVerifier) verify(h http.Header, body []byte, _ time.Time) (meta, error) {
	var buf [sha512.Size]byte
	got, ok := decodeMAC(first(h, v.header), v.prefix, v.hex, buf[:v.size])
	if !ok || !anyMatches(v.keys, got, nil, body) {
		return meta{}, ErrInvalidSignature
	}
	m := meta{unsignedID: true}
	if v.idHeader != "" {
		m.id = first(h, v.idHeader)
	}
	if v.typeHeader != "" {
		m.typ = first(h, v.typeHeader)
		if v.slashToDot {
			m.typ = strings.ReplaceAll(m.typ, "/", ".")
		}
	}
	return m, nil
}

// stripeVerifier is Stripe's scheme: Stripe-Signature "t=<unix>,v1=<hex>"
// (several v1 while Stripe rolls a secret) over t + "." + body, keyed by the
// secret string; id and type are the body's.
type stripeVerifier struct {
	keys      []*macKey
	tolerance time.Duration
}

const keyStripeSignature = "Stripe-Signature"

func (v *stripeVerifier) present(h http.Header) bool { return first(h, keyStripeSignature) != "" }

func (v *stripeVerifier) verify(h http.Header, body []byte, now time.Time) (meta, error) {
	sh, ok := parseStripeSignature(first(h, keyStripeSignature))
	if !ok {
		return meta{}, ErrInvalidSignature
	}
	var prefix [24]byte
	p := append(strconv.AppendInt(prefix[:0], sh.t, 10), '.')
	matched := false
	for i := range sh.n {
		var buf [sha256.Size]byte
		got, ok := decodeMAC(sh.v1[i], "", true, buf[:])
		if ok && anyMatches(v.keys, got, p, body) {
			matched = true
		}
	}
	if !matched {
		return meta{}, ErrInvalidSignature
	}
	if !inWindow(sh.t, now, v.tolerance) {
		return meta{}, ErrOutsideWindow
	}
	return bodyMeta(body), nil
}
