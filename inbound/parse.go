package inbound

import (
	"encoding/base64"
	"strconv"
	"strings"
	"unsafe"
)

// maxStripeV1 bounds the v1 signatures read from one Stripe-Signature
// header (Stripe sends one, two while a secret rolls).
const maxStripeV1 = 8

// stripeHeader is a parsed Stripe-Signature header.
type stripeHeader struct {
	t  int64
	v1 [maxStripeV1]string
	n  int
}

// parseStripeSignature parses "t=<unix seconds>,v1=<hex>[,v1=<hex>...]" as
// Stripe documents it: comma-separated key=value pairs, surrounding spaces
// ignored, keys other than t and v1 (v0, a test-mode scheme) ignored. It
// reports false without a valid t (exactly one) or without any v1. At most
// maxStripeV1 v1 values are kept.
func parseStripeSignature(v string) (stripeHeader, bool) {
	var h stripeHeader
	haveT := false
	for pair := range strings.SplitSeq(v, ",") {
		k, val, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if !ok {
			continue
		}
		switch k {
		case "t":
			t, err := strconv.ParseInt(val, 10, 64)
			if err != nil || t < 0 || haveT {
				return stripeHeader{}, false
			}
			h.t, haveT = t, true
		case "v1":
			if h.n < maxStripeV1 && val != "" {
				h.v1[h.n] = val
				h.n++
			}
		}
	}
	return h, haveT && h.n > 0
}

// decodeMAC reads a MAC of exactly len(dst) bytes from a header value:
// surrounding spaces trimmed, prefix (compared case-insensitively, as
// "sha256=" or "SHA256=") removed when it is not empty, then lower- or
// upper-case hex (isHex) or standard base64 (padded, or unpadded). It
// returns dst and true, or false for anything else. It does not allocate.
func decodeMAC(v, prefix string, isHex bool, dst []byte) ([]byte, bool) {
	v = strings.TrimSpace(v)
	if prefix != "" {
		if len(v) < len(prefix) || !strings.EqualFold(v[:len(prefix)], prefix) {
			return nil, false
		}
		v = v[len(prefix):]
	}
	if isHex {
		if len(v) != 2*len(dst) {
			return nil, false
		}
		for i := range dst {
			hi, ok1 := unhex(v[2*i])
			lo, ok2 := unhex(v[2*i+1])
			if !ok1 || !ok2 {
				return nil, false
			}
			dst[i] = hi<<4 | lo
		}
		return dst, true
	}
	enc := base64.StdEncoding.Strict()
	if !strings.HasSuffix(v, "=") {
		enc = base64.RawStdEncoding.Strict()
	}
	if enc.DecodedLen(len(v)) < len(dst) || enc.DecodedLen(len(v)) > len(dst)+2 {
		return nil, false
	}
	var buf [66]byte // a SHA-512 MAC with base64's slack
	// The decoder only reads src: a view of the string's bytes avoids a copy.
	n, err := enc.Decode(buf[:], unsafe.Slice(unsafe.StringData(v), len(v)))
	if err != nil || n != len(dst) {
		return nil, false
	}
	copy(dst, buf[:n])
	return dst, true
}

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
