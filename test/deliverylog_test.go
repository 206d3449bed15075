package test

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/cli"
)

// logRecord is an attempt record as the API answers it.
type logRecord struct {
	EventID    string  `json:"event_id"`
	EventType  string  `json:"event_type"`
	Endpoint   string  `json:"endpoint"`
	Tenant     string  `json:"tenant"`
	Attempt    int     `json:"attempt"`
	Trigger    string  `json:"trigger"`
	StartedAt  string  `json:"started_at"`
	DurationMS float64 `json:"duration_ms"`
	Status     int     `json:"status"`
	Class      string  `json:"class"`
	Reason     string  `json:"reason"`
	Error      string  `json:"error"`
	Response   string  `json:"response"`
	Seq        uint64  `json:"seq"`
	Delivery   string  `json:"delivery"`
}

type eventView struct {
	ID          string     `json:"id"`
	Type        string     `json:"type"`
	PublishedAt *time.Time `json:"published_at"`
	Size        *int       `json:"size"`
	Deliveries  []struct {
		Endpoint string      `json:"endpoint"`
		Number   int         `json:"number"`
		Trigger  string      `json:"trigger"`
		State    string      `json:"state"`
		Attempts []logRecord `json:"attempts"`
	} `json:"deliveries"`
}

type attemptPage struct {
	Attempts []logRecord `json:"attempts"`
	Next     string      `json:"next"`
}

const (
	logHeaderValue = "hdr-credential-4711"
	logPayloadMark = "payload-card-number-4242"
)

