package inbound

import (
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/hookjet/hookjet/config"
)

// vector is one signed request of testdata/vectors.json, built by
// testdata/gen_vectors.py from each provider's documented algorithm.
type vector struct {
	Name   string `json:"name"`
	Source struct {
		ID         string   `json:"id"`
		Scheme     string   `json:"scheme"`
		Secrets    []string `json:"secrets"`
		Header     string   `json:"header"`
		Algorithm  string   `json:"algorithm"`
		Encoding   string   `json:"encoding"`
		Prefix     string   `json:"prefix"`
		IDHeader   string   `json:"id_header"`
		TypeHeader string   `json:"type_header"`
	} `json:"source"`
	Headers map[string]string `json:"headers"`
	Body    string            `json:"body"`
	Now     int64             `json:"now"`
	Outcome string            `json:"outcome"`
	ID      string            `json:"id"`
	Type    string            `json:"type"`
}

func loadVectors(t *testing.T) []vector {
	t.Helper()
	raw, err := os.ReadFile("testdata/vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var vs []vector
	if err := json.Unmarshal(raw, &vs); err != nil {
		t.Fatal(err)
	}
	return vs
}

func (v vector) config() config.InboundSource {
	s := v.Source
	src := config.InboundSource{ID: s.ID, Scheme: s.Scheme, Header: s.Header, Algorithm: s.Algorithm,
		Encoding: s.Encoding, Prefix: s.Prefix, IDHeader: s.IDHeader, TypeHeader: s.TypeHeader}
	for _, sec := range s.Secrets {
		src.Secrets = append(src.Secrets, config.NewSecret(sec))
	}
	return src
}

// outcomeOf runs a verifier the way the gateway does and names the outcome.
func outcomeOf(v verifier, h http.Header, body []byte, now time.Time) (Outcome, meta) {
	if !v.present(h) {
		return MissingSignature, meta{}
	}
	m, err := v.verify(h, body, now)
	switch {
	case errors.Is(err, ErrOutsideWindow):
		return OutsideWindow, meta{}
	case err != nil:
		return InvalidSignature, meta{}
	}
	return Accepted, m
}

func TestVectors(t *testing.T) {
	vs := loadVectors(t)
	seen := map[string]bool{}
	for _, tt := range vs {
		t.Run(tt.Name, func(t *testing.T) {
			src := tt.config()
			c := config.Default()
			c.Inbound.Sources = []config.InboundSource{src}
			if err := c.Validate(); err != nil {
				t.Fatalf("the vector's source does not validate: %v", err)
			}
			v, err := newVerifier(src)
			if err != nil {
				t.Fatal(err)
			}
			h := http.Header{}
			for k, val := range tt.Headers {
				h.Set(k, val)
			}
			got, m := outcomeOf(v, h, []byte(tt.Body), time.Unix(tt.Now, 0))
			if got.String() != tt.Outcome {
				t.Fatalf("outcome = %s, want %s", got, tt.Outcome)
			}
			seen[src.Scheme+"/"+tt.Outcome] = true
			if got != Accepted {
				return
			}
			if id := eventID(m.id, []byte(tt.Body)); id != tt.ID || m.typ != tt.Type {
				t.Errorf("id, type = %q, %q; want %q, %q", id, m.typ, tt.ID, tt.Type)
			}
		})
	}
	for _, scheme := range []string{"standard", "stripe", "github", "shopify", "hmac"} {
		for _, o := range []string{"accepted", "invalid_signature", "missing_signature"} {
			if !seen[scheme+"/"+o] {
				t.Errorf("no vector of scheme %s with outcome %s", scheme, o)
			}
		}
	}
	for _, scheme := range []string{"standard", "stripe"} {
		if !seen[scheme+"/outside_window"] {
			t.Errorf("no vector of scheme %s outside the window", scheme)
		}
	}
}

func TestParseStripeSignature(t *testing.T) {
	tests := []struct {
		in   string
		ok   bool
		t    int64
		v1   []string
		name string
	}{
		{name: "one", in: "t=12,v1=ab", ok: true, t: 12, v1: []string{"ab"}},
		{name: "spaces and v0", in: " t=12 , v0=zz, v1=ab ,v1=cd", ok: true, t: 12, v1: []string{"ab", "cd"}},
		{name: "no t", in: "v1=ab"},
		{name: "no v1", in: "t=12,v0=ab"},
		{name: "two t", in: "t=1,t=2,v1=ab"},
		{name: "bad t", in: "t=x,v1=ab"},
		{name: "negative t", in: "t=-1,v1=ab"},
		{name: "empty", in: ""},
		{name: "empty v1", in: "t=1,v1="},
		{name: "junk pairs", in: "t=1,garbage,v1=ab,=", ok: true, t: 1, v1: []string{"ab"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, ok := parseStripeSignature(tt.in)
			if ok != tt.ok {
				t.Fatalf("ok = %v, want %v", ok, tt.ok)
			}
			if !ok {
				return
			}
			if h.t != tt.t || h.n != len(tt.v1) {
				t.Fatalf("t=%d n=%d, want t=%d n=%d", h.t, h.n, tt.t, len(tt.v1))
			}
			for i, want := range tt.v1 {
				if h.v1[i] != want {
					t.Errorf("v1[%d] = %q, want %q", i, h.v1[i], want)
				}
			}
		})
	}
}

func TestDecodeMAC(t *testing.T) {
	tests := []struct {
		name, in, prefix string
		hex              bool
		size             int
		ok               bool
	}{
		{"hex", "0aff", "", true, 2, true},
		{"upper hex", "0AFF", "", true, 2, true},
		{"prefixed", "sha256=0aff", "sha256=", true, 2, true},
		{"prefix any case", "SHA256=0aff", "sha256=", true, 2, true},
		{"missing prefix", "0aff", "sha256=", true, 2, false},
		{"short", "0af", "", true, 2, false},
		{"long", "0aff00", "", true, 2, false},
		{"not hex", "0agg", "", true, 2, false},
		{"base64 padded", "Cv8=", "", false, 2, true},
		{"base64 raw", "Cv8", "", false, 2, true},
		{"base64 wrong size", "Cv8AAA==", "", false, 2, false},
		{"base64 bad", "C!8=", "", false, 2, false},
		{"spaces", "  0aff ", "", true, 2, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := make([]byte, tt.size)
			got, ok := decodeMAC(tt.in, tt.prefix, tt.hex, dst)
			if ok != tt.ok {
				t.Fatalf("ok = %v, want %v", ok, tt.ok)
			}
			if ok && (got[0] != 0x0a || got[1] != 0xff) {
				t.Errorf("got %x", got)
			}
		})
	}
}

