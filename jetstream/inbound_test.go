package jetstream

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

func TestSanitizeType(t *testing.T) {
	tests := []struct{ in, want string }{
		{"payment_intent.succeeded", "payment_intent.succeeded"},
		{"orders.create", "orders.create"},
		{"push", "push"},
		{"", "untyped"},
		{"thing happened", "thing_happened"},
		{"a..b", "a._.b"},
		{".a", "_.a"},
		{"a.", "a._"},
		{".", "_._"},
		{"a*b.>", "a_b._"},
		{"é", "__"},
		{"tab\there", "tab_here"},
		{"Mixed-Case_1", "Mixed-Case_1"},
		{strings.Repeat("a", 300), strings.Repeat("a", 255)},
	}
	for _, tt := range tests {
		if got := SanitizeType(tt.in); got != tt.want {
			t.Errorf("SanitizeType(%q) = %q, want %q", tt.in, got, tt.want)
		}
		got := InboundSubject("src", tt.in)
		for _, tok := range strings.Split(got, ".") {
			if tok == "" || strings.ContainsAny(tok, " \t*>") {
				t.Errorf("InboundSubject(src, %q) = %q has an invalid token", tt.in, got)
			}
		}
	}
}

func TestInboundSeenKey(t *testing.T) {
	a, b := inboundSeenKey("stripe", "evt_1"), inboundSeenKey("stripe", "evt_2")
	if a == b || !strings.HasPrefix(a, "stripe.") || len(a) != len("stripe.")+32 {
		t.Errorf("keys %q, %q", a, b)
	}
	if inboundSeenKey("gh", "x y\n*>") == "" || strings.ContainsAny(inboundSeenKey("gh", "x y\n*>"), " \n*>") {
		t.Error("a key carries the id's bytes")
	}
	if InboundMsgID("gh", "d1") != "gh:d1" {
		t.Error("Nats-Msg-Id is not <source>:<id>")
	}
}

// A store answered with an error may be stored all the same: the client
// sends the publish again once it has reconnected, or the PubAck is lost.
// The provider was told it was not stored, so its retry is accepted, not a
// duplicate; a further copy is a duplicate.
func TestInboundRetryAfterAFailedStoreIsAccepted(t *testing.T) {
	js := startSeenJS(t, 0)
	ctx := context.Background()
	p := openSeenProcess(t, js.Conn().ConnectedUrl(), t.TempDir())
	ev := InboundEvent{Source: "stripe", ID: "evt_late", Type: "charge.succeeded", Body: []byte(`{}`), ReceivedAt: time.Now()}
	store := OpenInboundStore(p.js, p.seen, time.Nanosecond, nil)
	if _, err := store.Store(ctx, ev); err == nil {
		t.Fatal("a store with no time for its PubAck succeeded")
	}
	// The copy the client sent again after the error: same Nats-Msg-Id.
	late := &nats.Msg{Subject: InboundSubject(ev.Source, ev.Type), Header: nats.Header{}, Data: ev.Body}
	late.Header.Set(HdrMsgID, InboundMsgID(ev.Source, ev.ID))
	if _, err := js.PublishMsg(ctx, late); err != nil {
		t.Fatal(err)
	}
	store.timeout = 2 * time.Second
	got, err := store.Store(ctx, ev)
	if err != nil || got.Duplicate {
		t.Fatalf("the provider's retry: %+v, %v; want accepted", got, err)
	}
	if again, err := store.Store(ctx, ev); err != nil || !again.Duplicate || again.Seq != got.Seq {
		t.Fatalf("a further copy: %+v, %v; want a duplicate of %d", again, err, got.Seq)
	}
	st, err := js.Stream(ctx, InboundStream)
	if err != nil {
		t.Fatal(err)
	}
	if n := st.CachedInfo().State.Msgs; n != 1 {
		t.Fatalf("%s holds %d messages, want 1", InboundStream, n)
	}
}
