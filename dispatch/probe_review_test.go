package dispatch

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/api"
	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/jetstream"
)

// publishTK stores an event of typ with id, tenant ("": none) and ordering
// key key ("": none), with a body of size bytes.
func (r *rig) publishTK(typ, id, tenant, key string, size int) {
	r.t.Helper()
	msg := nats.NewMsg(jetstream.EventsPrefix + typ)
	msg.Header.Set(jetstream.HdrMsgID, id)
	if tenant != "" {
		msg.Header.Set(jetstream.HdrTenant, tenant)
	}
	if key != "" {
		msg.Header.Set(jetstream.HdrOrderingKey, key)
	}
	body := `{"id":"` + id + `","pad":"` + strings.Repeat("x", max(0, size-30)) + `"}`
	msg.Data = []byte(body)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := r.node.JetStream().PublishMsg(ctx, msg); err != nil {
		r.t.Fatalf("publish %s: %v", id, err)
	}
}

// ProbeLaneTenant: an endpoint is reassigned from tenant acme to tenant
// globex (a SIGHUP'd config file here; PATCH tenant does the same for API
// endpoints) while one of acme's deliveries to it waits for a retry. The
// drain drops such a task (drain_engine.go, Offer: !mayReceive), so the unordered
// endpoint never sends acme's event to globex's URL; the ordered lane has
// no such check (lane_engine.go delivery: staleTask only) and does.
func TestProbeLaneDeliversOldTenantsEventAfterTenantChange(t *testing.T) {
	rcv := newReceiver(t)
	ord := orderedTo("ord", rcv, "")
	ord.Tenant = "acme"
	ord.Retry.MaxAttempts = 100
	plain := endpointTo("plain", rcv)
	plain.Tenant = "acme"
	plain.Retry.MaxAttempts = 100
	r := newRig(t, []config.Endpoint{ord, plain}, nil)
	var failing atomic.Bool
	failing.Store(true)
	rcv.setAnswer(func(_, _ string, _ int) (int, http.Header) {
		if failing.Load() {
			return http.StatusInternalServerError, nil
		}
		return http.StatusNoContent, nil
	})
	r.publishTK("order.created", "acme-secret-1", "acme", "k0", 40)
	eventually(t, "both endpoints attempted acme's event", 15*time.Second, func() bool {
		return rcv.requests("ord", "acme-secret-1") >= 1 && rcv.requests("plain", "acme-secret-1") >= 1
	})
	// The operator hands both endpoints to tenant globex, with globex's URLs.
	next := *r.cfg
	ord2, plain2 := ord, plain
	ord2.Tenant, ord2.URL = "globex", rcv.srv.URL+"/ord-globex"
	plain2.Tenant, plain2.URL = "globex", rcv.srv.URL+"/plain-globex"
	next.Endpoints = []config.Endpoint{ord2, plain2}
	if err := r.d.src.Apply(ctx5(t), &next); err != nil {
		t.Fatal(err)
	}
	failing.Store(false)
	time.Sleep(4 * time.Second) // retries are due within 200 ms
	toOrd := rcv.requests("ord-globex", "acme-secret-1")
	toPlain := rcv.requests("plain-globex", "acme-secret-1")
	t.Logf("acme's event sent to globex's URLs after the change: ordered endpoint %d, unordered endpoint %d (control)", toOrd, toPlain)
	if toOrd > 0 {
		t.Errorf("the ordered lane delivered tenant acme's event to endpoint ord after it became tenant globex's (body %s); the drain drops the same task for the unordered endpoint (%d requests)", rcv.bodyOf("ord-globex", "acme-secret-1"), toPlain)
	}
}

// ProbeLaneFull: HOOKJET_ORDERED has no per-endpoint bound (no
// max_backlog, no share of the stream): one dead ordered endpoint fills it
// and another ordered endpoint's keyed events are dead-lettered as
// overflow, never attempted. The lane's MaxBytes is set small here (its
// floor is 64 MiB) to reach the full state with little data.
func TestProbeDeadOrderedEndpointFillsLaneForOthers(t *testing.T) {
	rcv := newReceiver(t)
	dead := orderedTo("dead", rcv, "")
	dead.Events = []string{"dead.*"}
	dead.Retry.MaxAttempts = 1000
	dead.MaxBacklog = 5
	ok := orderedTo("ok", rcv, "")
	ok.Events = []string{"ok.*"}
	r := newRig(t, []config.Endpoint{dead, ok}, nil)
	rcv.setAnswer(func(path, _ string, _ int) (int, http.Header) {
		if path == "dead" {
			return http.StatusServiceUnavailable, nil
		}
		return http.StatusNoContent, nil
	})
	ctx := ctx5(t)
	st, err := r.node.JetStream().Stream(ctx, jetstream.LaneStream)
	if err != nil {
		t.Fatal(err)
	}
	sc := st.CachedInfo().Config
	sc.MaxBytes = 256 << 10
	if _, err := r.node.JetStream().UpdateStream(ctx, sc); err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		r.publishTK("dead.x", "dead-"+strconv.Itoa(i), "", "k", 16<<10)
	}
	r.settled(20 * time.Second)
	// The stream holds a retried entry twice for a moment (its replacement
	// is stored before the old copy is deleted), so the count of stored
	// copies may pass the bound of deliveries until the lane's remover has
	// run; 40 deliveries with the bound not applied never come down to 5.
	var waiting uint64
	var stored uint64
	deadline := time.Now().Add(5 * time.Second)
	for {
		info, err := st.Info(ctx5(t), natsjs.WithSubjectFilter(jetstream.LanePrefix+"dead"))
		if err != nil {
			t.Fatal(err)
		}
		waiting, stored = info.State.Subjects[jetstream.LanePrefix+"dead"], info.State.Bytes
		if waiting <= 5 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("endpoint dead (max_backlog 5) has %d deliveries waiting in %s (%d bytes of %d)", waiting, jetstream.LaneStream, stored, sc.MaxBytes)
	if waiting > 5 {
		t.Errorf("max_backlog 5 not applied to an ordered endpoint: %d waiting", waiting)
	}
	r.publishTK("ok.x", "ok-0", "", "z", 16<<10) // the same size as dead's events
	time.Sleep(3 * time.Second)
	r.settled(10 * time.Second)
	if n := rcv.requests("ok", "ok-0"); n == 0 {
		t.Errorf("healthy ordered endpoint ok never received ok-0 (dead letters of ok: %v): endpoint dead's backlog filled the shared lane", r.deadLetters("ok"))
	}
}

