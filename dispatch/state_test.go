package dispatch

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookjet/hookjet/api"
	"github.com/hookjet/hookjet/breaker"
	"github.com/hookjet/hookjet/config"
)

func ctx5(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// reasons returns the wait reasons of endpoint id's status.
func (r *rig) reasons(id string) []string {
	var out []string
	for _, w := range r.status(id).Waiting {
		out = append(out, w.Reason)
	}
	return out
}

// A disabled endpoint's deliveries are parked as tasks (the event is acked
// meanwhile) and say why they wait; enabling it drains them all, in every
// process, and nothing is lost or sent twice.
func TestDisabledEndpointParksThenDrainsOnEnable(t *testing.T) {
	rc := newReceiver(t)
	r := newRig(t, []config.Endpoint{endpointTo("paused", rc), endpointTo("open", rc)}, nil)
	if err := r.d.SetDisabled(ctx5(t), "paused", true, "maintenance"); err != nil {
		t.Fatal(err)
	}
	if err := r.d.SetDisabled(ctx5(t), "nope", true, "x"); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("SetDisabled of an unknown endpoint: %v", err)
	}
	evs := ids("p", 5)
	for _, id := range evs {
		r.publish("order.created", id, "", `{}`)
	}
	var want []string
	for _, id := range evs {
		want = append(want, "open "+id)
	}
	rc.waitDelivered(slices.Clone(want), 15*time.Second)
	r.settled(10 * time.Second)
	eventually(t, "five parked deliveries counted", 10*time.Second, func() bool { return r.status("paused").Pending == 5 })
	st := r.status("paused")
	if !st.Disabled || st.DisabledReason != "maintenance" {
		t.Fatalf("status: disabled %v reason %q", st.Disabled, st.DisabledReason)
	}
	if got := r.reasons("paused"); !slices.Equal(got, []string{api.WaitDisabled}) {
		t.Fatalf("paused waits %v, want [disabled]", got)
	}
	waits, n, err := r.d.Queries().Waiting(ctx5(t))
	if err != nil || n != 1 || len(waits) != 1 || waits[0].Endpoint != "paused" || waits[0].Detail != "maintenance" {
		t.Fatalf("Waiting = %+v, %d, %v", waits, n, err)
	}
	sum, err := r.d.Queries().Summary(ctx5(t))
	if err != nil || sum.DisabledEndpoints != 1 || sum.Endpoints != 2 || sum.Pending != 5 {
		t.Fatalf("summary %+v err %v", sum, err)
	}
	time.Sleep(300 * time.Millisecond)
	for _, id := range evs {
		if n := rc.requests("paused", id); n != 0 {
			t.Fatalf("a disabled endpoint got %s", id)
		}
	}

	if err := r.d.SetDisabled(ctx5(t), "paused", false, ""); err != nil {
		t.Fatal(err)
	}
	for _, id := range evs {
		want = append(want, "paused "+id)
	}
	rc.waitDelivered(want, 15*time.Second)
	eventually(t, "nothing left waiting", 10*time.Second, func() bool {
		st := r.status("paused")
		return st.Pending == 0 && !st.Disabled && len(st.Waiting) == 0
	})
}