// TestDeliveryLog follows a flaky endpoint (503 with a body, then 200) and a
// permanent one (400) through the delivery log: the event's view, the
// endpoint's attempts page by page, filters, the exports, and a scan of
// every stored record for secrets, header values and payloads.
func TestDeliveryLog(t *testing.T) {
	flaky := newReceiver(t, []string{secretA, secretB}, func(w http.ResponseWriter, d delivery) {
		if d.Attempt == 1 && !strings.HasPrefix(d.ID, "page_") {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, "busy, try later")
			return
		}
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, "ok, a 2xx body is not kept")
	})
	perm := newReceiver(t, []string{secretA, secretB}, func(w http.ResponseWriter, _ delivery) {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"error":"field amount is required"}`)
	})
	h := startHookjet(t, testConfig(t, t.TempDir(), "",
		endpointYAML{ID: "flaky", URL: flaky.URL, Events: []string{"order.*", "page.*"}, Extra: "    headers: {X-Api-Key: " + logHeaderValue + "}\n    tenant: acme\n"},
		endpointYAML{ID: "perm", URL: perm.URL, Events: []string{"order.*"}},
	), cli.Options{})
	token := h.cfg.Admin.Token.Reveal()
	id := "evt.1 with space"
	// Tenant acme's event: flaky (tenant acme) and perm (no tenant) both get it.
	h.publishFor("acme", "order.created", id, []byte(`{"card":"`+logPayloadMark+`"}`))

	var ev eventView
	checkFor(t, 20*time.Second, 20*time.Millisecond, func() error {
		ev = eventView{}
		if code := h.api("GET", "/api/v1/events/"+url.PathEscape(id), token, nil, &ev); code != 200 {
			return fmt.Errorf("HTTP %d", code)
		}
		if len(ev.Deliveries) != 2 || ev.Deliveries[0].State == "pending" || ev.Deliveries[1].State == "pending" {
			return fmt.Errorf("deliveries %+v", ev.Deliveries)
		}
		return nil
	})
	if ev.ID != id || ev.Type != "order.created" || ev.PublishedAt == nil || ev.Size == nil || *ev.Size != len(`{"card":"`+logPayloadMark+`"}`) {
		t.Errorf("event = %s %s published %v size %v", ev.ID, ev.Type, ev.PublishedAt, ev.Size)
	}
	got := map[string]string{}
	for _, d := range ev.Deliveries {
		var parts []string
		for _, a := range d.Attempts {
			parts = append(parts, fmt.Sprintf("%d/%s/%s/%d/%s/%q", a.Attempt, a.Trigger, a.Class, a.Status, a.Reason, a.Response))
			if a.Tenant != "acme" || a.EventType != "order.created" || !strings.HasSuffix(a.StartedAt, "Z") { // the event's tenant, whichever endpoint
				t.Errorf("record %+v: tenant, type or UTC time wrong", a)
			}
		}
		got[d.Endpoint] = d.State + " " + strings.Join(parts, " ")
	}
	want := map[string]string{
		"flaky": `delivered 1/delivery/transient/503//"busy, try later" 2/retry/success/200//""`,
		"perm":  `dead_letter 1/delivery/permanent/400//"{\"error\":\"field amount is required\"}" 1/delivery/dead_letter/400/permanent/""`,
	}
	for ep, w := range want {
		if got[ep] != w {
			t.Errorf("%s:\n got  %s\n want %s", ep, got[ep], w)
		}
	}
	var dl struct {
		Entries []struct {
			Endpoint     string `json:"endpoint"`
			LastResponse string `json:"last_response"`
		} `json:"entries"`
	}
	if h.api("GET", "/api/v1/dlq?endpoint=perm", token, nil, &dl); len(dl.Entries) != 1 || dl.Entries[0].LastResponse != `{"error":"field amount is required"}` {
		t.Errorf("dlq list: %+v, want perm's response excerpt", dl.Entries)
	}
	if code := h.api("GET", "/api/v1/events/no-such-event", token, nil, nil); code != 404 {
		t.Errorf("unknown event: HTTP %d, want 404", code)
	}

	// 25 more deliveries to flaky, then its attempts in pages of 10.
	for i := range 25 {
		h.publishFor("acme", "page.x", fmt.Sprintf("page_%02d", i), []byte(`{}`))
	}
	checkFor(t, 20*time.Second, 20*time.Millisecond, func() error {
		var p attemptPage
		h.api("GET", "/api/v1/endpoints/flaky/attempts?limit=1000&class=success", token, nil, &p)
		if len(p.Attempts) != 26 {
			return fmt.Errorf("%d successes logged", len(p.Attempts))
		}
		return nil
	})
	var all []logRecord
	after := ""
	for pages := 0; ; pages++ {
		var p attemptPage
		if code := h.api("GET", "/api/v1/endpoints/flaky/attempts?limit=10&after="+after, token, nil, &p); code != 200 {
			t.Fatalf("page: HTTP %d", code)
		}
		all = append(all, p.Attempts...)
		if p.Next == "" || pages > 10 {
			break
		}
		after = p.Next
	}
	if len(all) != 27 {
		t.Errorf("pages hold %d attempts of flaky, want 27", len(all))
	}
	for i := 1; i < len(all); i++ {
		if all[i].Seq >= all[i-1].Seq || all[i].Endpoint != "flaky" {
			t.Fatalf("page order: %d after %d (%s)", all[i].Seq, all[i-1].Seq, all[i].Endpoint)
		}
	}
	seen := map[string]int{}
	for _, a := range all {
		seen[a.EventID]++
	}
	for i := range 25 {
		if id := fmt.Sprintf("page_%02d", i); seen[id] != 1 {
			t.Errorf("pages hold %s %d times, want once", id, seen[id])
		}
	}
	if seen[id] != 2 {
		t.Errorf("pages hold %s %d times, want twice", id, seen[id])
	}

	// Filters.
	var p attemptPage
	h.api("GET", "/api/v1/attempts?class=permanent", token, nil, &p)
	if len(p.Attempts) != 1 || p.Attempts[0].Endpoint != "perm" {
		t.Errorf("class=permanent: %+v", p.Attempts)
	}
	p = attemptPage{}
	h.api("GET", "/api/v1/attempts?tenant=acme&event_type=order.created", token, nil, &p)
	if len(p.Attempts) != 4 { // flaky's two attempts, perm's attempt and its dead letter
		t.Errorf("tenant=acme&event_type=order.created: %d attempts, want 4", len(p.Attempts))
	}
	p = attemptPage{}
	h.api("GET", "/api/v1/attempts?until=1h", token, nil, &p)
	if len(p.Attempts) != 0 {
		t.Errorf("until=1h (an hour ago): %d attempts, want none", len(p.Attempts))
	}
	for _, bad := range []struct{ query, field string }{
		{"class=nope", "class"}, {"limit=0", "limit"}, {"limit=1001", "limit"}, {"since=yesterday", "since"}, {"after=x", "after"},
	} {
		var e struct{ Error, Field string }
		if code := h.api("GET", "/api/v1/attempts?"+bad.query, token, nil, &e); code != 400 || e.Field != bad.field || !strings.Contains(e.Error, bad.field) {
			t.Errorf("%s: HTTP %d %+v, want 400 naming %s", bad.query, code, e, bad.field)
		}
	}

	checkExports(t, h, token)
	checkLogHoldsNoSecrets(t, h)
	checkLogCommands(t, h, id)
}