// ProbeLaneIdle (TestProbeLaneIdleAppliesFloorBeforeEntryIsRead) drives the
// lane's state machine: it lives with it, in dispatch/lane (lane_test.go).

// ProbeReplayOrder: three events of key k0 were dead-lettered (skip); the
// operator replays them (DLQ order k0-0, k0-1, k0-2: front entries). The
// first replay fails once (503): lane/run.go again stores its retry as a
// front entry whose order is its new stream sequence (entryOf: front
// entries order by their own sequence), behind the other replays, so
// k0-1 and k0-2 are delivered before k0-0.
func TestProbeReplayedKeyLosesOrderAfterARetry(t *testing.T) {
	rcv := newReceiver(t)
	r := newRig(t, []config.Endpoint{orderedTo("ord", rcv, "skip")}, nil)
	var replaying atomic.Bool
	var k0Replays atomic.Int32
	rcv.setAnswer(func(_, id string, _ int) (int, http.Header) {
		if !replaying.Load() {
			return http.StatusBadRequest, nil // permanent: dead-lettered at once
		}
		if id == "k0-0" && k0Replays.Add(1) == 1 {
			// The replay's first attempt fails, slowly enough that every
			// replay is stored before its retry is (as in any replay of
			// more than a few dead letters).
			time.Sleep(500 * time.Millisecond)
			return http.StatusServiceUnavailable, nil
		}
		return http.StatusNoContent, nil
	})
	for i := range 3 {
		r.publishKeyed("order.updated", "k0-"+strconv.Itoa(i), "k0")
	}
	eventually(t, "three dead letters", 15*time.Second, func() bool { return len(r.deadLetters("ord")) == 3 })
	replaying.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := r.d.Queries().Replay(ctx, api.ReplayRequest{Endpoint: "ord"}); err != nil {
		t.Fatal(err)
	}
	rcv.waitDelivered([]string{"ord k0-0", "ord k0-1", "ord k0-2"}, 15*time.Second)
	if got := rcv.arrivals("ord")["k0"]; fmt.Sprint(got) != "[k0-0 k0-1 k0-2]" {
		t.Errorf("replayed dead letters of key k0 arrived as %v, want [k0-0 k0-1 k0-2]", got)
	}
}

// ProbeTenantChangeDLQ: after endpoint plain moves from tenant acme to
// globex, acme's dead letter is still listed as plain's (the listing, and
// so globex's portal, filters by incarnation only: deadletters.go
// ownsDeadLetter); a replay removes it from HOOKJET_DLQ and the drain then
// discards the task as another tenant's: the event is neither delivered
// nor dead-lettered any more.
func TestProbeTenantChangeListsAndLosesOldDeadLetter(t *testing.T) {
	rcv := newReceiver(t)
	plain := endpointTo("plain", rcv)
	plain.Tenant = "acme"
	r := newRig(t, []config.Endpoint{plain}, nil)
	var refuse atomic.Bool
	refuse.Store(true)
	rcv.setAnswer(func(_, _ string, _ int) (int, http.Header) {
		if refuse.Load() {
			return http.StatusBadRequest, nil
		}
		return http.StatusNoContent, nil
	})
	r.publishTK("order.created", "acme-2", "acme", "", 40)
	eventually(t, "acme-2 dead-lettered", 15*time.Second, func() bool { return len(r.deadLetters("plain")) == 1 })
	next := *r.cfg
	p2 := plain
	p2.Tenant, p2.URL = "globex", rcv.srv.URL+"/plain-globex"
	next.Endpoints = []config.Endpoint{p2}
	if err := r.d.src.Apply(ctx5(t), &next); err != nil {
		t.Fatal(err)
	}
	listed := r.deadLetters("plain")
	t.Logf("dead letters listed for plain (now tenant globex): %v", listed)
	refuse.Store(false)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := r.d.Queries().Replay(ctx, api.ReplayRequest{Endpoint: "plain"})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	after := r.deadLetters("plain")
	sent := rcv.requests("plain-globex", "acme-2")
	t.Logf("replay: %+v; requests to globex's URL: %d; dead letters after: %v", res, sent, after)
	if len(listed) > 0 {
		t.Errorf("tenant acme's dead letter %v is listed for endpoint plain after it became tenant globex's", listed)
	}
	if sent == 0 && len(after) == 0 && res.Replayed > 0 {
		t.Errorf("replaying it removed acme-2 from %s and the drain discarded the task: the event is neither delivered nor dead-lettered", jetstream.DLQStream)
	}
}
