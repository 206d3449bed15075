package jetstream

import (
	"strings"
	"testing"
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
