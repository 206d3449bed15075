package console

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"time"
)

// A session is a signed, expiring token: base64url(JSON claims) "."
// base64url(HMAC-SHA256(key, first part)). The console keeps it in an
// HttpOnly cookie; the portal carries it in the link's path, so that it
// also works inside a customer's frame, where cookies are third-party.
type session struct {
	Kind     string `json:"k"`            // "console" or "portal"
	Tenant   string `json:"t,omitempty"`  // portal: the one tenant it may see
	ReadOnly bool   `json:"ro,omitempty"` // portal: no changes
	Expires  int64  `json:"exp"`          // unix seconds
	Nonce    string `json:"n"`            // random; the CSRF token derives from it
}

// Session kinds.
const (
	kindConsole = "console"
	kindPortal  = "portal"
)

// Errors of a session token; neither contains the token.
var (
	errBadSession     = errors.New("session is not valid")
	errExpiredSession = errors.New("session has expired")
)

// signer signs and checks sessions with one key.
type signer struct{ key []byte }

// deriveKey returns HMAC-SHA256(secret, label): a key of its own for each
// use of security.secret_key.
func deriveKey(secret []byte, label string) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(label))
	return m.Sum(nil)
}

func (s signer) mac(data string) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(data))
	return m.Sum(nil)
}

// issue returns a new session's token.
func (s signer) issue(sess session) string {
	nonce := make([]byte, 16)
	_, _ = rand.Read(nonce) // crypto/rand.Read never fails
	sess.Nonce = base64.RawURLEncoding.EncodeToString(nonce)
	b, _ := json.Marshal(sess) // a struct of strings and numbers
	payload := base64.RawURLEncoding.EncodeToString(b)
	return payload + "." + base64.RawURLEncoding.EncodeToString(s.mac(payload))
}

// check returns the session of token when its signature holds, it is of
// kind and it has not expired at now.
func (s signer) check(token, kind string, now time.Time) (session, error) {
	payload, sig, ok := strings.Cut(token, ".")
	if !ok || len(token) > 4096 {
		return session{}, errBadSession
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, s.mac(payload)) {
		return session{}, errBadSession
	}
	b, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		return session{}, errBadSession
	}
	var sess session
	if err := json.Unmarshal(b, &sess); err != nil || sess.Kind != kind || sess.Nonce == "" {
		return session{}, errBadSession
	}
	if now.Unix() >= sess.Expires {
		return session{}, errExpiredSession
	}
	return sess, nil
}

// csrf returns the session's CSRF token, which its forms carry.
func (s signer) csrf(sess session) string {
	return base64.RawURLEncoding.EncodeToString(s.mac("csrf\x00" + sess.Nonce))
}

// checkCSRF reports whether got is the session's CSRF token.
func (s signer) checkCSRF(sess session, got string) bool {
	want := s.csrf(sess)
	return got != "" && hmac.Equal([]byte(got), []byte(want))
}
