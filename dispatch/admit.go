package dispatch

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/hookjet/hookjet/breaker"
)

// admitter is the admit stage: whether an endpoint takes a delivery now
// (not disabled or held, a slot of its in-flight cap, a rate-limit token,
// its breaker's permission), how long a fan-out delivery may wait for a
// slot, and the process's workers (worker.concurrency) that admitted
// deliveries are attempted on.
type admitter struct {
	now      func() time.Time
	states   blocker
	breakers *breaker.Registry
	metrics  *Metrics
	send     sender
	park     func(dl *delivery, cause string)
	// inflight is the engine's wait group of work Stop waits for.
	inflight *sync.WaitGroup

	global    chan struct{} // worker.concurrency: requests in flight
	inFlightN atomic.Int64
	unsettled int          // how many fan-out events may be unsettled at once
	waitingN  atomic.Int32 // fan-out deliveries waiting for an endpoint's slot
	// fastWaitingN: those waiting past waitingN's bounds for an endpoint
	// that frees its slots fast (startWaiting).
	fastWaitingN atomic.Int32
	// workerWaits counts fan-out deliveries waiting for a worker (launchSoon).
	workerWaits atomic.Int32
}

// blocker says why an endpoint cannot receive now (endpoint_state.go).
type blocker interface {
	Blocked(id string, now time.Time) (cause string, until time.Time)
}

// sender is the send stage (attempt.go): watch guards a fan-out delivery
// about to be attempted (guard.go), attempt makes the attempt.
type sender interface {
	watch(dl *delivery)
	attempt(dl *delivery, adm *admission, done func())
}

// startWaiting reports whether a fan-out delivery may wait for one of e's
// in-flight slots, and which budget the wait takes (stopWaiting gives it
// back). Each wait holds its event unsettled, so the waits are bounded:
//
//   - any endpoint: at most 4 x max_in_flight deliveries (a busy healthy
//     endpoint's momentary peak), and never more than a quarter of the
//     fan-out's unsettled events; worker.concurrency such waits in the
//     process. A saturated endpoint parks the rest at once instead of
//     filling the fan-out's unsettled events.
//   - an endpoint that frees its slots fast (soonFree: every waiting
//     delivery can expect a slot within fastWait at the rate it has been
//     freeing them), past those bounds: up to half the fan-out's unsettled
//     events each, and as many in the process, with the first kind, as the
//     fan-out holds unsettled. In a burst to healthy endpoints the fan-out
//     then holds what it pulled until the endpoints take it, instead of
//     parking it: a parked delivery is a task stored with its payload
//     (replicated on a cluster) and a drain consumer to read it back.
//
// A slow endpoint frees slots seconds apart, so it never gets the second
// budget and cannot hold more of the fan-out than before.
func (a *admitter) startWaiting(e *endpoint, s *settings) (ok, fast bool) {
	n := int(e.slots.waiting.Add(1))
	if n <= min(4*s.ep.MaxInFlight, max(1, a.unsettled/4)) {
		if int(a.waitingN.Add(1)) <= cap(a.global) {
			return true, false
		}
		a.waitingN.Add(-1)
	}
	if n <= a.unsettled/2 && e.slots.soonFree(n, s.ep.MaxInFlight, fastWait) {
		if int(a.fastWaitingN.Add(1)+a.waitingN.Load()) <= a.unsettled {
			return true, true
		}
		a.fastWaitingN.Add(-1)
	}
	e.slots.waiting.Add(-1)
	return false, false
}

// fastWait is how soon a delivery waiting in startWaiting's second budget
// must expect a slot: below inFlightWait, after which it is parked.
const fastWait = inFlightWait * 4 / 5

func (a *admitter) stopWaiting(e *endpoint, fast bool) {
	e.slots.waiting.Add(-1)
	if fast {
		a.fastWaitingN.Add(-1)
		return
	}
	a.waitingN.Add(-1)
}

// admission is what a delivery holds once admitted: a slot of its
// endpoint's in-flight cap and its breaker's permission. Release gives both
// back when no attempt is made; after an attempt the breaker is settled by
// its Record and only the slot is released.
type admission struct {
	breakers *breaker.Registry
	e        *endpoint
	breaker  bool
	probe    bool // the breaker's permission is its half-open probe
	// token is the rate-limit reservation until a request spends it;
	// release hands an unspent one back.
	token *rate.Reservation
}

// spend marks the admission's rate-limit token as used by a request.
func (a *admission) spend() { a.token = nil }

// Release gives back what a holds (settle.Admission, drain.Admission).
func (a *admission) Release() {
	if a.token != nil {
		a.token.Cancel()
		a.token = nil
	}
	if a.breaker {
		a.breakers.ReleaseProbe(a.e.ID, a.probe)
		a.breaker = false
	}
	a.e.slots.release()
}