// max_backlog bounds an endpoint's waiting deliveries: past it a delivery
// is dead-lettered "overflow" at once, naming the limit; the ones that
// fit wait and go once the endpoint takes them again. Another endpoint is
// not touched.
func TestMaxBacklogOverflowsToTheDeadLetterQueue(t *testing.T) {
	rc := newReceiver(t)
	small := endpointTo("small", rc)
	small.MaxBacklog = 2
	r := newRig(t, []config.Endpoint{small, endpointTo("other", rc)}, nil)
	if err := r.d.SetDisabled(ctx5(t), "small", true, "test"); err != nil {
		t.Fatal(err)
	}
	evs := ids("b", 5)
	for _, id := range evs {
		r.publish("order.created", id, "", `{}`)
	}
	r.settled(15 * time.Second)
	eventually(t, "three overflow dead letters", 10*time.Second, func() bool { return len(r.deadLetters("small")) == 3 })
	dl := r.deadLetters("small")
	for _, d := range dl {
		if !strings.HasSuffix(d, " overflow") {
			t.Fatalf("dead letters %v, want reason overflow", dl)
		}
	}
	entries, err := r.d.Queries().DeadLetters(ctx5(t), api.DLQFilter{Endpoint: "small", Limit: 1})
	if err != nil || len(entries) != 1 || !strings.Contains(entries[0].LastError, "max_backlog (2 waiting deliveries)") {
		t.Fatalf("dead letter %+v err %v: want the limit named", entries, err)
	}
	if st := r.status("small"); st.Pending != 2 {
		t.Fatalf("small has %d waiting, want max_backlog (2)", st.Pending)
	}
	if got := r.deadLetters("other"); len(got) != 0 {
		t.Fatalf("other has dead letters %v", got)
	}
	if err := r.d.SetDisabled(ctx5(t), "small", false, ""); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the two waiting deliveries go", 15*time.Second, func() bool {
		n := 0
		for _, id := range evs {
			n += rc.requests("small", id)
		}
		return n == 2
	})
	// Every delivery small was owed is delivered or a dead letter.
	for _, id := range evs {
		delivered := rc.requests("small", id) == 1
		dead := slices.Contains(dl, id+" overflow")
		if delivered == dead {
			t.Fatalf("%s: delivered %v, dead letter %v; want exactly one", id, delivered, dead)
		}
	}
}

// An endpoint that answers 429 with Retry-After is held for every process
// until then: its deliveries wait (status "held", until the receiver's
// time) and go after it.
func TestRetryAfterHoldsTheEndpoint(t *testing.T) {
	rc := newReceiver(t)
	var first atomic.Int64
	rc.setAnswer(func(path, id string, n int) (int, http.Header) {
		if path == "busy" && first.CompareAndSwap(0, time.Now().UnixNano()) {
			return http.StatusTooManyRequests, http.Header{"Retry-After": {"2"}}
		}
		return http.StatusOK, nil
	})
	r := newRig(t, []config.Endpoint{endpointTo("busy", rc)}, func(c *config.Config) {
		c.Endpoints[0].Retry.Cap = 10 * time.Second // Retry-After is honoured up to retry.cap
	})
	r.publish("order.created", "h1", "", `{}`)
	eventually(t, "the endpoint held", 10*time.Second, func() bool { return slices.Contains(r.reasons("busy"), api.WaitHeld) })
	st := r.status("busy")
	if st.HeldUntil == nil || st.HeldUntil.Sub(time.Unix(0, first.Load())) < time.Second {
		t.Fatalf("held until %v, want about 2s after the 429", st.HeldUntil)
	}
	r.publish("order.created", "h2", "", `{}`)
	rc.waitDelivered([]string{"busy h1", "busy h2"}, 20*time.Second)
	if n := rc.requests("busy", "h2"); n != 1 {
		t.Fatalf("h2 sent %d times", n)
	}
	got := time.Now()
	if got.Sub(time.Unix(0, first.Load())) < 1500*time.Millisecond {
		t.Fatalf("delivered %s after the 429, before the Retry-After", got.Sub(time.Unix(0, first.Load())))
	}
	eventually(t, "the hold lifted", 5*time.Second, func() bool { return r.status("busy").HeldUntil == nil })
}

