package config

import (
	"slices"
	"strings"
	"testing"
)

func TestMatchEvent(t *testing.T) {
	tests := []struct {
		pattern, event string
		want           bool
	}{
		{"order.created", "order.created", true},
		{"order.created", "order.updated", false},
		{"order.created", "order", false},
		{"order", "order.created", false},
		{"order.*", "order.created", true},
		{"order.*", "order", false},
		{"order.*", "order.created.v2", false},
		{"*.created", "order.created", true},
		{"*.created", "lead.created", true},
		{"*.created", "created", false},
		{"*", "order", true},
		{"*", "order.created", false},
		{"order.>", "order.created", true},
		{"order.>", "order.created.v2", true},
		{"order.>", "order", false},
		{">", "order", true},
		{">", "a.b.c.d", true},
		{"*.*.>", "a.b.c", true},
		{"*.*.>", "a.b", false},
		{"a.*.c", "a.b.c", true},
		{"a.*.c", "a.b.d", false},
		// Invalid patterns and event types match nothing.
		{"", "order", false},
		{"order", "", false},
		{">", "", false},
		{"order.>.x", "order.a.x", false},
		{"order..created", "order..created", false},
		{">", "order..created", false},
		{">", "order.", false},
		{">", ".order", false},
		{"order.>", "order.a..b", false},
		{"*", ".", false},
		{"order.*", "order.", false},
		// hookjet's own types match only patterns that name "hookjet".
		{"hookjet.>", "hookjet.endpoint.disabled", true},
		{"hookjet.endpoint.*", "hookjet.endpoint.disabled", true},
		{"hookjet.dead_letter", "hookjet.dead_letter", true},
		{"hookjet.*", "hookjet.dead_letter", true},
		{">", "hookjet.endpoint.disabled", false},
		{">", "hookjet.dead_letter", false},
		{"*.*", "hookjet.dead_letter", false},
		{"*.endpoint.*", "hookjet.endpoint.disabled", false},
		{"*.>", "hookjet.dead_letter", false},
		{">", "hookjet", true}, // not an operational type: no "hookjet." prefix
	}
	for _, tt := range tests {
		t.Run(tt.pattern+" "+tt.event, func(t *testing.T) {
			if got := MatchEvent(tt.pattern, tt.event); got != tt.want {
				t.Errorf("MatchEvent(%q, %q) = %v, want %v", tt.pattern, tt.event, got, tt.want)
			}
		})
	}
}

func TestMatchEventDoesNotAllocate(t *testing.T) {
	allocs := testing.AllocsPerRun(100, func() {
		MatchEvent("order.*.>", "order.created.eu.v2")
	})
	if allocs != 0 {
		t.Errorf("MatchEvent allocates %v times per call", allocs)
	}
}

// Applications publish any valid type but hookjet's own.
func TestCheckPublishableRefusesHookjetTypes(t *testing.T) {
	for _, tt := range []struct {
		typ  string
		want string // "" no error; else a part of it
	}{
		{"order.created", ""},
		{"hookjet", ""},
		{"hookjetx.created", ""},
		{"hookjet.endpoint.disabled", "reserved"},
		{"hookjet.dead_letter", "reserved"},
		{"hookjet.anything.else", "reserved"},
		{"order.*", "wildcards"},
	} {
		err := CheckPublishable(tt.typ)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("CheckPublishable(%q) = %v, want nil", tt.typ, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("CheckPublishable(%q) = %v, want an error containing %q", tt.typ, err, tt.want)
		}
	}
}

func TestCovers(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{">", "order", true},
		{">", "order.*", true},
		{">", ">", true},
		{"order.>", "order.created", true},
		{"order.>", "order.*.v2", true},
		{"order.>", "order.>", true},
		{"order.>", "order", false},
		{"order.*", "order.created", true},
		{"order.*", "order.*", true},
		{"order.*", "order.>", false},
		{"order.*", "order.created.v2", false},
		{"*.created", "order.created", true},
		{"*.created", "order.*", false},
		{"order.created", "order.*", false},
		{"order.created", "order.created", true},
		{"*", ">", false},
		{"*.>", ">", false},
		{">", "*.>", true},
		{">", "hookjet.>", false},
		{"*.>", "hookjet.endpoint.*", false},
		{"*.endpoint.disabled", "hookjet.endpoint.disabled", false},
		{"hookjet.>", "hookjet.endpoint.*", true},
		{"hookjet.>", ">", false},
	}
	for _, tt := range tests {
		t.Run(tt.a+" covers "+tt.b, func(t *testing.T) {
			if got := covers(tt.a, tt.b); got != tt.want {
				t.Errorf("covers(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
			}
		})
	}
}

// TestCoversAgreesWithMatch checks covers against MatchEvent on a set of
// event types: if a covers b, every event b matches, a matches too.
func TestCoversAgreesWithMatch(t *testing.T) {
	patterns := []string{">", "*", "a", "a.*", "a.>", "*.b", "a.b", "*.*", "*.>", "a.*.c", "a.b.>", "*.b.>", "hookjet.>", "hookjet.*", "hookjet.b", "*.b.c"}
	events := []string{"a", "b", "a.b", "a.c", "x.b", "a.b.c", "a.x.c", "a.b.c.d", "x.b.y", "hookjet", "hookjet.b", "hookjet.b.c"}
	for _, a := range patterns {
		for _, b := range patterns {
			if !covers(a, b) {
				continue
			}
			for _, e := range events {
				if MatchEvent(b, e) && !MatchEvent(a, e) {
					t.Errorf("covers(%q, %q) but %q matches only the latter", a, b, e)
				}
			}
		}
	}
}

func TestNormalizeEvents(t *testing.T) {
	tests := []struct {
		name     string
		in, want []string
	}{
		{"single", []string{"order.created"}, []string{"order.created"}},
		{"disjoint kept in order", []string{"order.*", "lead.created"}, []string{"order.*", "lead.created"}},
		{"covered literal dropped", []string{"order.*", "order.created"}, []string{"order.*"}},
		{"covered before its cover", []string{"order.created", "order.*"}, []string{"order.*"}},
		{"everything", []string{"order.*", ">", "lead.created"}, []string{">"}},
		{"duplicates", []string{"a.b", "a.b", "a.c"}, []string{"a.b", "a.c"}},
		{"tail wildcard covers deeper", []string{"order.>", "order.*", "order.a.b"}, []string{"order.>"}},
		{"star does not cover deeper", []string{"order.*", "order.a.b"}, []string{"order.*", "order.a.b"}},
		{"partial overlap kept", []string{"order.*", "*.created"}, []string{"order.*", "*.created"}},
		{"invalid kept for validation", []string{"a..b", ">"}, []string{"a..b", ">"}},
		{"everything does not cover hookjet's own", []string{">", "hookjet.>"}, []string{">", "hookjet.>"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := normalizeEvents(tt.in); !slices.Equal(got, tt.want) {
				t.Errorf("normalizeEvents(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestParseNormalizesEvents(t *testing.T) {
	c := mustParse(t, endpointYAML+`    events: ["order.*", "order.created", "lead.created", "lead.created"]`+"\n", nil)
	if want := []string{"order.*", "lead.created"}; !slices.Equal(c.Endpoints[0].Events, want) {
		t.Errorf("events = %q, want %q", c.Endpoints[0].Events, want)
	}
}

func BenchmarkMatchEvent(b *testing.B) {
	for b.Loop() {
		MatchEvent("order.*.>", "order.created.eu.v2")
	}
}
