package admin

import (
	"testing"
	"time"

	"github.com/hookjet/hookjet/attempt"
)

// TestOwnRecord: an endpoint's attempts page shows the records of its
// incarnation and of events its tenant may receive; an endpoint moved from
// tenant acme to globex does not show acme's attempts to globex.
func TestOwnRecord(t *testing.T) {
	created := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	inc := created.Format(time.RFC3339Nano)
	tests := []struct {
		name    string
		rec     attempt.Record
		created *time.Time
		tenant  string
		want    bool
	}{
		{"config endpoint, no tenant", attempt.Record{Tenant: "acme"}, nil, "", true},
		{"config endpoint, its tenant", attempt.Record{Tenant: "acme"}, nil, "acme", true},
		{"config endpoint moved to another tenant", attempt.Record{Tenant: "acme"}, nil, "globex", false},
		{"API endpoint, its incarnation and tenant", attempt.Record{Tenant: "acme", EndpointCreatedAt: inc}, &created, "acme", true},
		{"API endpoint moved to another tenant", attempt.Record{Tenant: "acme", EndpointCreatedAt: inc}, &created, "globex", false},
		{"an earlier incarnation", attempt.Record{EndpointCreatedAt: created.Add(-time.Hour).Format(time.RFC3339Nano)}, &created, "", false},
		{"unmarked, before the endpoint", attempt.Record{StartedAt: created.Add(-time.Minute)}, &created, "", false},
		{"unmarked, after the endpoint", attempt.Record{StartedAt: created.Add(time.Minute)}, &created, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ownRecord(&tt.rec, tt.created, tt.tenant); got != tt.want {
				t.Errorf("ownRecord = %v, want %v", got, tt.want)
			}
		})
	}
}