// A breaker that opens parks the endpoint's deliveries ("breaker_open"
// until the cooldown, with the failures counted); ResetBreaker closes it by
// hand and the parked deliveries go at once, long before the cooldown.
func TestBreakerOpensAndResetDrains(t *testing.T) {
	rc := newReceiver(t)
	var healthy atomic.Bool
	rc.setAnswer(func(path, id string, n int) (int, http.Header) {
		if path == "fragile" && !healthy.Load() {
			return http.StatusServiceUnavailable, nil
		}
		return http.StatusOK, nil
	})
	fragile := endpointTo("fragile", rc)
	fragile.Breaker.FailureThreshold = 2
	fragile.Breaker.Cooldown = 10 * time.Minute
	fragile.Breaker.MaxCooldown = 10 * time.Minute
	fragile.Retry.MaxAttempts = 100
	fragile.Retry.Base = 20 * time.Millisecond
	fragile.Retry.Cap = 50 * time.Millisecond
	r := newRig(t, []config.Endpoint{fragile}, nil)
	for _, id := range ids("k", 3) {
		r.publish("order.created", id, "", `{}`)
	}
	eventually(t, "the breaker opens", 15*time.Second, func() bool {
		h, ok := r.breakers.Health("fragile")
		return ok && h.State == breaker.Open
	})
	eventually(t, "the wait says breaker_open", 5*time.Second, func() bool { return slices.Contains(r.reasons("fragile"), api.WaitBreakerOpen) })
	var wt api.Wait
	for _, w := range r.status("fragile").Waiting {
		if w.Reason == api.WaitBreakerOpen {
			wt = w
		}
	}
	if wt.Until == nil || time.Until(*wt.Until) < 5*time.Minute || !strings.Contains(wt.Detail, "consecutive failures") {
		t.Fatalf("breaker wait %+v: want until the cooldown, failures named", wt)
	}
	if !strings.Contains(api.Describe(wt, time.Now()), "hookjet endpoints reset fragile") {
		t.Fatalf("the description does not say how to close it: %q", api.Describe(wt, time.Now()))
	}
	r.settled(15 * time.Second)
	healthy.Store(true)
	if err := r.d.Operator().ResetBreaker(ctx5(t), "fragile"); err != nil {
		t.Fatal(err)
	}
	if err := r.d.Operator().ResetBreaker(ctx5(t), "nope"); err == nil {
		t.Fatal("ResetBreaker of an unknown endpoint succeeded")
	}
	if h, _ := r.breakers.Health("fragile"); h.State != breaker.Closed {
		t.Fatalf("after the reset the breaker is %v", h.State)
	}
	rc.waitDelivered([]string{"fragile k0", "fragile k1", "fragile k2"}, 15*time.Second)
	if got := r.deadLetters("fragile"); len(got) != 0 {
		t.Fatalf("dead letters %v", got)
	}
}

// max_in_flight caps an endpoint's concurrent requests: with a cap of 1 a
// slow receiver never sees two at once, the deliveries past the cap wait
// ("in_flight") without counting toward max_backlog, and every one goes.
func TestMaxInFlightCapsConcurrentRequests(t *testing.T) {
	rc := newReceiver(t)
	var now, peak atomic.Int32
	rc.setAnswer(func(path, id string, n int) (int, http.Header) {
		c := now.Add(1)
		defer now.Add(-1)
		for {
			p := peak.Load()
			if c <= p || peak.CompareAndSwap(p, c) {
				break
			}
		}
		time.Sleep(100 * time.Millisecond)
		return http.StatusOK, nil
	})
	one := endpointTo("one", rc)
	one.MaxInFlight = 1
	one.MaxBacklog = 1 // busy tasks never overflow it
	r := newRig(t, []config.Endpoint{one}, nil)
	evs := ids("c", 6)
	for _, id := range evs {
		r.publish("order.created", id, "", `{}`)
	}
	var want []string
	for _, id := range evs {
		want = append(want, "one "+id)
	}
	rc.waitDelivered(want, 30*time.Second)
	if p := peak.Load(); p != 1 {
		t.Fatalf("%d requests at once, want max_in_flight (1)", p)
	}
	if got := r.deadLetters("one"); len(got) != 0 {
		t.Fatalf("busy deliveries overflowed: %v", got)
	}
	r.settled(10 * time.Second)
}

