package test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/hookjet/hookjet/cli"
)

// An operator discards dead letters that will never be wanted: a dry run
// counts them, the discard deletes them from HOOKJET_DLQ, the event's
// delivery then reads "discarded", and the CLI and the console do the same.
func TestDLQDiscard(t *testing.T) {
	rcv := newReceiver(t, []string{secretA, secretB}, func(w http.ResponseWriter, _ delivery) {
		w.WriteHeader(http.StatusBadRequest) // permanent: dead-lettered at once
	})
	h := startHookjet(t, testConfig(t, t.TempDir(), "", endpointYAML{ID: "crm", URL: rcv.URL}), cli.Options{})
	for i := range 4 {
		h.publish("order.created", fmt.Sprintf("ord-%d", i), []byte(`{}`))
	}
	checkFor(t, 10*time.Second, 50*time.Millisecond, func() error {
		if n := len(h.dlq("?endpoint=crm")); n != 4 {
			return fmt.Errorf("%d dead letters, want 4", n)
		}
		return nil
	})
	var res struct{ Matched, Discarded int }
	if code := h.api("POST", "/api/v1/dlq/discard", "", map[string]any{}, nil); code != http.StatusBadRequest {
		t.Errorf("discard with no filter: HTTP %d, want 400 (never everything by default)", code)
	}
	if code := h.api("POST", "/api/v1/dlq/discard", "", map[string]any{"endpoint": "crm", "ids": []string{"ord-0"}, "dry_run": true}, &res); code != 200 || res.Matched != 1 || res.Discarded != 0 {
		t.Fatalf("dry run: HTTP %d %+v, want matched 1, discarded 0", code, res)
	}
	if code := h.api("POST", "/api/v1/dlq/discard", "", map[string]any{"endpoint": "crm", "ids": []string{"ord-0"}}, &res); code != 200 || res.Matched != 1 || res.Discarded != 1 {
		t.Fatalf("discard: HTTP %d %+v, want matched 1, discarded 1", code, res)
	}
	if n := len(h.dlq("?endpoint=crm")); n != 3 {
		t.Errorf("%d dead letters after discarding one, want 3", n)
	}
	checkFor(t, 5*time.Second, 50*time.Millisecond, func() error {
		var ev struct {
			Deliveries []struct {
				Endpoint, State string
			} `json:"deliveries"`
		}
		if code := h.api("GET", "/api/v1/events/ord-0", "", nil, &ev); code != 200 || len(ev.Deliveries) != 1 || ev.Deliveries[0].State != "discarded" {
			return fmt.Errorf("event ord-0: HTTP %d %+v, want one delivery in state discarded", code, ev)
		}
		return nil
	})

	// The CLI.
	var out, errOut bytes.Buffer
	err := cli.Run(t.Context(), []string{"dlq", "discard", "--endpoint", "crm", "--id", "ord-1", "--admin", h.srv.AdminAddr()}, func(string) string { return "" }, &out, &errOut)
	if err != nil || !strings.Contains(out.String(), "matched 1, discarded 1") {
		t.Errorf("hookjet dlq discard: %v %q %q", err, out.String(), errOut.String())
	}
	out.Reset()
	err = cli.Run(t.Context(), []string{"dlq", "dicsard", "--admin", h.srv.AdminAddr()}, func(string) string { return "" }, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), `did you mean "discard"`) {
		t.Errorf("hookjet dlq dicsard: %v, want a suggestion of discard", err)
	}

	// The console: a dry run, then the confirmed discard.
	base := "http://" + h.srv.AdminAddr()
	var cookie *http.Cookie
	form := func(v url.Values) (int, string) {
		req, _ := http.NewRequest("POST", base+"/console/dlq/discard", strings.NewReader(v.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", base)
		req.AddCookie(cookie)
		resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	resp, err := http.Get(base + "/console/dlq?endpoint=crm")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if len(resp.Cookies()) != 1 {
		t.Fatalf("the open console set cookies %v, want its session", resp.Cookies())
	}
	cookie = resp.Cookies()[0]
	if !strings.Contains(string(page), `formaction="/console/dlq/discard"`) {
		t.Error("/console/dlq has no discard action")
	}
	csrf := csrfOf(t, string(page))
	code, body := form(url.Values{"csrf": {csrf}, "endpoint": {"crm"}})
	if code != 200 || !strings.Contains(body, "Confirm: discard 2") {
		t.Fatalf("console discard dry run: HTTP %d, want a confirmation of 2: %.300s", code, body)
	}
	if n := len(h.dlq("?endpoint=crm")); n != 2 {
		t.Errorf("the dry run discarded: %d dead letters left, want 2", n)
	}
	if code, _ := form(url.Values{"csrf": {csrf}, "endpoint": {"crm"}, "step": {"confirm"}}); code != http.StatusSeeOther {
		t.Fatalf("console discard confirmed: HTTP %d, want 303", code)
	}
	if n := len(h.dlq("?endpoint=crm")); n != 0 {
		t.Errorf("%d dead letters after the console's discard, want 0", n)
	}
}
