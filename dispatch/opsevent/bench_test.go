package opsevent

import (
	"bytes"
	"strconv"
	"testing"
)

// BenchmarkAbout is what the match stage pays for one of hookjet's own
// events: the mark's HMAC and the payload's endpoint.
func BenchmarkAbout(b *testing.B) {
	k := NewKey(bytes.Repeat([]byte{1}, 32))
	p := New(Options{Key: k})
	msg := p.message(Payload{Type: TypeDeadLetter, Endpoint: Endpoint{ID: "acme-crm", Description: "Acme's CRM"}, Tenant: "acme", Reason: "exhausted", Count: 12}, "id-1")
	h := map[string][]string(msg.Header)
	for b.Loop() {
		if _, ok := k.About("id-1", TypeDeadLetter, "acme", h, msg.Data); !ok {
			b.Fatal("not recognised")
		}
	}
}

// BenchmarkDeadLetterCounted is what a dead letter pays to be counted in
// its endpoint's minute (10,000 endpoints dead-lettering).
func BenchmarkDeadLetterCounted(b *testing.B) {
	p := New(Options{})
	eps := make([]Subject, 10000)
	for i := range eps {
		eps[i] = Subject{ID: "ep-" + strconv.Itoa(i), Tenant: "acme"}
	}
	i := 0
	for b.Loop() {
		p.Announce("dead_letter", eps[i%len(eps)], "exhausted", p.now())
		i++
	}
}
