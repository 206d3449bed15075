package console

import (
	"strings"
	"testing"
	"time"

	"github.com/hookjet/hookjet/api"
)

// The portal tells a customer what happens to their deliveries, since when
// and until when, instead of "breaker open" and "parked · breaker".
func TestCustomerStateSpeaksTheCustomersLanguage(t *testing.T) {
	day := time.Now().UTC().Truncate(24 * time.Hour)
	opened, until := day.Add(14*time.Hour+2*time.Minute), day.Add(14*time.Hour+7*time.Minute)
	e := endpoint{}
	e.Breaker = breakerStatus{State: "open", ConsecutiveFailures: 10, OpenedAt: &opened, OpenUntil: &until}
	e.Waiting = []api.Wait{{Reason: api.WaitBreakerOpen, Until: &until}}
	if got, want := customerState(e), "Paused after 10 failures in a row since 14:02 UTC; retrying at 14:07 UTC."; !strings.HasPrefix(got, want) {
		t.Errorf("open breaker: %q, want it to start %q", got, want)
	}
	e.Breaker = breakerStatus{State: "half_open", ConsecutiveFailures: 10}
	e.Waiting = []api.Wait{{Reason: api.WaitHalfOpen}}
	if got := customerState(e); !strings.Contains(got, "Trying one delivery") {
		t.Errorf("half open: %q", got)
	}
	e.Breaker = breakerStatus{State: "closed"}
	e.HeldUntil = &until
	e.Waiting = []api.Wait{{Reason: api.WaitHeld, Until: &until}}
	if got := customerState(e); !strings.Contains(got, "asked us to wait") || !strings.Contains(got, "14:07 UTC") {
		t.Errorf("held: %q", got)
	}
	disabled := endpoint{Disabled: true, Waiting: []api.Wait{{Reason: api.WaitDisabled, Detail: "answered 410 Gone"}, {Reason: api.WaitHeld, Until: &until}}}
	if got := customerState(disabled); !strings.HasPrefix(got, "Paused by the platform") {
		t.Errorf("disabled and held: %q, want the pause first", got)
	}
	paused := endpoint{Disabled: true, Waiting: []api.Wait{{Reason: api.WaitDisabled, Detail: "disabled by an operator"}}}
	if got := customerState(paused); !strings.HasPrefix(got, "This endpoint is paused") {
		t.Errorf("disabled in the portal (or by the platform): %q", got)
	}
	gone := endpoint{Disabled: true, Waiting: []api.Wait{{Reason: api.WaitDisabled, Detail: "gone: the endpoint answered 410"}}}
	if got := customerState(gone); !strings.Contains(got, "410 Gone") {
		t.Errorf("disabled after a 410: %q", got)
	}
	if got := customerWords(`destination.type: "kafka": endpoints of a tenant may use webhook (portal.destinations)`); strings.Contains(got, "portal.") {
		t.Errorf("a refused destination type in the customer's words: %q", got)
	}
	if got := customerWords(`id: endpoint "crm" comes from /etc/hookjet/hookjet.yaml (source config): delete it by editing that file and reloading (SIGHUP)`); strings.Contains(got, "/etc/") || !strings.Contains(got, "managed by the platform") {
		t.Errorf("a config endpoint's change refused, in the customer's words: %q", got)
	}
	if got := customerState(endpoint{Breaker: breakerStatus{State: "closed"}}); got != "" {
		t.Errorf("healthy: %q, want nothing", got)
	}
	if got := customerReason("breaker"); strings.Contains(got, "breaker") || !strings.Contains(got, "paused after repeated failures") {
		t.Errorf("parked for the breaker: %q", got)
	}
	old := opened.AddDate(0, 0, -3)
	if got := clock(old); !strings.Contains(got, old.Format("Jan 2")) {
		t.Errorf("a time on another day: %q, want its date", got)
	}
}