func TestEventID(t *testing.T) {
	long := make([]byte, maxID+1)
	for i := range long {
		long[i] = 'a'
	}
	tests := []struct {
		name, id, want string
	}{
		{"kept", "evt_1", "evt_1"},
		{"from the body", "", "sha256:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"},
		{"control characters", "a\nb", "sha256:"},
		{"too long", string(long), "sha256:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := eventID(tt.id, []byte("hello"))
			if len(tt.want) == len("sha256:") {
				if got[:7] != "sha256:" || len(got) != 7+64 {
					t.Errorf("eventID = %q, want a sha256: id", got)
				}
				return
			}
			if got != tt.want {
				t.Errorf("eventID = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestOutcomeNames(t *testing.T) {
	want := []string{"accepted", "duplicate", "missing_signature", "invalid_signature", "outside_window", "too_large", "unavailable"}
	for i, w := range want {
		if got := Outcome(i).String(); got != w {
			t.Errorf("Outcome(%d) = %q, want %q", i, got, w)
		}
	}
	if Outcome(len(want)).String() != "unknown" {
		t.Errorf("out of range outcome has a name")
	}
}

// Verifying a forged request allocates nothing: a flood of them costs CPU
// for the MACs only.
func TestInvalidSignatureAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop items")
	}
	for _, tt := range loadVectors(t) {
		if tt.Outcome != "invalid_signature" {
			continue
		}
		v, err := newVerifier(tt.config())
		if err != nil {
			t.Fatal(err)
		}
		h := http.Header{}
		for k, val := range tt.Headers {
			h.Set(k, val)
		}
		body, now := []byte(tt.Body), time.Unix(tt.Now, 0)
		v.verify(h, body, now) // warm the pools
		if n := testing.AllocsPerRun(100, func() { _, _ = v.verify(h, body, now) }); n > 0 {
			t.Errorf("%s: %v allocations per forged request", tt.Name, n)
		}
	}
}

// Sign produces what each scheme's verifier accepts, with the id and type
// the gateway then records.
func TestSignVerifies(t *testing.T) {
	now := time.Unix(1764547200, 0)
	for _, tt := range loadVectors(t) {
		if tt.Outcome != "accepted" {
			continue
		}
		t.Run(tt.Name, func(t *testing.T) {
			src := tt.config()
			ev, err := NewTestEvent(src, "evt_test_1", now)
			if err != nil {
				t.Fatal(err)
			}
			v, err := newVerifier(src)
			if err != nil {
				t.Fatal(err)
			}
			got, m := outcomeOf(v, ev.Header, ev.Body, now)
			if got != Accepted {
				t.Fatalf("outcome = %s", got)
			}
			if id := eventID(m.id, ev.Body); id != ev.ID || m.typ != ev.Type {
				t.Errorf("recorded id, type = %q, %q; NewTestEvent says %q, %q", id, m.typ, ev.ID, ev.Type)
			}
		})
	}
}
