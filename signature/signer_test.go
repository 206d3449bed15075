package signature

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/hookjet/hookjet/internal/testkit"
)

var update = flag.Bool("update", false, "rewrite testdata golden files from the reference implementation")

const goldenSignatures = "testdata/signatures.json"

// signVector is one golden signing vector.
type signVector struct {
	Name      string   `json:"name"`
	Secrets   []string `json:"secrets"` // whsec_<base64>
	ID        string   `json:"id"`
	Timestamp int64    `json:"timestamp"`
	Payload   string   `json:"payload_base64"`
	Signature string   `json:"signature"`
}

func (v signVector) keys(t testing.TB) [][]byte {
	t.Helper()
	keys := make([][]byte, len(v.Secrets))
	for i, s := range v.Secrets {
		k, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s, "whsec_"))
		if err != nil {
			t.Fatalf("%s: secret %d: %v", v.Name, i, err)
		}
		keys[i] = k
	}
	return keys
}

// refSignAll is the reference webhook-signature header value for keys.
func refSignAll(keys [][]byte, id string, ts int64, body []byte) string {
	sigs := make([]string, len(keys))
	for i, k := range keys {
		sigs[i] = testkit.RefSign(k, id, strconv.FormatInt(ts, 10), body)
	}
	return strings.Join(sigs, " ")
}

func (v signVector) body(t testing.TB) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(v.Payload)
	if err != nil {
		t.Fatalf("%s: payload: %v", v.Name, err)
	}
	return b
}

