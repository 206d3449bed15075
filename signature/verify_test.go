package signature

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/hookjet/hookjet/internal/testkit"
)

func TestVerify(t *testing.T) {
	k1, k2, k3 := bytes.Repeat([]byte{1}, 24), bytes.Repeat([]byte{2}, 32), bytes.Repeat([]byte{3}, 64)
	body := []byte(`{"a":1}`)
	sig := func(k []byte) string { return testkit.RefSign(k, "evt_1", "1700000000", body) }
	mac := strings.TrimPrefix(sig(k1), "v1,")
	many := [][]byte{{5}, {6}, {7}, {8}, {9}, k1} // more keys than Verify keeps on the stack
	tests := []struct {
		name string
		keys [][]byte
		id   string
		ts   string
		sigs []string
		want bool
	}{
		{name: "one key", keys: [][]byte{k1}, sigs: []string{sig(k1)}, want: true},
		{name: "second key matches", keys: [][]byte{k2, k1}, sigs: []string{sig(k1)}, want: true},
		{name: "second entry matches", keys: [][]byte{k1}, sigs: []string{sig(k3) + " " + sig(k1)}, want: true},
		{name: "second header line matches", keys: [][]byte{k1}, sigs: []string{sig(k2), sig(k1)}, want: true},
		{name: "many keys", keys: many, sigs: []string{sig(k1)}, want: true},
		{name: "wrong key", keys: [][]byte{k2}, sigs: []string{sig(k1)}},
		{name: "no keys", keys: nil, sigs: []string{sig(k1)}},
		{name: "no header", keys: [][]byte{k1}},
		{name: "other id", keys: [][]byte{k1}, id: "evt_2", sigs: []string{sig(k1)}},
		{name: "timestamp as written, not as a number", keys: [][]byte{k1}, ts: "01700000000", sigs: []string{sig(k1)}},
		{name: "other version", keys: [][]byte{k1}, sigs: []string{"v2," + mac}},
		{name: "no version", keys: [][]byte{k1}, sigs: []string{mac}},
		{name: "unpadded", keys: [][]byte{k1}, sigs: []string{"v1," + strings.TrimRight(mac, "=")}},
		{name: "url alphabet", keys: [][]byte{k1}, sigs: []string{"v1," + base64.URLEncoding.EncodeToString(make([]byte, 32))}},
		{name: "truncated", keys: [][]byte{k1}, sigs: []string{sig(k1)[:20]}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, ts := "evt_1", "1700000000"
			if tt.id != "" {
				id = tt.id
			}
			if tt.ts != "" {
				ts = tt.ts
			}
			if got := NewSigner(tt.keys...).Verify(id, ts, tt.sigs, body); got != tt.want {
				t.Errorf("Verify = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestSignVerifyRoundTrip checks that what Sign produces Verify accepts, with
// every key on its own and with the keys reordered.
func TestSignVerifyRoundTrip(t *testing.T) {
	keys := [][]byte{bytes.Repeat([]byte{1}, 24), bytes.Repeat([]byte{2}, 64)}
	signed := NewSigner(keys...).Sign("evt", 1700000000, []byte("body"))
	for _, ks := range [][][]byte{keys, {keys[1]}, {keys[0]}, {keys[1], keys[0]}} {
		if !NewSigner(ks...).Verify("evt", "1700000000", []string{signed}, []byte("body")) {
			t.Errorf("Verify with %d keys rejects Sign's output", len(ks))
		}
	}
}

func TestVerifyAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop items")
	}
	k1, k2 := bytes.Repeat([]byte{1}, 24), bytes.Repeat([]byte{2}, 32)
	s := NewSigner(k1, k2)
	body := bytes.Repeat([]byte("x"), 500)
	sigs := []string{"v1,garbage " + testkit.RefSign(k2, "evt_123", "1700000000", body)}
	if !s.Verify("evt_123", "1700000000", sigs, body) { // also warms the pools
		t.Fatal("Verify rejects a reference signature")
	}
	if n := testing.AllocsPerRun(100, func() { s.Verify("evt_123", "1700000000", sigs, body) }); n != 0 {
		t.Errorf("Verify allocates %v times per call, want 0", n)
	}
}

func BenchmarkVerify(b *testing.B) {
	body := []byte(strings.Repeat(`{"k":"v"}`, 110)) // ~1 KiB
	k1, k2 := bytes.Repeat([]byte{1}, 24), bytes.Repeat([]byte{2}, 32)
	sigs := []string{testkit.RefSign(k1, "msg_p5jXN8AQM9LWM0D4loKWxJek", "1614265330", body)}
	s := NewSigner(k2, k1)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if !s.Verify("msg_p5jXN8AQM9LWM0D4loKWxJek", "1614265330", sigs, body) {
			b.Fatal("rejected")
		}
	}
}
