package query

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/hookjet/hookjet/api"
	"github.com/hookjet/hookjet/attempt"
	"github.com/hookjet/hookjet/breaker"
	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/jetstream"
)

var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// reasons are the reasons of waits, in order.
func reasons(ws []api.Wait) []string {
	var out []string
	for _, w := range ws {
		out = append(out, w.Reason)
	}
	return out
}

func TestStatusOf(t *testing.T) {
	ep := &config.Endpoint{
		ID: "a", URL: "https://a.example/hook", Events: []string{"order.*"}, Tenant: "acme", Owner: "ops",
		Secrets: []config.Secret{{}, {}}, Headers: map[string]config.Secret{"X-B": {}, "X-A": {}}, Settings: config.Settings{MaxInFlight: 2},
		CreatedAt: now.Add(-time.Hour), Source: "api",
	}
	last := &attempt.LastDelivery{EventID: "e1", Status: 200, At: now.Add(-time.Minute)}
	tests := []struct {
		name  string
		f     statusFacts
		check func(t *testing.T, s api.EndpointStatus)
	}{
		{
			name: "counts from the tasks and the ordered lane",
			f: statusFacts{
				Endpoint: Endpoint{Config: ep, InFlight: 1, LastDelivery: last},
				Tasks:    waitingCount{due: 3, scheduled: 2}, DeadLetters: 4,
				Lane: LaneView{Waiting: 5, Retrying: 1},
			},
			check: func(t *testing.T, s api.EndpointStatus) {
				if s.Pending != 10 || s.AwaitingRetry != 3 || s.DeadLetters != 4 || s.InFlight != 1 {
					t.Errorf("pending %d, awaiting retry %d, dead letters %d, in flight %d; want 10, 3, 4, 1", s.Pending, s.AwaitingRetry, s.DeadLetters, s.InFlight)
				}
				if s.ID != "a" || s.Tenant != "acme" || s.Owner != "ops" || s.Secrets != 2 || s.Source != "api" || s.LastDelivery != last {
					t.Errorf("the definition's fields: %+v", s)
				}
				if !slices.Equal(s.HeaderNames, []string{"X-A", "X-B"}) {
					t.Errorf("header names %v, want sorted names only", s.HeaderNames)
				}
				if s.Breaker.State != "closed" || s.Settings == nil || s.LastTest != nil || s.HeldKeys != nil {
					t.Errorf("breaker %q, settings %v, last test %v, held keys %v", s.Breaker.State, s.Settings, s.LastTest, s.HeldKeys)
				}
				if s.CreatedAt == nil || !s.CreatedAt.Equal(ep.CreatedAt) || s.UpdatedAt != nil {
					t.Errorf("created %v, updated %v", s.CreatedAt, s.UpdatedAt)
				}
				// The retries wait for their time; the time is not known.
				if got := reasons(s.Waiting); !slices.Equal(got, []string{api.WaitRetryScheduled}) || s.NextRetry != nil {
					t.Errorf("waits %v, next retry %v", got, s.NextRetry)
				}
			},
		},
		{
			name: "disabled, held and full",
			f: statusFacts{Endpoint: Endpoint{
				Config: ep, Disabled: true, DisabledReason: "by hand", InFlight: 2,
				HoldUntil: now.Add(time.Minute), HoldCause: "Retry-After",
			}},
			check: func(t *testing.T, s api.EndpointStatus) {
				if !s.Disabled || s.DisabledReason != "by hand" || s.HeldUntil == nil || !s.HeldUntil.Equal(now.Add(time.Minute)) {
					t.Errorf("disabled %v (%q), held until %v", s.Disabled, s.DisabledReason, s.HeldUntil)
				}
				want := []string{api.WaitDisabled, api.WaitHeld, api.WaitInFlightFull}
				if got := reasons(s.Waiting); !slices.Equal(got, want) {
					t.Errorf("waits %v, want %v", got, want)
				}
			},
		},
		{
			name: "a hold that has passed",
			f:    statusFacts{Endpoint: Endpoint{Config: ep, HoldUntil: now.Add(-time.Second), HoldCause: "Retry-After"}},
			check: func(t *testing.T, s api.EndpointStatus) {
				if s.HeldUntil != nil || len(s.Waiting) != 0 {
					t.Errorf("held until %v, waits %v; want neither", s.HeldUntil, reasons(s.Waiting))
				}
			},
		},
		{
			name: "an open breaker",
			f: statusFacts{
				Endpoint: Endpoint{Config: ep},
				Breaker: breaker.Health{
					State: breaker.Open, ConsecutiveFailures: 5, Cooldown: 30 * time.Second,
					OpenedAt: now.Add(-10 * time.Second), OpenUntil: now.Add(20 * time.Second),
					P50: 1500 * time.Microsecond, P95: 20 * time.Millisecond, Samples: 9,
				},
				HasBreaker: true,
			},
			check: func(t *testing.T, s api.EndpointStatus) {
				b := s.Breaker
				if b.State != "open" || b.ConsecutiveFailures != 5 || b.CooldownSeconds != 30 || b.OpenUntil == nil || !b.OpenUntil.Equal(now.Add(20*time.Second)) {
					t.Errorf("breaker %+v", b)
				}
				if s.LatencyMS.P50 != 1.5 || s.LatencyMS.P95 != 20 || s.LatencyMS.Samples != 9 || s.ConsecutiveFailures != 5 {
					t.Errorf("latency %+v, failures %d", s.LatencyMS, s.ConsecutiveFailures)
				}
				if got := reasons(s.Waiting); !slices.Equal(got, []string{api.WaitBreakerOpen}) {
					t.Errorf("waits %v", got)
				}
			},
		},
		{
			name: "a rate limit out of tokens, tasks taken, keys held, a known retry and a test",
			f: statusFacts{
				Endpoint: Endpoint{Config: ep, RateLimit: 2, Tokens: 0.5, Taken: 3, TakenUntil: now.Add(time.Minute)},
				Lane:     LaneView{Held: &api.HeldKeys{Count: 2}},
				Tasks:    waitingCount{scheduled: 1}, FirstRetry: now.Add(5 * time.Second),
				LastTest: &attempt.Record{EventID: "test_1", StartedAt: now, Class: "success", Status: 204},
			},
			check: func(t *testing.T, s api.EndpointStatus) {
				want := []string{api.WaitRateLimited, api.WaitTaken, api.WaitKeysHeld, api.WaitRetryScheduled}
				if got := reasons(s.Waiting); !slices.Equal(got, want) {
					t.Errorf("waits %v, want %v", got, want)
				}
				if s.Waiting[0].Until == nil || !s.Waiting[0].Until.Equal(now.Add(250*time.Millisecond)) {
					t.Errorf("rate limited until %v, want the next token's time", s.Waiting[0].Until)
				}
				if s.NextRetry == nil || !s.NextRetry.Equal(now.Add(5*time.Second)) || s.HeldKeys == nil || s.HeldKeys.Count != 2 {
					t.Errorf("next retry %v, held keys %v", s.NextRetry, s.HeldKeys)
				}
				if s.LastTest == nil || s.LastTest.EventID != "test_1" || s.LastTest.Status != 204 {
					t.Errorf("last test %+v", s.LastTest)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.check(t, statusOf(tt.f, now)) })
	}
}

func TestOwnerOwns(t *testing.T) {
	tests := []struct {
		name  string
		owner Owner
		dl    jetstream.DLQEntry
		want  bool
	}{
		{"config endpoint, unmarked", Owner{}, jetstream.DLQEntry{}, true},
		{"config endpoint, an API endpoint's", Owner{}, jetstream.DLQEntry{Incarnation: "1"}, false},
		{"API endpoint, its own", Owner{Incarnation: "2"}, jetstream.DLQEntry{Incarnation: "2"}, true},
		{"API endpoint, an earlier one's", Owner{Incarnation: "2"}, jetstream.DLQEntry{Incarnation: "1"}, false},
		{"API endpoint, unmarked", Owner{Incarnation: "2"}, jetstream.DLQEntry{}, false},
		{"tenant, its own", Owner{Tenant: "acme"}, jetstream.DLQEntry{Tenant: "acme"}, true},
		{"tenant, another's", Owner{Tenant: "acme"}, jetstream.DLQEntry{Tenant: "other"}, false},
		{"no tenant, any tenant's", Owner{}, jetstream.DLQEntry{Tenant: "other"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.owner.owns(tt.dl); got != tt.want {
				t.Errorf("owns = %v, want %v", got, tt.want)
			}
		})
	}
}

// fakeSource is a Source of endpoints held in memory.
type fakeSource struct {
	Source // what a test does not use panics
	eps    map[string]Endpoint
	lane   map[string]LaneView
}

func (f fakeSource) Each(now time.Time, fn func(Endpoint)) {
	for _, e := range f.eps {
		fn(e)
	}
}

func (f fakeSource) Lane(ctx context.Context, ids []string) map[string]LaneView { return f.lane }

func (f fakeSource) Owner(id string) (Owner, bool) {
	e, ok := f.eps[id]
	if !ok {
		return Owner{}, false
	}
	return Owner{Tenant: e.Config.Tenant}, true
}

func newBreakers(t *testing.T) *breaker.Registry {
	t.Helper()
	db, err := bolt.Open(filepath.Join(t.TempDir(), "state.db"), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	r, err := breaker.NewRegistry(db)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestWaitingListsEndpointsThatWaitByID(t *testing.T) {
	eps := map[string]Endpoint{}
	add := func(id string, e Endpoint) {
		e.Config = &config.Endpoint{ID: id}
		eps[id] = e
	}
	add("c", Endpoint{Disabled: true})
	add("a", Endpoint{HoldUntil: now.Add(time.Minute)})
	add("b", Endpoint{}) // goes at once
	add("d", Endpoint{})
	lane := map[string]LaneView{"d": {Held: &api.HeldKeys{Count: 1}}}
	q := New(Options{Source: fakeSource{eps: eps, lane: lane}, Breakers: newBreakers(t), Now: func() time.Time { return now }})
	waits, n, err := q.Waiting(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range waits {
		got = append(got, w.Endpoint+" "+w.Reason)
	}
	want := []string{"a " + api.WaitHeld, "c " + api.WaitDisabled, "d " + api.WaitKeysHeld}
	if n != 3 || !slices.Equal(got, want) {
		t.Errorf("Waiting = %v, %d endpoints; want %v, 3", got, n, want)
	}
}

func TestWaitingListsAtMostMaxWaitingEndpoints(t *testing.T) {
	eps := map[string]Endpoint{}
	for i := range api.MaxWaiting + 5 {
		id := string(rune('A'+i/26)) + string(rune('a'+i%26))
		eps[id] = Endpoint{Config: &config.Endpoint{ID: id}, Disabled: true}
	}
	q := New(Options{Source: fakeSource{eps: eps}, Breakers: newBreakers(t), Now: func() time.Time { return now }})
	waits, n, err := q.Waiting(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if n != api.MaxWaiting+5 || len(waits) != api.MaxWaiting || waits[0].Endpoint != "Aa" {
		t.Errorf("%d waits from %d endpoints, the first %q; want %d from %d, the first Aa", len(waits), n, waits[0].Endpoint, api.MaxWaiting, api.MaxWaiting+5)
	}
}
