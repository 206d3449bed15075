package test

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookjet/hookjet/cli"
)

// A newcomer's first hour.

// waitView is an endpoint's breaker and waiting reasons as the API shows them.
type waitView struct {
	URL     string `json:"url"`
	Breaker struct {
		State string `json:"state"`
	} `json:"breaker"`
	Waiting []struct {
		Reason string     `json:"reason"`
		Until  *time.Time `json:"until"`
		Detail string     `json:"detail"`
	} `json:"waiting"`
}

func (h *hookjet) waitView(id string) waitView {
	h.t.Helper()
	var v waitView
	if code := h.api("GET", "/api/v1/endpoints/"+id, h.cfg.Admin.Token.Reveal(), nil, &v); code != http.StatusOK {
		h.t.Fatalf("endpoint %s: HTTP %d", id, code)
	}
	return v
}

// runCLI runs a hookjet command in-process against h's admin API.
func (h *hookjet) runCLI(args ...string) (int, string) {
	h.t.Helper()
	var out, errOut bytes.Buffer
	args = append(args, "--admin", h.srv.AdminAddr())
	err := cli.Run(h.t.Context(), args, func(string) string { return "" }, &out, &errOut)
	return cli.ExitCode(err, &errOut), out.String() + errOut.String()
}

// Row 1: with every process's breaker open (cooldown 1h), status and show
// say so and until when; `hookjet endpoints reset` closes the breaker in
// the answering process at once and in the other within 2 s, and the
// backlog is delivered without waiting for the cooldown.
func TestBreakerResetReachesEveryProcessAndDrains(t *testing.T) {
	ns := startNATSNode(t, "reset", standaloneNATS(t))
	var up atomic.Bool
	r := newReceiver(t, []string{secretA, secretB}, func(w http.ResponseWriter, _ delivery) {
		if up.Load() {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	ep := endpointYAML{ID: "flaky", URL: r.URL, Extra: "    breaker: {failure_threshold: 1, cooldown: 1h}\n    retry: {max_attempts: 20}\n"}
	var hs []*hookjet
	for range 2 {
		cfg := testConfig(t, t.TempDir(), "", ep)
		cfg.NATS.URL = ns.url()
		hs = append(hs, startHookjet(t, cfg, cli.Options{}))
	}
	var ids []string
	checkFor(t, 30*time.Second, 100*time.Millisecond, func() error {
		open := 0
		for _, h := range hs {
			if h.waitView("flaky").Breaker.State == "open" {
				open++
			}
		}
		if open == len(hs) {
			return nil
		}
		id := fmt.Sprintf("evt_fail_%d", len(ids))
		ids = append(ids, id)
		hs[0].publish("order.created", id, []byte(`{}`))
		return fmt.Errorf("%d of %d breakers open", open, len(hs))
	})
	v := hs[0].waitView("flaky")
	if len(v.Waiting) == 0 || v.Waiting[0].Reason != "breaker_open" || v.Waiting[0].Until == nil || time.Until(*v.Waiting[0].Until) < 50*time.Minute {
		t.Fatalf("waiting = %+v, want breaker_open until about an hour from now", v.Waiting)
	}
	for _, args := range [][]string{{"status"}, {"endpoints", "show", "flaky"}} {
		code, out := hs[0].runCLI(args...)
		if code != 0 || !strings.Contains(out, "endpoint flaky: circuit breaker open until "+v.Waiting[0].Until.UTC().Format(time.RFC3339)) {
			t.Errorf("hookjet %v: exit %d:\n%s\nwant why flaky waits and until when", args, code, out)
		}
	}
	code, out := hs[0].runCLI("endpoints")
	if code != 0 || !strings.Contains(out, "breaker_open until "+v.Waiting[0].Until.UTC().Format(time.RFC3339)) {
		t.Errorf("hookjet endpoints: exit %d:\n%s\nwant flaky's WAITING", code, out)
	}
	up.Store(true)
	for i := range 5 {
		id := fmt.Sprintf("evt_after_%d", i)
		ids = append(ids, id)
		hs[0].publish("order.created", id, []byte(`{}`))
	}
	code, out = hs[0].runCLI("endpoints", "reset", "flaky")
	if code != 0 || !strings.Contains(out, "closed") {
		t.Fatalf("endpoints reset: exit %d:\n%s", code, out)
	}
	v = hs[0].waitView("flaky")
	for _, w := range v.Waiting { // the backlog may fill max_in_flight at once: that is no breaker
		if w.Reason == "breaker_open" || w.Reason == "breaker_probe" || w.Reason == "held" {
			t.Fatalf("answering process after the reset: %+v, want the breaker closed and no hold", v)
		}
	}
	if v.Breaker.State != "closed" {
		t.Fatalf("answering process after the reset: %+v, want closed", v)
	}
	checkFor(t, 2*time.Second, 10*time.Millisecond, func() error {
		if v := hs[1].waitView("flaky"); v.Breaker.State != "closed" {
			return fmt.Errorf("the other process's breaker is %s", v.Breaker.State)
		}
		return nil
	})
	for _, id := range ids { // long before the cooldown's hour
		r.waitFor(t, id)
	}
}

// Row 2: a change through the API is in effect in the answering process
// when the call returns: a test event sent right after an update goes to
// the new URL, never the old one (one process, as in the walkthrough).
func TestAPIChangeInEffectWhenTheCallReturns(t *testing.T) {
	h := startHookjet(t, testConfig(t, t.TempDir(), ""), cli.Options{})
	a, b := newInbox(t), newInbox(t)
	if code, _, out := h.call("POST", "/api/v1/endpoints", `{"id":"flaky","url":"`+a.URL+`/"}`); code != http.StatusCreated {
		t.Fatalf("create: %d %v", code, out)
	}
	from, to := a, b
	for i := range 10 {
		if code, _, out := h.call("PATCH", "/api/v1/endpoints/flaky", `{"url":"`+to.URL+`/"}`); code != http.StatusOK {
			t.Fatalf("update %d: %d %v", i, code, out)
		}
		code, _, out := h.call("POST", "/api/v1/endpoints/flaky/test", "")
		id, _ := out["event_id"].(string)
		if code != http.StatusAccepted || id == "" {
			t.Fatalf("test %d: %d %v", i, code, out)
		}
		checkFor(t, 15*time.Second, 10*time.Millisecond, func() error {
			if len(to.get(id)) == 0 && len(from.get(id)) == 0 {
				return fmt.Errorf("try %d: %s has not arrived", i, id)
			}
			return nil
		})
		if n := len(from.get(id)); n != 0 {
			t.Fatalf("try %d: the test event went to the old URL (%d times)", i, n)
		}
		from, to = to, from
	}
}

// Row 2: a change through one process's API is in effect in every other
// process within 2 s: updates, disable and enable, a breaker reset.
func TestAPIChangeReachesEveryProcess(t *testing.T) {
	ns := startNATSNode(t, "apply", standaloneNATS(t))
	var hs []*hookjet
	for range 2 {
		cfg := testConfig(t, t.TempDir(), "")
		cfg.NATS.URL = ns.url()
		hs = append(hs, startHookjet(t, cfg, cli.Options{}))
	}
	a := newInbox(t)
	if code, _, out := hs[0].call("POST", "/api/v1/endpoints", `{"id":"flaky","url":"`+a.URL+`/"}`); code != http.StatusCreated {
		t.Fatalf("create: %d %v", code, out)
	}
	within2s := func(what string, ok func(v waitView) bool) {
		t.Helper()
		for i, h := range hs {
			if i == 0 {
				if v := h.waitView("flaky"); !ok(v) { // in effect when the call returned
					t.Fatalf("%s: the answering process shows %+v", what, v)
				}
				continue
			}
			checkFor(t, 2*time.Second, 10*time.Millisecond, func() error {
				if v := h.waitView("flaky"); !ok(v) {
					return fmt.Errorf("%s: the other process shows %+v", what, v)
				}
				return nil
			})
		}
	}
	within2s("create", func(v waitView) bool { return v.URL == a.URL+"/" })
	for i := range 3 {
		u := fmt.Sprintf("%s/v%d", a.URL, i)
		if code, _, out := hs[0].call("PATCH", "/api/v1/endpoints/flaky", `{"url":"`+u+`"}`); code != http.StatusOK {
			t.Fatalf("update: %d %v", code, out)
		}
		within2s("update", func(v waitView) bool { return v.URL == u })
	}
	if code, _, _ := hs[0].call("POST", "/api/v1/endpoints/flaky/disable", ""); code != http.StatusOK {
		t.Fatal(code)
	}
	within2s("disable", func(v waitView) bool { return len(v.Waiting) > 0 && v.Waiting[0].Reason == "disabled" })
	if code, _, _ := hs[0].call("POST", "/api/v1/endpoints/flaky/enable", ""); code != http.StatusOK {
		t.Fatal(code)
	}
	within2s("enable", func(v waitView) bool { return len(v.Waiting) == 0 })
}

// Row 3: a replay to a disabled endpoint says that the endpoint is
// disabled and the events wait, in the API's answer and from the CLI.
func TestReplayToDisabledEndpointSaysItWaits(t *testing.T) {
	r := newReceiver(t, []string{secretA, secretB}, func(w http.ResponseWriter, _ delivery) {
		w.WriteHeader(http.StatusGone)
	})
	h := startHookjet(t, testConfig(t, t.TempDir(), "", endpointYAML{ID: "gone", URL: r.URL}), cli.Options{})
	h.publish("order.created", "evt_410", []byte(`{}`))
	checkFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		if v := h.waitView("gone"); len(v.Waiting) == 0 || v.Waiting[0].Reason != "disabled" || len(h.dlq("")) != 1 {
			return fmt.Errorf("waiting %+v, dead letters %d", v.Waiting, len(h.dlq("")))
		}
		return nil
	})
	var dry struct {
		Matched int `json:"matched"`
		Waiting []struct {
			Endpoint string `json:"endpoint"`
			Reason   string `json:"reason"`
		} `json:"waiting"`
		Warnings []string `json:"warnings"`
	}
	if code := h.api("POST", "/api/v1/dlq/replay", "", map[string]any{"endpoint": "gone", "dry_run": true}, &dry); code != http.StatusOK {
		t.Fatalf("replay dry run: HTTP %d", code)
	}
	if dry.Matched != 1 || len(dry.Waiting) != 1 || dry.Waiting[0].Endpoint != "gone" || dry.Waiting[0].Reason != "disabled" ||
		len(dry.Warnings) != 1 || !strings.Contains(dry.Warnings[0], "disabled") {
		t.Fatalf("dry run answer %+v, want the endpoint named disabled", dry)
	}
	code, out := h.runCLI("dlq", "replay", "--endpoint", "gone")
	if code != 0 || !strings.Contains(out, "replayed 1") || !strings.Contains(out, "warning: the replayed events wait: endpoint gone is disabled") {
		t.Fatalf("dlq replay: exit %d:\n%s", code, out)
	}
}
