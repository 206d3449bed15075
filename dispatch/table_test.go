package dispatch

import (
	"bytes"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookjet/hookjet/api"
	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/jetstream"
	"github.com/hookjet/hookjet/routing"
)

// A reload (Apply) changes the running engine: a changed URL takes the
// next events, a new endpoint receives, a removed one stops; its breaker
// and settings follow the file.
func TestApplyChangesTheRunningEngine(t *testing.T) {
	rc := newReceiver(t)
	r := newRig(t, []config.Endpoint{endpointTo("a", rc, "order.*"), endpointTo("b", rc)}, nil)
	r.publish("order.created", "v1", "", `{}`)
	rc.waitDelivered([]string{"a v1", "b v1"}, 15*time.Second)

	next := *r.cfg
	a := endpointTo("a", rc, "order.*", "invoice.*")
	a.URL = rc.srv.URL + "/a2"
	a.Breaker.FailureThreshold = 7
	c := endpointTo("c", rc, "invoice.*")
	next.Endpoints = []config.Endpoint{a, c}
	if err := r.d.src.Apply(ctx5(t), &next); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.d.src.ConfigEndpoint("b"); ok {
		t.Fatal("b is still the file's after the reload dropped it")
	}
	if ep, ok := r.d.src.ConfigEndpoint("a"); !ok || ep.URL != a.URL || ep.Source != config.SourceConfig {
		t.Fatalf("ConfigEndpoint(a) = %+v %v", ep.URL, ok)
	}
	if h, ok := r.breakers.Health("b"); ok {
		t.Fatalf("b's breaker is still there: %+v", h)
	}
	if _, err := r.d.Queries().Endpoint(ctx5(t), "b"); !errors.Is(err, api.ErrUnknownEndpoint) {
		t.Fatalf("Endpoint(b) after removal: %v", err)
	}
	r.publish("order.created", "v2", "", `{}`)
	r.publish("invoice.paid", "v3", "", `{}`)
	rc.waitDelivered([]string{"a v1", "b v1", "a2 v2", "a2 v3", "c v3"}, 15*time.Second)
	r.settled(10 * time.Second)
	st := r.status("a")
	if st.URL != a.URL || !slices.Equal(st.Events, []string{"order.*", "invoice.*"}) || st.Settings == nil || st.Settings.Breaker.FailureThreshold != 7 {
		t.Fatalf("a's status after the reload: url %s events %v settings %+v", st.URL, st.Events, st.Settings)
	}

	// A file with an endpoint whose secret does not decode: refused with
	// its name, and the rest applied.
	bad := endpointTo("bad", rc)
	bad.Secrets = []config.Secret{config.NewSecret("whsec_!!")}
	next2 := next
	next2.Endpoints = []config.Endpoint{a, c, bad}
	err := r.d.src.Apply(ctx5(t), &next2)
	if err == nil || !strings.Contains(err.Error(), "endpoints bad: secret") {
		t.Fatalf("Apply with a bad secret: %v", err)
	}
	if _, ok := r.d.src.ConfigEndpoint("bad"); ok {
		t.Fatal("an endpoint with a bad secret is in force")
	}
}

// Endpoints of the admin API: put in force and routed at once, refused
// for an id the file defines (the file's stays), removed for good.
func TestAPIEndpointsBesideTheFile(t *testing.T) {
	rc := newReceiver(t)
	r := newRig(t, []config.Endpoint{endpointTo("file", rc)}, nil)
	api1 := endpointTo("api1", rc, "order.*")
	api1.Tenant = "acme"
	api1.CreatedAt = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := r.d.src.PutEndpoint(api1); err != nil {
		t.Fatal(err)
	}
	clash := endpointTo("file", rc)
	clash.URL = rc.srv.URL + "/hijack"
	if err := r.d.src.PutEndpoint(clash); !errors.Is(err, routing.ErrConfigOwned) {
		t.Fatalf("PutEndpoint of the file's id: %v", err)
	}
	r.publish("order.created", "t1", "acme", `{}`)
	r.publish("order.created", "t2", "globex", `{}`)
	rc.waitDelivered([]string{"api1 t1", "file t1", "file t2"}, 15*time.Second)
	if n := rc.requests("hijack", "t1"); n != 0 {
		t.Fatal("the API's definition of the file's id received")
	}
	st := r.status("api1")
	if st.Source != config.SourceAPI || st.Tenant != "acme" || st.CreatedAt == nil || !st.CreatedAt.Equal(api1.CreatedAt) {
		t.Fatalf("api1 status: source %s tenant %s created %v", st.Source, st.Tenant, st.CreatedAt)
	}
	page, next, err := r.d.Queries().EndpointPage(ctx5(t), "acme", "", 10)
	if err != nil || len(page) != 1 || page[0].ID != "api1" || next != "" {
		t.Fatalf("acme's page: %v next %q err %v", page, next, err)
	}
	all, err := r.d.Queries().Endpoints(ctx5(t))
	if err != nil || len(all) != 2 || all[0].ID != "api1" || all[1].ID != "file" {
		t.Fatalf("Endpoints: %v err %v", all, err)
	}
	r.d.src.RemoveEndpoint("file") // the file's: stays
	r.d.src.RemoveEndpoint("api1")
	r.publish("order.created", "t3", "acme", `{}`)
	rc.waitDelivered([]string{"api1 t1", "file t1", "file t2", "file t3"}, 15*time.Second)
	r.settled(10 * time.Second)
	if n := rc.requests("api1", "t3"); n != 0 {
		t.Fatal("a removed API endpoint received")
	}
}

