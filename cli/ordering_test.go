package cli

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hookjet/hookjet/api"
)

// --ordering and --ordering-on-dead-letter go to the API under their JSON
// names, only when given.
func TestEndpointsOrderingFlags(t *testing.T) {
	stub := &apiStub{}
	srv := httptest.NewServer(stub)
	defer srv.Close()
	bodyOf := func(req string) map[string]any {
		t.Helper()
		var got map[string]any
		if err := json.Unmarshal([]byte(strings.SplitN(req, " ", 3)[2]), &got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	if code, _, stderr := runAgainst(t, srv, "endpoints", "add", "--url", "https://shop.example.com/", "--ordering", "key", "--ordering-on-dead-letter", "hold"); code != 0 {
		t.Fatalf("add: exit %d %q", code, stderr)
	}
	if got := bodyOf(stub.reqs[0]); len(got) != 3 || got["ordering"] != "key" || got["ordering_on_dead_letter"] != "hold" {
		t.Errorf("add body %v", got)
	}
	if code, _, stderr := runAgainst(t, srv, "endpoints", "update", "shop", "--ordering", "none"); code != 0 {
		t.Fatalf("update: exit %d %q", code, stderr)
	}
	if got := bodyOf(stub.reqs[1]); len(got) != 1 || got["ordering"] != "none" {
		t.Errorf("update body %v", got)
	}
}

// endpoints show says the ordering, and for held keys how many, since when,
// why, and at most ten of them; an endpoint without held keys says only
// its setting.
func TestEndpointsShowHeldKeys(t *testing.T) {
	since := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	next := since.Add(90 * time.Second)
	held := &api.HeldKeys{Count: 13, Oldest: &since, Why: map[string]int{api.HeldRetrying: 2, api.HeldDeadLetter: 1, api.HeldInFlight: 10}}
	held.Keys = append(held.Keys,
		api.HeldKey{Key: "customer-7", Since: since, Why: api.HeldRetrying, EventID: "evt_1", Attempts: 3, NextAttempt: &next},
		api.HeldKey{Key: "customer 8", Since: since.Add(time.Minute), Why: api.HeldDeadLetter, EventID: "evt_2", Attempts: 20})
	for i := range 10 {
		held.Keys = append(held.Keys, api.HeldKey{Key: "k" + string(rune('a'+i)), Since: since.Add(2 * time.Minute), Why: api.HeldInFlight, EventID: "evt_f"})
	}
	settings := &api.EndpointSettings{Ordering: "key", OrderingOnDeadLetter: "hold"}
	var out strings.Builder
	printEndpoint(&out, api.EndpointStatus{ID: "crm", Settings: settings, HeldKeys: held})
	for _, want := range []string{
		"ordering      key (on dead letter: hold); 13 keys held, oldest since 2026-12-01T08:00:00Z, why: 2 retrying, 1 dead_letter, 10 in_flight\n",
		"  customer-7  retrying since 2026-12-01T08:00:00Z, event evt_1, 3 attempts, next attempt 2026-12-01T08:01:30Z\n",
		"  \"customer 8\"  dead_letter since 2026-12-01T08:01:00Z, event evt_2, 20 attempts\n",
		"  kh  in_flight since 2026-12-01T08:02:00Z, event evt_f\n",
		"  (3 more held)\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("show lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "  ki ") {
		t.Errorf("show lists more than 10 keys:\n%s", out.String())
	}

	out.Reset()
	printEndpoint(&out, api.EndpointStatus{ID: "crm", Settings: &api.EndpointSettings{Ordering: "none", OrderingOnDeadLetter: "skip"}})
	if !strings.Contains(out.String(), "ordering      none\n") || strings.Contains(out.String(), "held") {
		t.Errorf("an unordered endpoint:\n%s", out.String())
	}
	out.Reset()
	printEndpoint(&out, api.EndpointStatus{ID: "crm", Settings: settings})
	if !strings.Contains(out.String(), "ordering      key (on dead letter: hold)\n") {
		t.Errorf("an ordered endpoint without held keys:\n%s", out.String())
	}
}

// While keys wait behind a dead letter, endpoints show counts their
// deliveries as pending and says why they wait instead of "deliveries go
// at once".
func TestEndpointsShowSaysKeysWaitBehindADeadLetter(t *testing.T) {
	since := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	held := &api.HeldKeys{Count: 1, Oldest: &since, Why: map[string]int{api.HeldDeadLetter: 1},
		Keys: []api.HeldKey{{Key: "k0", Since: since, Why: api.HeldDeadLetter, EventID: "evt_1", Attempts: 20}}}
	e := api.EndpointStatus{ID: "crm", Pending: 2, HeldKeys: held,
		Settings: &api.EndpointSettings{Ordering: "key", OrderingOnDeadLetter: "hold"},
		Waiting:  api.Waits("crm", api.WaitFacts{HeldKeys: held}, since)}
	var out strings.Builder
	printEndpoint(&out, e)
	for _, want := range []string{
		"pending       2\n",
		"waiting:\n  endpoint crm: ordering keys wait behind an earlier delivery of their own key (1 key, the oldest since 2026-12-01T08:00:00Z; why: 1 dead_letter); its other keys go",
		"  k0  dead_letter since 2026-12-01T08:00:00Z, event evt_1, 20 attempts\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("show lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "go at once") {
		t.Errorf("show says deliveries go at once while a key waits:\n%s", out.String())
	}
}