// vectorInputs are the inputs of the golden vectors; -update computes their
// signatures with refSign.
func vectorInputs() []signVector {
	b64 := func(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
	secret := func(b []byte) string { return "whsec_" + b64(b) }
	long := bytes.Repeat([]byte("0123456789abcdef"), 64)
	binary := []byte{0, 1, 2, '\n', '.', 0xff, 0xfe, '"', '\\'}
	longKey := bytes.Repeat([]byte{0xaa}, 131) // longer than SHA-256's block
	return []signVector{
		{Name: "standard webhooks spec example", Secrets: []string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"},
			ID: "msg_p5jXN8AQM9LWM0D4loKWxJek", Timestamp: 1614265330, Payload: b64([]byte(`{"test": 2432232314}`))},
		{Name: "empty body", Secrets: []string{secret([]byte("k"))}, ID: "evt_1", Timestamp: 1700000000},
		{Name: "two secrets (rotation)", Secrets: []string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", secret([]byte("new secret"))},
			ID: "evt_rotate", Timestamp: 1700000001, Payload: b64([]byte(`{"a":1}`))},
		{Name: "binary body and unicode id", Secrets: []string{secret([]byte{0, 1, 2, 3})},
			ID: "évt.✓", Timestamp: 1700000002, Payload: b64(binary)},
		{Name: "zero timestamp", Secrets: []string{secret([]byte("zero"))}, ID: "z", Timestamp: 0, Payload: b64([]byte("x"))},
		{Name: "1 KiB body", Secrets: []string{secret([]byte("kilobyte"))}, ID: "evt_long", Timestamp: 1893456000, Payload: b64(long)},
		{Name: "key longer than the block size", Secrets: []string{secret(longKey)}, ID: "evt_k", Timestamp: 1700000003,
			Payload: b64([]byte("{}"))},
		{Name: "no secrets", Secrets: []string{}, ID: "evt_none", Timestamp: 1700000004, Payload: b64([]byte("{}"))},
	}
}

func readVectors(t *testing.T) []signVector {
	t.Helper()
	if *update {
		vs := vectorInputs()
		for i := range vs {
			vs[i].Signature = refSignAll(vs[i].keys(t), vs[i].ID, vs[i].Timestamp, vs[i].body(t))
		}
		b, err := json.MarshalIndent(vs, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(goldenSignatures, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(goldenSignatures)
	if err != nil {
		t.Fatal(err)
	}
	var vs []signVector
	if err := json.Unmarshal(b, &vs); err != nil {
		t.Fatal(err)
	}
	if len(vs) < len(vectorInputs()) {
		t.Fatalf("%s has %d vectors, want %d (run go test -update)", goldenSignatures, len(vs), len(vectorInputs()))
	}
	return vs
}

func TestSignGolden(t *testing.T) {
	for _, v := range readVectors(t) {
		t.Run(v.Name, func(t *testing.T) {
			keys, body := v.keys(t), v.body(t)
			if ref := refSignAll(keys, v.ID, v.Timestamp, body); ref != v.Signature {
				t.Fatalf("reference = %q, golden = %q", ref, v.Signature)
			}
			s := NewSigner(keys...)
			if got := s.Sign(v.ID, v.Timestamp, body); got != v.Signature {
				t.Errorf("Sign = %q, want %q", got, v.Signature)
			}
			prefix := []byte("prefix:")
			if got := s.AppendSign(prefix, v.ID, v.Timestamp, body); string(got) != "prefix:"+v.Signature {
				t.Errorf("AppendSign = %q, want %q", got, "prefix:"+v.Signature)
			}
		})
	}
}

// TestSignSpecExample pins the Standard Webhooks specification's example,
// independently of the golden file.
func TestSignSpecExample(t *testing.T) {
	key, err := base64.StdEncoding.DecodeString("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	if err != nil {
		t.Fatal(err)
	}
	const want = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
	if got := NewSigner(key).Sign("msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, []byte(`{"test": 2432232314}`)); got != want {
		t.Errorf("Sign = %q, want %q", got, want)
	}
}

// TestSignerCopiesKeys checks that changing the caller's key afterwards does
// not change signatures.
func TestSignerCopiesKeys(t *testing.T) {
	key := []byte("secret")
	s := NewSigner(key)
	want := testkit.RefSign([]byte("secret"), "id", "1", nil)
	key[0] = 'X'
	if got := s.Sign("id", 1, nil); got != want {
		t.Errorf("Sign after mutating the key = %q, want %q", got, want)
	}
}

func TestAppendSignAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop items")
	}
	s := NewSigner([]byte("k1"), []byte("k2"))
	body := bytes.Repeat([]byte("x"), 500)
	buf := make([]byte, 0, 256)
	s.AppendSign(buf, "evt", 1, body) // warm the pools
	if n := testing.AllocsPerRun(100, func() { s.AppendSign(buf, "evt_123", 1700000000, body) }); n != 0 {
		t.Errorf("AppendSign allocates %v times per call, want 0", n)
	}
}

// TestSignerRedacts checks that no formatting of a Signer shows its key.
func TestSignerRedacts(t *testing.T) {
	const key = "hunter2-very-secret"
	s := NewSigner([]byte(key))
	var logs bytes.Buffer
	slog.New(slog.NewTextHandler(&logs, nil)).Info("x", "signer", s)
	for _, out := range []string{fmt.Sprint(s), fmt.Sprintf("%v %+v %#v %s", s, s, s, s), logs.String()} {
		if strings.Contains(out, key) || strings.Contains(out, fmt.Sprint([]byte(key))) {
			t.Errorf("formatted Signer reveals its key: %s", out)
		}
	}
	if !strings.Contains(logs.String(), "signer.keys=1") {
		t.Errorf("log = %q, want signer.keys=1", logs.String())
	}
}

func FuzzSign(f *testing.F) {
	f.Add([]byte("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"), []byte("k2"), "msg_p5jXN8AQM9LWM0D4loKWxJek", int64(1614265330), []byte(`{"test": 2432232314}`))
	f.Add([]byte{}, []byte{}, "", int64(0), []byte{})
	f.Add(bytes.Repeat([]byte{1}, 200), []byte("x"), "a.b.c", int64(-1), []byte{0, '.', 0xff})
	f.Fuzz(func(t *testing.T, k1, k2 []byte, id string, ts int64, body []byte) {
		keys := [][]byte{k1, k2}
		s := NewSigner(keys...)
		want := refSignAll(keys, id, ts, body)
		// Twice, so that pooled state is reused.
		for range 2 {
			if got := s.Sign(id, ts, body); got != want {
				t.Fatalf("Sign = %q, want %q", got, want)
			}
		}
	})
}

func BenchmarkSign(b *testing.B) {
	body := bytes.Repeat([]byte(`{"k":"v"},`), 50) // 500 bytes
	for _, n := range []int{1, 2} {
		keys := make([][]byte, n)
		for i := range keys {
			keys[i] = bytes.Repeat([]byte{byte(i + 1)}, 24)
		}
		s := NewSigner(keys...)
		b.Run(fmt.Sprintf("keys=%d/AppendSign", n), func(b *testing.B) {
			buf := make([]byte, 0, 256)
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				buf = s.AppendSign(buf[:0], "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body)
			}
		})
		b.Run(fmt.Sprintf("keys=%d/Sign", n), func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				s.Sign("msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body)
			}
		})
	}
}