// WatchEndpoints applies the endpoints stored through the admin API, at
// start and as they change; Applied puts a write in force before the API
// answers and the watch does not apply it twice or go back to an older
// revision; Removed takes an endpoint out at once.
func TestWatchAndApplyAPIEndpoints(t *testing.T) {
	rc := newReceiver(t)
	r := newRig(t, nil, nil)
	store, err := jetstream.OpenEndpointStore(ctx5(t), r.node.JetStream(), bytes.Repeat([]byte{7}, 32), 1)
	if err != nil {
		t.Fatal(err)
	}
	spec := func(id, path string) config.EndpointSpec {
		return config.EndpointSpec{ID: id, URL: rc.srv.URL + "/" + path, Events: []string{"order.*"}, Secrets: []config.Secret{config.NewSecret(testSecret)}}
	}
	// One stored before the watch starts.
	if err := store.Create(ctx5(t), store.Record(spec("early", "early"))); err != nil {
		t.Fatal(err)
	}
	rec := jetstream.EndpointRecord{ID: "x", Revision: 1}
	if err := r.d.src.Applied(ctx5(t), rec); err == nil {
		t.Fatal("Applied before the watch runs succeeded")
	}
	stop, err := r.d.src.WatchEndpoints(t.Context(), store, func() config.Settings { return fastSettings() })
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if ep, ok := r.d.table.Get("early"); !ok || ep.Source != config.SourceAPI {
		t.Fatalf("the stored endpoint is not in force after WatchEndpoints: %+v %v", ep, ok)
	}

	// A write applied by the answering process: in force at once.
	if err := store.Create(ctx5(t), store.Record(spec("late", "late1"))); err != nil {
		t.Fatal(err)
	}
	late, err := store.Get(ctx5(t), "late")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.d.src.Applied(ctx5(t), late); err != nil {
		t.Fatal(err)
	}
	if ep, ok := r.d.table.Get("late"); !ok || !strings.HasSuffix(ep.URL, "/late1") {
		t.Fatalf("Applied did not put late in force: %+v", ep.URL)
	}
	// An update, applied; then the older revision again: ignored.
	updated, err := store.Update(ctx5(t), "late", func(rec *jetstream.EndpointRecord) error {
		rec.URL = rc.srv.URL + "/late2"
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.d.src.Applied(ctx5(t), updated); err != nil {
		t.Fatal(err)
	}
	if err := r.d.src.Applied(ctx5(t), late); err != nil {
		t.Fatal(err)
	}
	if ep, _ := r.d.table.Get("late"); !strings.HasSuffix(ep.URL, "/late2") {
		t.Fatalf("an older revision came back: %s", ep.URL)
	}
	r.publish("order.created", "w1", "", `{}`)
	rc.waitDelivered([]string{"early w1", "late2 w1"}, 15*time.Second)

	// Removed: out at once, and the watch's delete does not bring it back.
	if err := store.Delete(ctx5(t), "early"); err != nil {
		t.Fatal(err)
	}
	r.d.src.Removed("early", 1)
	if _, ok := r.d.table.Get("early"); ok {
		t.Fatal("Removed left early in force")
	}
	// A change made elsewhere (no Applied here) arrives through the watch.
	if err := store.Create(ctx5(t), store.Record(spec("elsewhere", "elsewhere"))); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the watch applies another process's write", 10*time.Second, func() bool {
		_, ok := r.d.table.Get("elsewhere")
		return ok
	})
	r.publish("order.created", "w2", "", `{}`)
	rc.waitDelivered([]string{"early w1", "late2 w1", "elsewhere w2", "late2 w2"}, 15*time.Second)
	r.settled(10 * time.Second)
}

