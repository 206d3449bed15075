package inbound

import (
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"
)

func FuzzParseStripeSignature(f *testing.F) {
	for _, s := range []string{
		"t=1492774577,v1=5257a869e7ecebeda32affa62cdca3fa51cad7e77a0e56ff536d0ce8e108d8bd,v0=6ffbb59b2300aae63f272406069a9788598b792a944a07aba816edb039989a39",
		"t=1,v1=a,v1=b", " t=12 , v1=ab ", "t=,v1=", "t=1,t=2,v1=x", "v1=ab", ",,,", "t=9223372036854775807,v1=00",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		h, ok := parseStripeSignature(v)
		if !ok {
			return
		}
		if h.t < 0 || h.n < 1 || h.n > maxStripeV1 {
			t.Fatalf("accepted %q as t=%d with %d signatures", v, h.t, h.n)
		}
		for i := range h.n {
			if h.v1[i] == "" || !strings.Contains(v, "v1="+h.v1[i]) {
				t.Fatalf("v1[%d] = %q is not in %q", i, h.v1[i], v)
			}
		}
	})
}

func FuzzDecodeMAC(f *testing.F) {
	for _, s := range []string{
		"sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17",
		"SHA256=757107EA0EB2509FC211221CCE984B8A37570B6D7586C22C46F4379C8B043E17",
		"dXNlZnVsIG1hY3MgYXJlIDMyIGJ5dGVzIGxvbmcgISE=", "sha256=", "=", " ", "sha256=zz",
	} {
		f.Add(s, "sha256=", true)
		f.Add(s, "", false)
	}
	f.Fuzz(func(t *testing.T, v, prefix string, isHex bool) {
		var buf [32]byte
		got, ok := decodeMAC(v, prefix, isHex, buf[:])
		if !ok {
			return
		}
		if len(got) != 32 {
			t.Fatalf("decoded %d bytes", len(got))
		}
		rest := strings.TrimSpace(v)[len(prefix):]
		var again string
		if isHex {
			again = hex.EncodeToString(got)
			rest = strings.ToLower(rest)
		} else if strings.HasSuffix(rest, "=") {
			again = base64.StdEncoding.EncodeToString(got)
		} else {
			again = base64.RawStdEncoding.EncodeToString(got)
		}
		if again != rest {
			t.Fatalf("%q decoded to %x, which encodes as %q", v, got, again)
		}
	})
}
