package testkit

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"testing"
)

// RefSign is a reference Standard Webhooks signature written from the
// specification with crypto/hmac only, independently of package signature:
// "v1," + base64(HMAC-SHA256(key, id + "." + ts + "." + body)).
func RefSign(key []byte, id, ts string, body []byte) string {
	return "v1," + RefMAC(key, id, ts, body)
}

// RefMAC is the base64 MAC part of [RefSign].
func RefMAC(key []byte, id, ts string, body []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "."))
	mac.Write(body)
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// DecodeKey decodes "whsec_<padded base64>" with nothing but the standard
// library, for code that cannot fail a test (an HTTP handler).
func DecodeKey(secret string) ([]byte, error) {
	return base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
}

// RefKey is [DecodeKey], failing the test on a malformed secret.
func RefKey(tb testing.TB, secret string) []byte {
	tb.Helper()
	key, err := DecodeKey(secret)
	if err != nil {
		tb.Fatalf("reference signer: bad secret: %v", err)
	}
	return key
}
