package test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/cli"
	"github.com/hookjet/hookjet/config"
	hjs "github.com/hookjet/hookjet/jetstream"
	"github.com/hookjet/hookjet/publish"
	"github.com/hookjet/hookjet/server"
)

// postEvents posts body to POST /api/v1/events at addr with token ("" for
// none) and returns the status and the decoded answer.
func postEvents(t *testing.T, addr, token string, body any, hdr ...string) (int, map[string]any) {
	t.Helper()
	var raw []byte
	switch b := body.(type) {
	case []byte:
		raw = b
	default:
		var err error
		if raw, err = json.Marshal(body); err != nil {
			t.Fatal(err)
		}
	}
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/api/v1/events", bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("POST /api/v1/events: HTTP %d, body %q is not JSON: %v", resp.StatusCode, b, err)
	}
	return resp.StatusCode, out
}

// storedByID finds the stored event with Nats-Msg-Id id in HOOKJET_EVENTS.
func storedByID(t *testing.T, js natsjs.JetStream, id string) *natsjs.RawStreamMsg {
	t.Helper()
	st, err := js.Stream(t.Context(), hjs.EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq; seq++ {
		m, err := st.GetMsg(t.Context(), seq)
		if err == nil && m.Header.Get("Nats-Msg-Id") == id {
			return m
		}
	}
	t.Fatalf("event %s is not in %s", id, hjs.EventsStream)
	return nil
}

func ids(out map[string]any) []string {
	var s []string
	list, _ := out["ids"].([]any)
	for _, v := range list {
		id, _ := v.(string)
		s = append(s, id)
	}
	return s
}

// One event and a batch over HTTP are delivered, signed, with their ids
// (given or generated); tenant and key are stored in the event's headers;
// the same id again is a duplicate, delivered once.
func TestPublishOverHTTP(t *testing.T) {
	r := newReceiver(t, []string{secretA, secretB}, nil)
	h := startHookjet(t, testConfig(t, t.TempDir(), "", endpointYAML{ID: "sink", URL: r.URL}), server.Options{})
	addr := h.srv.AdminAddr()
	code, out := postEvents(t, addr, "", map[string]any{"id": "evt_http_1", "type": "order.created", "data": map[string]int{"order": 42}, "tenant": "acme", "key": "customer-7"})
	if code != http.StatusAccepted || strings.Join(ids(out), ",") != "evt_http_1" || out["duplicates"] != 0.0 {
		t.Fatalf("single event: HTTP %d %v", code, out)
	}
	code, out = postEvents(t, addr, "", map[string]any{"events": []map[string]any{
		{"type": "order.created", "data": 1}, {"type": "order.paid", "data": "two", "key": "customer-7"}, {"id": "evt_http_3", "type": "order.created", "data": []int{3}}, // null is refused (TestHandlerErrorsHaveOneShapeInJSONWords)
	}})
	batch := ids(out)
	if code != http.StatusAccepted || len(batch) != 3 || batch[2] != "evt_http_3" || !strings.HasPrefix(batch[0], "evt_") || out["duplicates"] != 0.0 {
		t.Fatalf("batch: HTTP %d %v", code, out)
	}
	all := append([]string{"evt_http_1"}, batch...)
	for _, id := range all {
		r.waitFor(t, id)
	}
	for _, d := range r.deliveries() {
		if d.ID == "evt_http_1" && string(d.Body) != `{"order":42}` {
			t.Errorf("evt_http_1 delivered as %q", d.Body)
		}
	}
	m := storedByID(t, h.js, "evt_http_1")
	if m.Header.Get("Hookjet-Tenant") != "acme" || m.Header.Get("Hookjet-Ordering-Key") != "customer-7" || m.Subject != "hookjet.events.order.created" {
		t.Errorf("evt_http_1 stored on %s with headers %v", m.Subject, m.Header)
	}
	if m := storedByID(t, h.js, batch[1]); m.Header.Get("Hookjet-Ordering-Key") != "customer-7" || m.Header.Get("Hookjet-Tenant") != "" {
		t.Errorf("%s stored with headers %v", batch[1], m.Header)
	}
	// The same id again, alone and twice in one batch: duplicates.
	code, out = postEvents(t, addr, "", map[string]any{"id": "evt_http_1", "type": "order.created", "data": 1})
	if code != http.StatusAccepted || out["duplicates"] != 1.0 {
		t.Errorf("same id again: HTTP %d %v, want duplicates 1", code, out)
	}
	code, out = postEvents(t, addr, "", map[string]any{"events": []map[string]any{{"id": "evt_twice", "type": "order.created", "data": 1}, {"id": "evt_twice", "type": "order.created", "data": 1}}})
	if code != http.StatusAccepted || out["duplicates"] != 1.0 {
		t.Errorf("an id twice in a batch: HTTP %d %v, want duplicates 1", code, out)
	}
	r.waitFor(t, "evt_twice")
	h.settle("order.created", r)
	for _, id := range append(all, "evt_twice") {
		if n := r.requestsFor(id); n != 1 {
			t.Errorf("%s delivered %d times, want once", id, n)
		}
	}
}

// Every refusal of the HTTP route: 400 naming every bad field, 413, 401
// without the token (publish.token or admin.token), 503 when JetStream
// cannot store; publish.listen serves the route and nothing else.
func TestPublishOverHTTPRefusals(t *testing.T) {
	extra := "publish:\n  token: pubtok\n  listen: 127.0.0.1:0\n"
	cfg := testConfig(t, t.TempDir(), extra, endpointYAML{ID: "sink", URL: "http://127.0.0.1:1/"})
	cfg.Security.MaxPayloadBytes = 1024
	cfg.Admin.Token = config.NewSecret("admintok")
	h := startHookjet(t, cfg, server.Options{})
	admin, pub := h.srv.AdminAddr(), h.srv.PublishAddr()
	if pub == "" {
		t.Fatal("publish.listen is not served")
	}
	good := map[string]any{"type": "order.created", "data": 1}
	for _, tt := range []struct {
		addr, token string
		want        int
	}{{admin, "", 401}, {admin, "wrong", 401}, {admin, "pubtok", 202}, {admin, "admintok", 202}, {pub, "", 401}, {pub, "pubtok", 202}, {pub, "admintok", 202}} {
		if code, out := postEvents(t, tt.addr, tt.token, good); code != tt.want {
			t.Errorf("token %q at %s: HTTP %d %v, want %d", tt.token, tt.addr, code, out, tt.want)
		}
	}
	code, out := postEvents(t, pub, "pubtok", map[string]any{"events": []map[string]any{
		{"type": "a", "data": 1}, {"type": "a", "data": 1}, {"type": "a", "data": 1},
		{"data": 1, "tenant": "Not Valid", "key": strings.Repeat("k", 256)}, {"type": "b.*", "data": 1, "colour": "red"},
	}})
	var fields []string
	errs, _ := out["errors"].([]any)
	for _, e := range errs {
		fields = append(fields, e.(map[string]any)["field"].(string))
	}
	if want := "events[3].type,events[3].tenant,events[3].key,events[4].colour,events[4].type"; code != 400 || strings.Join(fields, ",") != want || out["field"] != "events[3].type" {
		t.Errorf("bad batch: HTTP %d fields %v (%v), want 400 naming %s", code, fields, out, want)
	}
	if code, out := postEvents(t, pub, "pubtok", map[string]any{"type": "a", "data": strings.Repeat("x", 2000)}); code != 413 || out["field"] != "data" {
		t.Errorf("payload over security.max_payload_bytes: HTTP %d %v, want 413 naming data", code, out)
	}
	if code, out := postEvents(t, pub, "pubtok", bytes.Repeat([]byte(" "), publish.DefaultMaxBody+1)); code != 413 || out["field"] != "body" {
		t.Errorf("body too large: HTTP %d %v, want 413", code, out)
	}
	if code := h.api("GET", "/api/v1/summary", "pubtok", nil, nil); code != 401 {
		t.Errorf("publish.token on an admin route: HTTP %d, want 401", code)
	}
	// publish.listen is not the admin API the OpenAPI document describes.
	resp, err := offAPI.Get("http://" + pub + "/api/v1/summary")
	switch {
	case err != nil:
		t.Errorf("admin route on publish.listen: %v, want 404", err)
	case resp.StatusCode != 404:
		t.Errorf("admin route on publish.listen: %s, want 404", resp.Status)
	}
	if resp != nil {
		resp.Body.Close()
	}
	// JetStream refuses to store: a full stream (Discard: New).
	fillEvents(t, h.js)
	code, out = postEvents(t, pub, "pubtok", good)
	if msg, _ := out["error"].(string); code != 503 || !strings.Contains(msg, "JetStream cannot store") {
		t.Errorf("full stream: HTTP %d %v, want 503", code, out)
	}
	_, err = hjs.PublishRequest(t.Context(), h.nc, publish.Event{Type: "order.created", Data: []byte("{}")})
	if re, ok := errors.AsType[*publish.ReplyError](err); !ok || !strings.Contains(re.Error(), "JetStream cannot store") {
		t.Errorf("full stream, NATS request: %v, want a reply naming the problem", err)
	}
}

// fillEvents makes HOOKJET_EVENTS refuse new events: it may hold no more
// than it does.
func fillEvents(t *testing.T, js natsjs.JetStream) {
	t.Helper()
	st, err := js.Stream(t.Context(), hjs.EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	sc := info.Config
	sc.MaxMsgs, sc.Discard = int64(info.State.Msgs), natsjs.DiscardNew
	if _, err := js.UpdateStream(t.Context(), sc); err != nil {
		t.Fatal(err)
	}
}

// The open admin API (no token) keeps its guards on the publish route: a
// body that is not JSON, a foreign Origin or Host is refused.
func TestPublishOpenModeGuards(t *testing.T) {
	h := startHookjet(t, testConfig(t, t.TempDir(), "", endpointYAML{ID: "sink", URL: "http://127.0.0.1:1/"}), server.Options{})
	addr := h.srv.AdminAddr()
	good := `{"type":"order.created","data":1}`
	for _, tt := range []struct {
		name string
		hdr  []string
		want int
	}{
		{"plain", nil, 202},
		{"text/plain body", []string{"Content-Type", "text/plain"}, 415},
		{"foreign origin", []string{"Origin", "https://evil.example"}, 403},
		{"cross-site", []string{"Sec-Fetch-Site", "cross-site"}, 403},
		{"rebound host", []string{"Host", "evil.example"}, 403},
	} {
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/api/v1/events", strings.NewReader(good))
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(tt.hdr); i += 2 {
			if tt.hdr[i] == "Host" {
				req.Host = tt.hdr[i+1]
				continue
			}
			req.Header.Set(tt.hdr[i], tt.hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tt.want {
			t.Errorf("%s: HTTP %d, want %d", tt.name, resp.StatusCode, tt.want)
		}
	}
}

// A NATS request to hookjet.publish.<type> is answered once stored, with
// its id and where it is; the event is delivered once however often it is
// sent; tenant and key are stored; hookjet publish uses the request, and
// --http the HTTP route.
func TestPublishOverNATSRequest(t *testing.T) {
	r := newReceiver(t, []string{secretA, secretB}, nil)
	h := startHookjet(t, testConfig(t, t.TempDir(), "", endpointYAML{ID: "sink", URL: r.URL}), server.Options{})
	ev := publish.Event{ID: "evt_req_1", Type: "order.created", Data: []byte(`{"n":1}`), Tenant: "acme", Key: "k-1"}
	got, err := hjs.PublishRequest(t.Context(), h.nc, ev)
	if err != nil || got.ID != "evt_req_1" || got.Duplicate || got.Stream != hjs.EventsStream || got.Seq == 0 {
		t.Fatalf("request: %+v %v", got, err)
	}
	again, err := hjs.PublishRequest(t.Context(), h.nc, ev)
	if err != nil || !again.Duplicate || again.Seq != got.Seq {
		t.Errorf("same id again: %+v %v, want a duplicate of #%d", again, err, got.Seq)
	}
	m := storedByID(t, h.js, "evt_req_1")
	if m.Header.Get("Hookjet-Tenant") != "acme" || m.Header.Get("Hookjet-Ordering-Key") != "k-1" {
		t.Errorf("stored headers %v", m.Header)
	}
	_, err = hjs.PublishRequest(t.Context(), h.nc, publish.Event{Type: "order.created", Tenant: "ACME"})
	if re, ok := errors.AsType[*publish.ReplyError](err); !ok || re.Field != "tenant" {
		t.Errorf("bad tenant: %v, want a reply naming tenant", err)
	}
	env := []string{"HOOKJET_NATS_LISTEN=" + h.cfg.NATS.Listen, "HOOKJET_ADMIN_LISTEN=" + h.srv.AdminAddr()}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"publish", "order.created", "--id", "evt_cli_1", "--key", "k-2"}, "published order.created id=evt_cli_1 stream=HOOKJET_EVENTS seq="},
		{[]string{"publish", "order.created", "--id", "evt_cli_1"}, "duplicate: event evt_cli_1 was already stored as HOOKJET_EVENTS #"},
		{[]string{"publish", "order.created", "--id", "evt_cli_2", "--http", "--tenant", "acme"}, "published order.created id=evt_cli_2 (HTTP 202)"},
		{[]string{"publish", "order.created", "--id", "evt_cli_2", "--http"}, "duplicate: event evt_cli_2 was already stored as HOOKJET_EVENTS #"},
	} {
		var stdout, stderr bytes.Buffer
		if err := cli.Main(t.Context(), tt.args, env, &stdout, &stderr); err != nil || !strings.HasPrefix(stdout.String(), tt.want) {
			t.Errorf("hookjet %s: %v, stdout %q stderr %q, want %q", strings.Join(tt.args, " "), err, stdout.String(), stderr.String(), tt.want)
		}
	}
	if m := storedByID(t, h.js, "evt_cli_1"); m.Header.Get("Hookjet-Ordering-Key") != "k-2" {
		t.Errorf("--key not stored: %v", m.Header)
	}
	if m := storedByID(t, h.js, "evt_cli_2"); m.Header.Get("Hookjet-Tenant") != "acme" {
		t.Errorf("--tenant over --http not stored: %v", m.Header)
	}
	for _, id := range []string{"evt_req_1", "evt_cli_1", "evt_cli_2"} {
		r.waitFor(t, id)
	}
	h.settle("order.created", r)
	for _, id := range []string{"evt_req_1", "evt_cli_1", "evt_cli_2"} {
		if n := r.requestsFor(id); n != 1 {
			t.Errorf("%s delivered %d times, want once", id, n)
		}
	}
}

// An id hookjet remembers (its dedupe ledger) is answered as a duplicate
// of the first copy past JetStream's duplicate window, by the NATS
// request, the CLI and HTTP, and is not stored again; each event is
// delivered once (walkthrough item 1 of issue 47: the copies were stored
// as new events, answered "published", and dropped by the fan-out).
func TestPublishRememberedIDPastTheWindowIsADuplicate(t *testing.T) {
	r := newReceiver(t, []string{secretA, secretB}, nil)
	cfg := testConfig(t, t.TempDir(), "streams:\n  duplicate_window: 1s\n", endpointYAML{ID: "sink", URL: r.URL})
	h := startHookjet(t, cfg, server.Options{})
	addr := h.srv.AdminAddr()
	first, err := hjs.PublishRequest(t.Context(), h.nc, publish.Event{ID: "evt_past_1", Type: "order.created", Data: []byte(`{}`)})
	if err != nil || first.Duplicate {
		t.Fatalf("first request: %+v %v", first, err)
	}
	if code, out := postEvents(t, addr, "", map[string]any{"id": "evt_past_2", "type": "order.created", "data": 1}); code != http.StatusAccepted || out["duplicates"] != 0.0 {
		t.Fatalf("first HTTP publish: %d %v", code, out)
	}
	second := storedByID(t, h.js, "evt_past_2").Sequence
	r.waitFor(t, "evt_past_1")
	r.waitFor(t, "evt_past_2")
	time.Sleep(1500 * time.Millisecond) // past JetStream's window

	for _, c := range []struct {
		id  string
		seq uint64
	}{{"evt_past_1", first.Seq}, {"evt_past_2", second}} {
		again, err := hjs.PublishRequest(t.Context(), h.nc, publish.Event{ID: c.id, Type: "order.created", Data: []byte(`{}`)})
		if err != nil || !again.Duplicate || again.Seq != c.seq || again.Stream != hjs.EventsStream {
			t.Errorf("%s requested again past the window: %+v %v, want a duplicate of %s #%d", c.id, again, err, hjs.EventsStream, c.seq)
		}
		code, out := postEvents(t, addr, "", map[string]any{"id": c.id, "type": "order.created", "data": 1})
		if code != http.StatusAccepted || out["duplicates"] != 1.0 {
			t.Errorf("%s posted again past the window: HTTP %d %v, want duplicates 1", c.id, code, out)
		}
		env := []string{"HOOKJET_NATS_LISTEN=" + h.cfg.NATS.Listen}
		var stdout, stderr bytes.Buffer
		want := fmt.Sprintf("duplicate: event %s was already stored as %s #%d; not stored again\n", c.id, hjs.EventsStream, c.seq)
		if err := cli.Main(t.Context(), []string{"publish", "order.created", "--id", c.id}, env, &stdout, &stderr); err != nil || stdout.String() != want {
			t.Errorf("hookjet publish --id %s past the window: %v, stdout %q stderr %q, want %q", c.id, err, stdout.String(), stderr.String(), want)
		}
	}
	st, err := h.js.Stream(t.Context(), hjs.EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	if n := st.CachedInfo().State.Msgs; n != 2 {
		t.Errorf("%s holds %d events, want 2: copies past the window were stored", hjs.EventsStream, n)
	}
	h.settle("order.created", r)
	for _, id := range []string{"evt_past_1", "evt_past_2"} {
		if n := r.requestsFor(id); n != 1 {
			t.Errorf("%s delivered %d times, want once", id, n)
		}
	}
}
