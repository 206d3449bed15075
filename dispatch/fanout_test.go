package dispatch

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/jetstream"
)

// One event goes to every endpoint whose patterns match it, signed, with
// its body as published; an event no endpoint wants is acked undelivered;
// each event is acked once all its deliveries are settled.
func TestFanoutToSeveralEndpoints(t *testing.T) {
	rc := newReceiver(t)
	r := newRig(t, []config.Endpoint{
		endpointTo("all", rc),
		endpointTo("orders", rc, "order.*"),
		endpointTo("invoices", rc, "invoice.*", "refund.>"),
	}, nil)
	r.publish("order.created", "e1", "", `{"n":1}`)
	r.publish("invoice.paid", "e2", "", `{"n":2}`)
	r.publish("user.signed_up", "e3", "", `{"n":3}`)
	r.publish("refund.issued.partial", "e4", "", `{"n":4}`)
	rc.waitDelivered([]string{
		"all e1", "all e2", "all e3", "all e4",
		"orders e1",
		"invoices e2", "invoices e4",
	}, 15*time.Second)
	if got := rc.bodyOf("orders", "e1"); got != `{"n":1}` {
		t.Fatalf("orders got body %q for e1", got)
	}
	if got := rc.bodyOf("invoices", "e4"); got != `{"n":4}` {
		t.Fatalf("invoices got body %q for e4", got)
	}
	r.settled(10 * time.Second)
	for _, id := range []string{"all", "orders", "invoices"} {
		if n := testutil.ToFloat64(r.d.o.Metrics.Attempts.WithLabelValues(id, "success")); n == 0 {
			t.Errorf("no successful attempt counted for %s", id)
		}
		if dl := r.deadLetters(id); len(dl) != 0 {
			t.Errorf("%s has dead letters %v", id, dl)
		}
	}
	if n := rc.requests("orders", "e2"); n != 0 {
		t.Fatalf("orders got e2 (invoice.paid) %d times", n)
	}
	// An event only "all" wants, then one nobody wants: both acked.
	r.publish("nobody.wants.this", "e5", "", `{}`)
	rc.waitDelivered([]string{
		"all e1", "all e2", "all e3", "all e4", "all e5",
		"orders e1",
		"invoices e2", "invoices e4",
	}, 15*time.Second)
	r.settled(10 * time.Second)
}

// A tenant's endpoint gets only its tenant's events; the operator's
// endpoints (no tenant) get every event their patterns match; an event
// with a Hookjet-Tenant that is not a tenant goes to no one and is a
// dead letter "rejected" at each operator endpoint that matches it.
func TestFanoutMatchesTenants(t *testing.T) {
	rc := newReceiver(t)
	acme := endpointTo("acme-crm", rc, "order.*")
	acme.Tenant = "acme"
	globex := endpointTo("globex-crm", rc, "order.*")
	globex.Tenant = "globex"
	r := newRig(t, []config.Endpoint{endpointTo("ops", rc, "order.*"), acme, globex}, nil)
	r.publish("order.created", "a1", "acme", `{}`)
	r.publish("order.created", "g1", "globex", `{}`)
	r.publish("order.created", "n1", "", `{}`)
	r.publish("order.created", "i1", "initech", `{}`)
	r.publish("order.created", "bad1", "Not A Tenant", `{}`)
	rc.waitDelivered([]string{
		"ops a1", "ops g1", "ops n1", "ops i1",
		"acme-crm a1",
		"globex-crm g1",
	}, 15*time.Second)
	r.settled(10 * time.Second)
	if got := r.deadLetters("ops"); !slices.Equal(got, []string{"bad1 rejected"}) {
		t.Fatalf("ops dead letters %v, want [bad1 rejected]", got)
	}
	for _, id := range []string{"acme-crm", "globex-crm"} {
		if got := r.deadLetters(id); len(got) != 0 {
			t.Fatalf("%s got another tenant's or a bad tenant's event: %v", id, got)
		}
		if n := rc.requests(id, "bad1"); n != 0 {
			t.Fatalf("%s was sent the event with a bad tenant", id)
		}
	}
}

