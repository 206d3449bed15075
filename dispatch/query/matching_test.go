package query

import (
	"testing"
	"time"

	"github.com/hookjet/hookjet/breaker"
	"github.com/hookjet/hookjet/config"
)

// matchSource is a fakeSource whose pattern index matches ids.
type matchSource struct {
	fakeSource
	ids []string
}

func (m matchSource) Match(tenant, typ string) []string { return append([]string(nil), m.ids...) }

func (m matchSource) Endpoint(id string, _ time.Time) (Endpoint, bool) {
	e, ok := m.eps[id]
	return e, ok
}

func TestMatchingListsMatchedEndpointsByIDWithWhatHoldsThem(t *testing.T) {
	eps := map[string]Endpoint{
		"c": {Config: &config.Endpoint{ID: "c"}},
		"a": {Config: &config.Endpoint{ID: "a"}},
		"b": {Config: &config.Endpoint{ID: "b"}, Disabled: true},
	}
	br := newBreakers(t)
	br.Configure("c", breaker.Settings{FailureThreshold: 1, Cooldown: time.Hour, MaxCooldown: time.Hour})
	if ok, _ := br.Acquire("c"); !ok {
		t.Fatal("c's breaker refused its first request")
	}
	br.Record("c", breaker.Failure, time.Millisecond, true) // opens it
	at := time.Now()
	q := New(Options{Source: matchSource{fakeSource: fakeSource{eps: eps}, ids: []string{"c", "gone", "a", "b", "a"}}, Breakers: br, Now: func() time.Time { return at }})
	got := q.Matching("acme", "order.created")
	if len(got) != 3 || got[0].Config.ID != "a" || got[1].Config.ID != "b" || got[2].Config.ID != "c" {
		t.Fatalf("Matching: %+v; want a, b, c once each (gone is not in force)", got)
	}
	if !got[1].Disabled || !got[0].BreakerOpenUntil.IsZero() || !got[2].BreakerOpenUntil.After(at) {
		t.Fatalf("what holds them: b disabled %v, a's breaker %v, c's breaker open until %v", got[1].Disabled, got[0].BreakerOpenUntil, got[2].BreakerOpenUntil)
	}
}