// checkLogCommands runs the CLI's delivery-log commands against h.
func checkLogCommands(t *testing.T, h *hookjet, id string) {
	t.Helper()
	run := func(args ...string) string {
		var stdout, stderr strings.Builder
		args = append(args, "--admin", h.srv.AdminAddr())
		if err := cli.Run(t.Context(), args, func(string) string { return "" }, &stdout, &stderr); err != nil {
			t.Fatalf("hookjet %v: %v\n%s", args, err, stderr.String())
		}
		return stdout.String()
	}
	out := run("events", "show", id)
	for _, want := range []string{"type       order.created", "flaky: delivered", "perm: dead_letter", "busy, try later", "permanent: HTTP 400"} {
		if !strings.Contains(out, want) {
			t.Errorf("events show: no %q in\n%s", want, out)
		}
	}
	out = run("endpoints", "attempts", "perm", "--class", "permanent")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 2 || !strings.Contains(lines[1], id) {
		t.Errorf("endpoints attempts perm --class permanent:\n%s", out)
	}
	out = run("export", "attempts", "--since", "1h", "--endpoint", "perm", "--format", "jsonl")
	if n := strings.Count(out, "\n"); n != 2 || !strings.Contains(out, `"class":"dead_letter"`) {
		t.Errorf("export attempts --endpoint perm: %d lines\n%s", n, out)
	}
	out = run("dlq", "list", "--endpoint", "perm")
	if !strings.Contains(out, `field amount is required`) {
		t.Errorf("dlq list shows no response excerpt:\n%s", out)
	}
}

// checkExports reads the CSV and JSON-lines exports of attempts and dead
// letters.
func checkExports(t *testing.T, h *hookjet, token string) {
	t.Helper()
	get := func(path string) (*http.Response, string) {
		req, _ := http.NewRequest("GET", "http://"+h.srv.AdminAddr()+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		return resp, string(raw)
	}
	resp, body := get("/api/v1/export/attempts?since=1h&format=csv")
	rows, err := csv.NewReader(strings.NewReader(body)).ReadAll()
	if err != nil || resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/csv") {
		t.Fatalf("csv export: HTTP %d %s, %v", resp.StatusCode, resp.Header.Get("Content-Type"), err)
	}
	if len(rows) != 1+29 || rows[0][0] != "seq" || rows[0][7] != "started_at" {
		t.Errorf("csv export: %d rows, header %v; want a header and 29 records", len(rows), rows[0])
	}
	for _, r := range rows[1:] {
		if !strings.HasSuffix(r[7], "Z") {
			t.Errorf("csv started_at %q is not UTC", r[7])
		}
	}
	resp, body = get("/api/v1/export/attempts?endpoint=perm&format=jsonl")
	sc := bufio.NewScanner(strings.NewReader(body))
	n := 0
	for sc.Scan() {
		var r logRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil || r.Endpoint != "perm" {
			t.Errorf("jsonl line %q: %v", sc.Text(), err)
		}
		n++
	}
	if resp.StatusCode != 200 || n != 2 {
		t.Errorf("jsonl export of perm: HTTP %d, %d lines, want 2", resp.StatusCode, n)
	}
	resp, body = get("/api/v1/export/dlq?format=csv")
	rows, err = csv.NewReader(strings.NewReader(body)).ReadAll()
	if err != nil || resp.StatusCode != 200 || len(rows) != 2 || rows[0][len(rows[0])-1] != "age_seconds" || rows[1][3] != "perm" {
		t.Errorf("dlq export: HTTP %d, rows %v, %v", resp.StatusCode, rows, err)
	}
	if resp, _ := get("/api/v1/export/attempts?format=xml"); resp.StatusCode != 400 {
		t.Errorf("format=xml: HTTP %d, want 400", resp.StatusCode)
	}
}