// An event published again with the same id after the stream's duplicate
// window is delivered once per endpoint all the same: the ledger knows the
// deliveries were made. Within the window the stream drops the copy.
func TestFanoutDeliversAnEventIDOnce(t *testing.T) {
	rc := newReceiver(t)
	r := newRig(t, []config.Endpoint{endpointTo("a", rc), endpointTo("b", rc)}, func(c *config.Config) {
		c.Streams.DuplicateWindow = time.Second
	})
	r.publish("order.created", "dup", "", `{"v":1}`)
	rc.waitDelivered([]string{"a dup", "b dup"}, 15*time.Second)
	r.publish("order.created", "dup", "", `{"v":1}`) // within the window: dropped by the stream
	time.Sleep(1500 * time.Millisecond)
	r.publish("order.created", "dup", "", `{"v":1}`) // past it: stored, and the ledger skips it
	r.publish("order.created", "after", "", `{}`)
	rc.waitDelivered([]string{"a after", "a dup", "b after", "b dup"}, 15*time.Second)
	r.settled(10 * time.Second)
	for _, id := range []string{"a", "b"} {
		if n := rc.requests(id, "dup"); n != 1 {
			t.Fatalf("%s got dup %d times", id, n)
		}
	}
	if n := testutil.ToFloat64(r.d.o.Metrics.Duplicates.WithLabelValues("ledger")); n < 1 {
		t.Fatalf("duplicates skipped by the ledger counted %v, want at least 1", n)
	}
}

// A failed attempt becomes a scheduled retry: the receiver's 500 is tried
// again after the backoff and the delivery completes; the event is acked
// at the first failure (the retry waits in HOOKJET_TASKS, not in the
// fan-out), and the endpoint's status shows no dead letter.
func TestFailedAttemptIsRetriedOnSchedule(t *testing.T) {
	rc := newReceiver(t)
	rc.setAnswer(func(path, id string, n int) (int, http.Header) {
		if path == "flaky" && n <= 2 {
			return http.StatusInternalServerError, nil
		}
		return http.StatusOK, nil
	})
	r := newRig(t, []config.Endpoint{endpointTo("flaky", rc), endpointTo("fine", rc)}, nil)
	r.publish("order.created", "r1", "", `{}`)
	rc.waitDelivered([]string{"fine r1", "flaky r1"}, 20*time.Second)
	if n := rc.requests("flaky", "r1"); n != 3 {
		t.Fatalf("flaky got r1 %d times, want 3 (two failures, then the success)", n)
	}
	if n := rc.requests("fine", "r1"); n != 1 {
		t.Fatalf("fine got r1 %d times: a retry of another endpoint resent it", n)
	}
	r.settled(10 * time.Second)
	if got := r.deadLetters("flaky"); len(got) != 0 {
		t.Fatalf("dead letters %v", got)
	}
	if n := testutil.ToFloat64(r.d.o.Metrics.Attempts.WithLabelValues("flaky", "transient")); n != 2 {
		t.Fatalf("transient attempts counted %v, want 2", n)
	}
	eventually(t, "no retry left waiting", 10*time.Second, func() bool {
		st := r.status("flaky")
		return st.Pending == 0 && st.AwaitingRetry == 0
	})
}

// A delivery that keeps failing is dead-lettered "exhausted" after
// retry.max_attempts; a 4xx is dead-lettered "permanent" at once; a 410
// disables the endpoint ("gone") for every process.
func TestOutcomesEndInTheDeadLetterQueue(t *testing.T) {
	rc := newReceiver(t)
	rc.setAnswer(func(path, id string, n int) (int, http.Header) {
		switch path {
		case "down":
			return http.StatusBadGateway, nil
		case "strict":
			return http.StatusBadRequest, nil
		case "gone":
			return http.StatusGone, nil
		}
		return http.StatusOK, nil
	})
	r := newRig(t, []config.Endpoint{endpointTo("down", rc), endpointTo("strict", rc), endpointTo("gone", rc)}, nil)
	r.publish("order.created", "x1", "", `{}`)
	eventually(t, "every delivery dead-lettered", 20*time.Second, func() bool {
		return len(r.deadLetters("down")) == 1 && len(r.deadLetters("strict")) == 1 && len(r.deadLetters("gone")) == 1
	})
	if got := r.deadLetters("down"); got[0] != "x1 exhausted" {
		t.Fatalf("down: %v", got)
	}
	if n := rc.requests("down", "x1"); n != 3 {
		t.Fatalf("down got %d attempts, want retry.max_attempts (3)", n)
	}
	if got := r.deadLetters("strict"); got[0] != "x1 permanent" {
		t.Fatalf("strict: %v", got)
	}
	if n := rc.requests("strict", "x1"); n != 1 {
		t.Fatalf("strict got %d attempts, want 1", n)
	}
	if got := r.deadLetters("gone"); got[0] != "x1 gone" {
		t.Fatalf("gone: %v", got)
	}
	eventually(t, "gone disabled", 5*time.Second, func() bool { return r.status("gone").Disabled })
	r.settled(10 * time.Second)
	r.mu.Lock()
	dead := slices.Clone(r.dead)
	r.mu.Unlock()
	slices.Sort(dead)
	if !slices.Equal(dead, []string{"down x1", "gone x1", "strict x1"}) {
		t.Fatalf("OnDeadLetter saw %v", dead)
	}
}