// SendTest sends a signed hookjet.test event to one endpoint only;
// Redeliver sends the stored events an endpoint's patterns match to that
// endpoint again (and counts without sending in a dry run); Replay sends
// dead letters back to their endpoint and removes them from the DLQ.
func TestTestRedeliverAndReplay(t *testing.T) {
	rc := newReceiver(t)
	r := newRig(t, []config.Endpoint{endpointTo("a", rc, "order.*"), endpointTo("b", rc, "order.*")}, nil)
	id, err := r.d.Operator().SendTest(ctx5(t), "a", "", nil)
	if err != nil || !strings.HasPrefix(id, "test_") {
		t.Fatalf("SendTest: %q %v", id, err)
	}
	rc.waitDelivered([]string{"a " + id}, 10*time.Second)
	if body := rc.bodyOf("a", id); !strings.Contains(body, `"type":"hookjet.test"`) || !strings.Contains(body, `"endpoint":"a"`) {
		t.Fatalf("test body %s", body)
	}
	if _, err := r.d.Operator().SendTest(ctx5(t), "nope", "", nil); !errors.Is(err, api.ErrUnknownEndpoint) {
		t.Fatalf("SendTest(nope): %v", err)
	}

	since := time.Now().Add(-time.Minute)
	r.publish("order.created", "h1", "", `{}`)
	r.publish("order.paid", "h2", "", `{}`)
	r.publish("user.created", "h3", "", `{}`)
	rc.waitDelivered([]string{"a " + id, "a h1", "a h2", "b h1", "b h2"}, 15*time.Second)
	matched, queued, err := r.d.Operator().Redeliver(ctx5(t), "b", since, time.Time{}, true)
	if err != nil || matched != 2 || queued != 0 {
		t.Fatalf("dry run: matched %d queued %d err %v", matched, queued, err)
	}
	matched, queued, err = r.d.Operator().Redeliver(ctx5(t), "b", since, time.Time{}, false)
	if err != nil || matched != 2 || queued != 2 {
		t.Fatalf("redeliver: matched %d queued %d err %v", matched, queued, err)
	}
	eventually(t, "b gets h1 and h2 again", 15*time.Second, func() bool {
		return rc.requests("b", "h1") == 2 && rc.requests("b", "h2") == 2
	})
	if rc.requests("a", "h1") != 1 {
		t.Fatal("a redelivery to b reached a")
	}
	if _, _, err := r.d.Operator().Redeliver(ctx5(t), "b", time.Now(), time.Now().Add(-time.Hour), false); !errors.Is(err, api.ErrBadRequest) {
		t.Fatalf("since after until: %v", err)
	}

	// A dead letter, replayed once the receiver takes it, to its endpoint
	// only; the other endpoint's dead letter stays.
	rc.setAnswer(func(path, id string, n int) (int, http.Header) {
		if id == "d1" && n == 1 {
			return http.StatusBadRequest, nil
		}
		return http.StatusOK, nil
	})
	r.publish("order.created", "d1", "", `{}`)
	eventually(t, "d1 dead-lettered at both", 15*time.Second, func() bool {
		return slices.Equal(r.deadLetters("a"), []string{"d1 permanent"}) && slices.Equal(r.deadLetters("b"), []string{"d1 permanent"})
	})
	if _, err := r.d.Queries().Replay(ctx5(t), api.ReplayRequest{}); !errors.Is(err, api.ErrBadRequest) {
		t.Fatalf("Replay of everything without since: %v", err)
	}
	if _, err := r.d.Queries().Replay(ctx5(t), api.ReplayRequest{Endpoint: "nope"}); !errors.Is(err, api.ErrUnknownEndpoint) {
		t.Fatalf("Replay to an unknown endpoint: %v", err)
	}
	res, err := r.d.Queries().Replay(ctx5(t), api.ReplayRequest{Endpoint: "a", IDs: []string{"d1"}})
	if err != nil || res.Matched != 1 || res.Replayed != 1 || !slices.Equal(res.Targets(), []string{"a"}) {
		t.Fatalf("Replay: %+v err %v", res, err)
	}
	eventually(t, "a gets d1 replayed", 15*time.Second, func() bool { return rc.requests("a", "d1") == 2 })
	if got := r.deadLetters("a"); len(got) != 0 {
		t.Fatalf("a's replayed dead letter is still in the DLQ: %v", got)
	}
	if got := r.deadLetters("b"); !slices.Equal(got, []string{"d1 permanent"}) {
		t.Fatalf("b's dead letter: %v", got)
	}
	if n := rc.requests("b", "d1"); n != 1 {
		t.Fatalf("b got d1 %d times: a replay to a reached it", n)
	}
}