// checkLogHoldsNoSecrets reads every stored record of HOOKJET_LOG: none
// holds a signing secret, a configured header value or the payload.
func checkLogHoldsNoSecrets(t *testing.T, h *hookjet) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := h.js.Stream(ctx, "HOOKJET_LOG")
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.Config.PersistMode != natsjs.AsyncPersistMode || info.Config.Discard != natsjs.DiscardOld {
		t.Errorf("HOOKJET_LOG persist mode %v, discard %v; want async, old", info.Config.PersistMode, info.Config.Discard)
	}
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq; seq++ {
		m, err := st.GetMsg(ctx, seq)
		if err != nil {
			t.Fatalf("record %d: %v", seq, err)
		}
		all := m.Subject + string(m.Data) + fmt.Sprint(m.Header)
		for _, secret := range []string{secretA, secretB, strings.TrimPrefix(secretA, "whsec_"), logHeaderValue, logPayloadMark} {
			if strings.Contains(all, secret) {
				t.Errorf("record %d holds %q: %s", seq, secret, all)
			}
		}
	}
	if info.State.Msgs != 29 {
		t.Errorf("HOOKJET_LOG holds %d records, want 29", info.State.Msgs)
	}
}

// TestDeliveryLogReplayKeepsTheDeadLetter dead-letters an event (400), then
// replays it (204): the event's view keeps both deliveries apart, the first
// dead-lettered with its 400 and the replay delivered, in the API, in
// "hookjet events show" and on the console's event page.
func TestDeliveryLogReplayKeepsTheDeadLetter(t *testing.T) {
	rcv := newReceiver(t, []string{secretA, secretB}, func(w http.ResponseWriter, d delivery) {
		if d.Attempt == 1 {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, "amount missing")
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	h := startHookjet(t, testConfig(t, t.TempDir(), "", endpointYAML{ID: "crm", URL: rcv.URL}), cli.Options{})
	token := h.cfg.Admin.Token.Reveal()
	const id = "evt-replayed"
	h.publish("order.created", id, []byte(`{"n":1}`))
	checkFor(t, 15*time.Second, 20*time.Millisecond, func() error {
		if len(h.dlq("?endpoint=crm")) != 1 {
			return fmt.Errorf("not dead-lettered yet")
		}
		return nil
	})
	if code := h.api("POST", "/api/v1/dlq/replay", token, map[string]any{"endpoint": "crm"}, nil); code != http.StatusOK {
		t.Fatalf("replay: HTTP %d", code)
	}
	var ev eventView
	checkFor(t, 15*time.Second, 20*time.Millisecond, func() error {
		ev = eventView{}
		if code := h.api("GET", "/api/v1/events/"+id, token, nil, &ev); code != 200 {
			return fmt.Errorf("HTTP %d", code)
		}
		if len(ev.Deliveries) != 2 || ev.Deliveries[1].State != "delivered" {
			return fmt.Errorf("deliveries %+v", ev.Deliveries)
		}
		return nil
	})
	var got []string
	for _, d := range ev.Deliveries {
		var parts []string
		for _, a := range d.Attempts {
			parts = append(parts, fmt.Sprintf("%d/%s/%s/%d", a.Attempt, a.Trigger, a.Class, a.Status))
			if a.Delivery == "" || a.Delivery != d.Attempts[0].Delivery {
				t.Errorf("record %+v: delivery %q, want its delivery's %q", a, a.Delivery, d.Attempts[0].Delivery)
			}
		}
		got = append(got, fmt.Sprintf("%s #%d %s %s: %s", d.Endpoint, d.Number, d.Trigger, d.State, strings.Join(parts, " ")))
	}
	want := []string{
		"crm #1 delivery dead_letter: 1/delivery/permanent/400 1/delivery/dead_letter/400",
		"crm #2 replay delivered: 1/replay/success/204",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("deliveries:\n got  %s\n want %s", strings.Join(got, "\n      "), strings.Join(want, "\n      "))
	}

	var stdout, stderr strings.Builder
	if err := cli.Run(t.Context(), []string{"events", "show", id, "--admin", h.srv.AdminAddr()}, func(string) string { return "" }, &stdout, &stderr); err != nil {
		t.Fatalf("events show: %v\n%s", err, stderr.String())
	}
	out := stdout.String()
	for _, w := range []string{"crm · delivery 1 (delivery): dead_letter", "crm · delivery 2 (replay): delivered", "permanent", "amount missing", "success"} {
		if !strings.Contains(out, w) {
			t.Errorf("events show: no %q in\n%s", w, out)
		}
	}

	b := &browserless{t: t, base: "http://" + h.srv.AdminAddr(), client: &http.Client{}}
	t.Cleanup(b.client.CloseIdleConnections)
	code, page := b.get("/console/events/" + id)
	if code != http.StatusOK || !strings.Contains(page, "delivery 1 (delivery)") || !strings.Contains(page, "delivery 2 (replay)") || !strings.Contains(page, "amount missing") {
		t.Errorf("console event page: HTTP %d, want both deliveries numbered apart:\n%s", code, page)
	}
}

// TestEndpointOwnerSettingsLastTest checks the endpoint object's owner (from
// the file and through the API), its effective settings and last_test.
func TestEndpointOwnerSettingsLastTest(t *testing.T) {
	r := newReceiver(t, []string{secretA, secretB}, nil)
	h := startHookjet(t, testConfig(t, t.TempDir(), "",
		endpointYAML{ID: "file", URL: r.URL, Extra: "    owner: payments-team\n    retry: {max_attempts: 3}\n"}), cli.Options{})
	token := h.cfg.Admin.Token.Reveal()
	type object struct {
		Owner    string `json:"owner"`
		LastTest *struct {
			EventID string `json:"event_id"`
			Class   string `json:"class"`
			Status  int    `json:"status"`
		} `json:"last_test"`
		Settings *struct {
			Timeout    string `json:"timeout"`
			MaxBacklog int    `json:"max_backlog"`
			Retry      struct {
				MaxAttempts int    `json:"max_attempts"`
				Base        string `json:"base"`
			} `json:"retry"`
		} `json:"settings"`
	}
	var o object
	h.api("GET", "/api/v1/endpoints/file", token, nil, &o)
	if o.Owner != "payments-team" || o.Settings == nil || o.Settings.Retry.MaxAttempts != 3 || o.Settings.Retry.Base != "50ms" || o.Settings.Timeout != "2s" || o.Settings.MaxBacklog != 100000 || o.LastTest != nil {
		t.Errorf("file endpoint: %+v settings %+v", o, o.Settings)
	}
	var sent struct {
		EventID string `json:"event_id"`
	}
	if code := h.api("POST", "/api/v1/endpoints/file/test", token, nil, &sent); code != 202 {
		t.Fatalf("test: HTTP %d", code)
	}
	checkFor(t, 15*time.Second, 20*time.Millisecond, func() error {
		o = object{}
		h.api("GET", "/api/v1/endpoints/file", token, nil, &o)
		if o.LastTest == nil || o.LastTest.EventID != sent.EventID {
			return fmt.Errorf("last_test %+v", o.LastTest)
		}
		return nil
	})
	if o.LastTest.Class != "success" || o.LastTest.Status != 204 {
		t.Errorf("last_test %+v, want success 204", o.LastTest)
	}
	// The test event's record, with trigger test.
	checkFor(t, 15*time.Second, 20*time.Millisecond, func() error {
		var ev eventView
		if code := h.api("GET", "/api/v1/events/"+sent.EventID, token, nil, &ev); code != 200 || len(ev.Deliveries) != 1 {
			return fmt.Errorf("HTTP %d %+v", code, ev.Deliveries)
		}
		if a := ev.Deliveries[0].Attempts; len(a) != 1 || a[0].Trigger != "test" || ev.Deliveries[0].State != "delivered" {
			return fmt.Errorf("attempts %+v", a)
		}
		return nil
	})

	body := map[string]any{"id": "api1", "url": r.URL, "owner": "team-a", "secrets": []string{secretA, secretB}}
	if code := h.api("POST", "/api/v1/endpoints", token, body, &o); code != 201 || o.Owner != "team-a" {
		t.Fatalf("create: HTTP %d owner %q", code, o.Owner)
	}
	if code := h.api("PATCH", "/api/v1/endpoints/api1", token, map[string]any{"owner": "team-b"}, &o); code != 200 || o.Owner != "team-b" {
		t.Fatalf("patch: HTTP %d owner %q", code, o.Owner)
	}
	checkFor(t, 5*time.Second, 20*time.Millisecond, func() error {
		o = object{}
		h.api("GET", "/api/v1/endpoints/api1", token, nil, &o)
		if o.Owner != "team-b" {
			return fmt.Errorf("owner %q", o.Owner)
		}
		return nil
	})
}