// A fan-out delivery whose event was pulled longer ago than the fan-out may
// hold it (half its AckWait: the process was paused, and the server may
// have handed the event to another process meanwhile) is not attempted,
// and the event is not acked: it comes back to the consumer, its payload
// bytes are given back, and once held briefly it is delivered once.
func TestFanoutDoesNotAttemptAnEventHeldTooLong(t *testing.T) {
	rc := newReceiver(t)
	r := newRig(t, []config.Endpoint{endpointTo("all", rc)}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	js := r.node.JetStream()
	c, err := js.Consumer(ctx, jetstream.EventsStream, jetstream.FanoutConsumer)
	if err != nil {
		t.Fatal(err)
	}
	cc := c.CachedInfo().Config
	cc.AckWait = time.Second // the event comes back soon
	if _, err := js.UpdateConsumer(ctx, jetstream.EventsStream, cc); err != nil {
		t.Fatal(err)
	}
	r.d.fan.hold.Store(0) // every event is held too long by the time of its attempt
	r.publish("order.created", "e1", "", `{"n":1}`)
	info := func() *natsjs.ConsumerInfo {
		ci, err := c.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return ci
	}
	// With no hold every pull of it is late, so it comes back at once, over
	// and over, until MaxDeliver (100) lets the safety net take it: the
	// state is read in the same answer that shows it came back twice.
	var ci *natsjs.ConsumerInfo
	eventually(t, "the event comes back to the consumer twice", 15*time.Second, func() bool {
		ci = info()
		return ci.Delivered.Consumer >= 3
	})
	if ci.AckFloor.Stream != 0 || ci.NumAckPending != 1 {
		t.Fatalf("the event was settled: ack floor %d, ack pending %d", ci.AckFloor.Stream, ci.NumAckPending)
	}
	if n := rc.requests("all", "e1"); n != 0 {
		t.Fatalf("an event held too long was attempted %d times", n)
	}
	eventually(t, "its payload bytes are given back", 5*time.Second, func() bool {
		return r.d.fan.unsettledBytes.Used() == 0
	})
	r.d.fan.hold.Store(int64(r.d.fan.ackWait / 2))
	rc.waitDelivered([]string{"all e1"}, 15*time.Second)
	r.settled(10 * time.Second)
	if n := rc.requests("all", "e1"); n != 1 {
		t.Fatalf("e1 delivered %d times, want once", n)
	}
}

// A fan-out delivery that finds every worker busy waits for one (up to
// 250 ms) instead of being parked as a task at once: with
// worker.concurrency 1 and a request in flight for 200 ms, the next
// endpoint's delivery goes once it is over, and nothing is deferred for
// concurrency.
func TestFanoutWaitsBrieflyForABusyWorker(t *testing.T) {
	rc := newReceiver(t)
	started := make(chan struct{}, 1)
	rc.setAnswer(func(path, _ string, _ int) (int, http.Header) {
		if path == "slow" {
			select {
			case started <- struct{}{}:
			default:
			}
			time.Sleep(200 * time.Millisecond)
		}
		return http.StatusNoContent, nil
	})
	r := newRig(t, []config.Endpoint{endpointTo("slow", rc, "slow.>"), endpointTo("fast", rc, "fast.>")},
		func(c *config.Config) { c.Worker.Concurrency = 1 })
	r.publish("slow.x", "s1", "", `{}`)
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the slow endpoint's request never came")
	}
	r.publish("fast.x", "f1", "", `{}`)
	rc.waitDelivered([]string{"fast f1", "slow s1"}, 10*time.Second)
	if n := testutil.ToFloat64(r.d.o.Metrics.Deferrals.WithLabelValues("fast", "concurrency")); n != 0 {
		t.Fatalf("the fast endpoint's delivery was parked for a busy worker (%v deferrals)", n)
	}
}
