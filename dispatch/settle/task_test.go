package settle

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/hookjet/hookjet/config"
)

// A stored delivery is checked again against its endpoint when taken: an
// event of another tenant, or one stored for an earlier incarnation of the
// id, is not the endpoint's.
func TestNotForEndpoint(t *testing.T) {
	created := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	ep := &config.Endpoint{ID: "e", Tenant: "acme", CreatedAt: created}
	mine := nats.Header{}
	MarkIncarnation(mine, created)
	earlier := nats.Header{}
	MarkIncarnation(earlier, created.Add(-time.Hour))
	for _, tt := range []struct {
		name string
		h    nats.Header
		ev   Event
		want bool
	}{
		{"its tenant's event", mine, Event{Tenant: "acme"}, false},
		{"another tenant's event", mine, Event{Tenant: "globex"}, true},
		{"an event without a tenant", mine, Event{}, true},
		{"a bad tenant header", mine, Event{BadTenant: "bad"}, true},
		{"an earlier incarnation's task", earlier, Event{Tenant: "acme"}, true},
		{"a task without the mark", nats.Header{}, Event{Tenant: "acme"}, false},
	} {
		if got := NotForEndpoint(tt.h, &tt.ev, ep); got != tt.want {
			t.Errorf("%s: NotForEndpoint = %v, want %v", tt.name, got, tt.want)
		}
	}
}