// A fan-out delivery still in flight after guardAfter is guarded: its
// retry is stored ahead of time and the event is acked while the request
// runs; when the request succeeds the guard is deleted, so nothing is sent
// again.
func TestSlowDeliveryIsGuardedAndTheEventAcked(t *testing.T) {
	rc := newReceiver(t)
	release := make(chan struct{})
	rc.setAnswer(func(path, id string, n int) (int, http.Header) {
		if path == "slow" {
			<-release
		}
		return http.StatusOK, nil
	})
	slow := endpointTo("slow", rc)
	slow.Timeout = 20 * time.Second
	r := newRig(t, []config.Endpoint{slow, endpointTo("quick", rc)}, nil)
	r.publish("order.created", "g1", "", `{}`)
	rc.waitDelivered([]string{"quick g1"}, 10*time.Second)
	// The event is settled while the slow request is still out.
	r.settled(10 * time.Second)
	if rc.requests("slow", "g1") != 1 {
		t.Fatal("the slow request is not out")
	}
	if st := r.status("slow"); st.InFlight != 1 {
		t.Fatalf("slow in flight %d, want 1", st.InFlight)
	}
	eventually(t, "a guard is stored", 5*time.Second, func() bool { return r.status("slow").AwaitingRetry == 1 })
	close(release)
	rc.waitDelivered([]string{"quick g1", "slow g1"}, 10*time.Second)
	eventually(t, "the guard is deleted", 10*time.Second, func() bool {
		st := r.status("slow")
		return st.AwaitingRetry == 0 && st.Pending == 0 && st.InFlight == 0
	})
	time.Sleep(500 * time.Millisecond)
	if n := rc.requests("slow", "g1"); n != 1 {
		t.Fatalf("slow got g1 %d times after its guard", n)
	}
}

// The rate limit and the in-flight cap are reasons too, with until when
// for the rate limit: the engine's facts, as api.Waits words them.
func TestWaitsNameTheRateLimitAndTheInFlightCap(t *testing.T) {
	rc := newReceiver(t)
	release := make(chan struct{})
	rc.setAnswer(func(path, id string, n int) (int, http.Header) {
		if path == "capped" {
			<-release
		}
		return http.StatusOK, nil
	})
	t.Cleanup(func() { close(release) })
	limited := endpointTo("limited", rc)
	limited.RateLimit = config.RateLimit{RPS: 0.1, Burst: 1}
	capped := endpointTo("capped", rc)
	capped.MaxInFlight = 1
	capped.Timeout = 20 * time.Second
	r := newRig(t, []config.Endpoint{limited, capped}, nil)
	r.publish("order.created", "l1", "", `{}`)
	rc.waitDelivered([]string{"limited l1"}, 10*time.Second)
	var wt api.Wait
	eventually(t, "limited waits for a token", 5*time.Second, func() bool {
		w, ok := api.Find(r.status("limited").Waiting, api.WaitRateLimited)
		wt = w
		return ok
	})
	// One token at 0.1 per second: the next comes at most 10s after the
	// delivery took the last one.
	if wt.Until == nil || !wt.Until.After(time.Now()) || time.Until(*wt.Until) > 10*time.Second+500*time.Millisecond || wt.Detail != "rate_limit.rps 0.1" {
		t.Fatalf("rate-limit wait %+v: want ahead, within 10s", wt)
	}
	eventually(t, "capped has its one request out", 10*time.Second, func() bool { return rc.requests("capped", "l1") == 1 })
	eventually(t, "capped waits for its slot", 5*time.Second, func() bool {
		_, ok := api.Find(r.status("capped").Waiting, api.WaitInFlightFull)
		return ok
	})
	waits, n, err := r.d.Queries().Waiting(ctx5(t))
	if err != nil || n != 2 || len(waits) != 2 || waits[0].Endpoint != "capped" || waits[1].Endpoint != "limited" {
		t.Fatalf("Waiting = %+v, %d, %v; want capped then limited", waits, n, err)
	}
}