// admit asks, without waiting, whether e can take a delivery now. It returns
// the admission, or the cause that keeps e from taking it: disabled,
// rate_limit (a receiver's Retry-After or the local limit), breaker or
// in_flight.
func (a *admitter) admit(e *endpoint, s *settings) (*admission, string) {
	if cause, _ := a.states.Blocked(e.ID, a.now()); cause != "" {
		return nil, cause
	}
	if !e.slots.tryAcquire() {
		return nil, "in_flight"
	}
	return a.admitHolding(e, s)
}

// admitHolding is admit for a caller that already holds one of e's slots;
// the slot is given back when e cannot take the delivery.
func (a *admitter) admitHolding(e *endpoint, s *settings) (*admission, string) {
	if cause, _ := a.states.Blocked(e.ID, a.now()); cause != "" {
		e.slots.release()
		return nil, cause
	}
	var token *rate.Reservation
	if s.limiter != nil {
		token = s.limiter.Reserve()
		if token.Delay() > 0 {
			token.Cancel()
			e.slots.release()
			return nil, "rate_limit"
		}
	}
	if adm, _ := a.admitBreaker(e, token); adm != nil {
		return adm, ""
	}
	return nil, "breaker"
}

// admitBreaker completes an admission that holds an in-flight slot of e and
// its rate-limit token (nil without a limit) with the breaker's permission,
// or gives both back and says how long until the breaker may allow one.
func (a *admitter) admitBreaker(e *endpoint, token *rate.Reservation) (*admission, time.Duration) {
	ok, probe, wait := a.breakers.AcquireProbe(e.ID)
	if ok {
		return &admission{breakers: a.breakers, e: e, breaker: true, probe: probe, token: token}, 0
	}
	if token != nil {
		token.Cancel()
	}
	e.slots.release()
	return nil, wait
}

// launch takes a slot of the global concurrency (worker.concurrency: the
// requests in flight) and attempts dl on a worker goroutine; the slot is
// given back as soon as the request is over. When every worker is busy, a
// fan-out delivery (wait false) waits for one on a goroutine of its own
// (launchSoon), so the fan-out never waits for the pool; a drain's waits
// here.
func (a *admitter) launch(ctx context.Context, dl *delivery, adm *admission, wait bool) {
	select {
	case a.global <- struct{}{}:
	default:
		if !wait {
			a.launchSoon(ctx, dl, adm)
			return
		}
		select {
		case a.global <- struct{}{}:
		case <-ctx.Done():
			adm.Release()
			dl.Done(false)
			return
		}
	}
	a.start(dl, adm)
}

// launchSoon waits up to inFlightWait for a worker for dl, a fan-out
// delivery that found every worker busy, and parks it when none frees.
// Every endpoint holds at most its share of the workers (poolShare), so a
// full pool is many endpoints' requests, which free workers within
// milliseconds when they are healthy: parking at once made a momentary peak
// (a burst after a slow fsync) a synced task write and a drain per
// delivery, which slowed the next round further. At most
// worker.concurrency deliveries wait in the process; past that they are
// parked at once.
func (a *admitter) launchSoon(ctx context.Context, dl *delivery, adm *admission) {
	if int(a.workerWaits.Add(1)) > cap(a.global) {
		a.workerWaits.Add(-1)
		adm.Release()
		a.park(dl, "concurrency")
		return
	}
	a.inflight.Add(1)
	go func() {
		defer a.inflight.Done()
		t := time.NewTimer(inFlightWait)
		defer t.Stop()
		select {
		case a.global <- struct{}{}:
			a.workerWaits.Add(-1)
			a.start(dl, adm)
			return
		case <-t.C:
			a.workerWaits.Add(-1)
			adm.Release()
			a.park(dl, "concurrency")
		case <-ctx.Done():
			a.workerWaits.Add(-1)
			adm.Release()
			dl.Done(false)
		}
	}()
}

// start attempts dl, which holds adm and a worker, on a goroutine of its
// own.
func (a *admitter) start(dl *delivery, adm *admission) {
	m := a.metrics
	a.inflight.Add(1)
	m.InFlight.Set(float64(a.inFlightN.Add(1)))
	a.send.watch(dl)
	go func() {
		defer a.inflight.Done()
		// The worker goes back once the request is over, before what
		// follows it (a retry's or a dead letter's store, fsynced in the
		// durable default): storing a dead endpoint's failures never holds
		// workers that healthy endpoints' requests need.
		held := true
		free := func() {
			if held {
				held = false
				<-a.global
				m.InFlight.Set(float64(a.inFlightN.Add(-1)))
			}
		}
		a.send.attempt(dl, adm, free)
		free() // no request was made
	}()
}
