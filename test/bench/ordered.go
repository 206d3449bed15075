package main

import (
	"context"
	"fmt"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The per-key ordering scenarios (DESIGN "Per-key ordering"): events carry
// Hookjet-Ordering-Key k<n % keys>, published at once (not paced) to one
// endpoint with hookjet's default worker settings.
//
//	ordered1000 / unordered1000  30,000 events over 1,000 keys to an endpoint
//	    with ordering: key, then to the same endpoint without it (the same
//	    keys on the events); target: ordered >= 0.8 x unordered. nats.sync
//	    always; ordered1000fast / unordered1000fast the same with sync 2m
//	orderedbase / orderedfail  200 keys x 20 events to an ordered endpoint;
//	    in orderedfail key k0's requests answer 500 for 10 s from the first of
//	    them; target: the other keys' p99 (publish to first 2xx) within
//	    250 ms of orderedbase's. Published at once, their p99 is mostly the
//	    time the backlog of 4,000 takes, so
//	orderedbasepaced / orderedfailpaced  publish the same 4,000 at 200/s
//	    (one event per key per second, for 20 s): there each event's
//	    latency is its own, and the pair measures what the failing key costs
//	    the others' latency rather than their queue (same target)
//	keys100k  100,000 distinct keys, one event each, to an ordered endpoint:
//	    every event delivered, the JetStream consumers on the server (at the
//	    end and the most seen, sampled every second), peak RSS and Go heap
//
// Every keyed run also counts the events first delivered (2xx) before an
// earlier event of their key: none may be for an ordered endpoint.

// orderingStats is what the per-key ordering scenarios measure.
type orderingStats struct {
	Keys           int     `json:"keys"`
	FailKeySeconds float64 `json:"fail_key_seconds,omitempty"` // k0 answered 500 this long from its first request
	// OtherKeys are the latencies (publish to first 2xx) of the events of
	// every key but k0.
	OtherKeys *latencyStats `json:"other_keys_latency"`
	// KeyFailed counts the 500s answered to k0; KeyDoneSeconds is when k0's
	// last event was first answered 2xx, from the first publish.
	KeyFailed      int64   `json:"key_failed,omitempty"`
	KeyDoneSeconds float64 `json:"key_done_seconds,omitempty"`
	// OutOfOrder counts the events first answered 2xx before the previous
	// event of their key.
	OutOfOrder int64 `json:"out_of_order"`
	// Consumers on the server's JetStream account before the first publish,
	// at the end and the most seen in between.
	ConsumersStart int     `json:"consumers_start"`
	Consumers      int     `json:"consumers_end"`
	ConsumersPeak  int     `json:"consumers_peak"`
	PeakGoHeapMB   float64 `json:"peak_go_heap_mb"` // heap objects, sampled every 100 ms; whole process
}

// orderedNames are the per-key ordering scenarios, in the order they run.
var orderedNames = []string{"ordered1000", "unordered1000", "ordered1000fast", "unordered1000fast", "orderedbase", "orderedfail",
	"orderedbasepaced", "orderedfailpaced", "keys100k"}

const (
	orderedKeys   = 1000
	failKeys      = 200
	failPerKey    = 20
	failKeyFor    = 10 * time.Second
	failKeyMargin = 250 // ms: the other keys' p99 over the run without the failing key
	failPacedRate = 200 // events/s offered in orderedbasepaced and orderedfailpaced
	keys100kMaxMB = 300 // peak RSS of the whole process, as the other scale targets
	// fixedConsumers bounds the JetStream consumers of keys100k: hookjet's
	// own few, never one per key.
	fixedConsumers = 20
)

func (b *bench) orderedScenarios(ctx context.Context) map[string][]runFunc {
	events1000, events100k := 30000, 100000
	if b.p.quick {
		events1000, events100k = 10000, 20000
	}
	ordered := func(int) string { return "    ordering: key\n" }
	const withOrdering, without = "with ordering: key", "without ordering"
	run := func(name string, keys, events int, sync string, extra func(int) string, failFor, bound time.Duration, what string) []runFunc {
		mode := "nats.sync always"
		if sync != "" {
			mode = "nats.sync " + sync
		}
		rate, how := 0.0, "published at once"
		if strings.HasSuffix(name, "paced") {
			rate, how = failPacedRate, fmt.Sprintf("published at %d/s", failPacedRate)
		}
		desc := fmt.Sprintf("%d events round-robin over %d ordering keys, %s, to one endpoint %s; default worker settings, %s", events, keys, how, what, mode)
		return []runFunc{func() (*result, error) {
			return b.throughput(ctx, defaultWorkers(throughputSpec{name: name, description: desc, behave: allHealthy(1),
				events: events, bound: bound, sync: sync, extra: extra, keys: keys, failKeyFor: failFor, rate: rate}))
		}}
	}
	failing := withOrdering + fmt.Sprintf("; key k0 answered 500 for %s from its first request", failKeyFor)
	return map[string][]runFunc{
		"ordered1000":       run("ordered1000", orderedKeys, events1000, "", ordered, 0, 3*time.Minute, withOrdering),
		"unordered1000":     run("unordered1000", orderedKeys, events1000, "", nil, 0, 3*time.Minute, without),
		"ordered1000fast":   run("ordered1000fast", orderedKeys, events1000, fastSync, ordered, 0, 3*time.Minute, withOrdering),
		"unordered1000fast": run("unordered1000fast", orderedKeys, events1000, fastSync, nil, 0, 3*time.Minute, without),
		"orderedbase":       run("orderedbase", failKeys, failKeys*failPerKey, "", ordered, 0, 2*time.Minute, withOrdering),
		"orderedfail":       run("orderedfail", failKeys, failKeys*failPerKey, "", ordered, failKeyFor, 2*time.Minute, failing),
		"orderedbasepaced":  run("orderedbasepaced", failKeys, failKeys*failPerKey, "", ordered, 0, 2*time.Minute, withOrdering),
		"orderedfailpaced":  run("orderedfailpaced", failKeys, failKeys*failPerKey, "", ordered, failKeyFor, 2*time.Minute, failing),
		"keys100k":          run("keys100k", events100k, events100k, "", ordered, 0, 10*time.Minute, withOrdering+" (one event per key)"),
	}
}

// keyNames are the ordering keys k0 to k<n-1>.
func keyNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "k" + strconv.Itoa(i)
	}
	return out
}

// setKeys gives x's events keys ordering keys (0: none), notes when each
// is first answered 2xx, and makes key k0's requests answer 500 for failFor
// from the first of them.
func (x *tally) setKeys(keys int, failFor time.Duration) {
	if keys <= 0 || x.events == 0 {
		return
	}
	x.keys, x.failKeyFor = keys, failFor
	x.firstAt = make([]atomic.Int64, x.events)
}

// keyFails reports whether the request with body is one of key k0's while
// it must fail, and counts it.
func (x *tally) keyFails(body []byte) bool {
	if x.keys == 0 || x.failKeyFor <= 0 {
		return false
	}
	now := time.Now().UnixNano()
	if until := x.failKeyUntil.Load(); until != 0 && now >= until {
		return false
	}
	n, _, ok := parsePayload(body)
	if !ok || n%x.keys != 0 {
		return false
	}
	x.failKeyUntil.CompareAndSwap(0, now+int64(x.failKeyFor))
	if now >= x.failKeyUntil.Load() {
		return false
	}
	x.keyFailed.Add(1)
	return true
}

// keyedWatch samples the Go heap and the server's consumers during a keyed
// run; nil for a run without keys.
type keyedWatch struct {
	h        *instance
	st       orderingStats
	stop     chan struct{}
	wg       sync.WaitGroup
	heapPeak uint64
	consPeak int
}

// watchKeyed starts the keyed part of run s, if it has keys: the publisher's
// keys and the samplers.
func (b *bench) watchKeyed(ctx context.Context, s throughputSpec, h *instance, pub *publisher) *keyedWatch {
	if s.keys <= 0 {
		return nil
	}
	pub.keys = keyNames(s.keys)
	w := &keyedWatch{h: h, stop: make(chan struct{}), st: orderingStats{Keys: s.keys, FailKeySeconds: s.failKeyFor.Seconds()}}
	w.st.ConsumersStart = consumers(ctx, h)
	w.consPeak = w.st.ConsumersStart
	w.wg.Go(func() { w.sample(ctx) })
	return w
}

// sample reads the heap every 100 ms and the consumers every second until
// w.stop closes.
func (w *keyedWatch) sample(ctx context.Context) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	sm := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	for i := 0; ; i++ {
		metrics.Read(sm)
		if sm[0].Value.Kind() == metrics.KindUint64 {
			w.heapPeak = max(w.heapPeak, sm[0].Value.Uint64())
		}
		if i%10 == 0 {
			w.consPeak = max(w.consPeak, consumers(ctx, w.h))
		}
		select {
		case <-w.stop:
			return
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// finish stops the samplers and returns what the run measured; nil for a
// run without keys.
func (w *keyedWatch) finish(ctx context.Context, x *tally, t0 time.Time) *orderingStats {
	if w == nil {
		return nil
	}
	close(w.stop)
	w.wg.Wait()
	st := w.st
	st.Consumers = consumers(ctx, w.h)
	st.ConsumersPeak = max(w.consPeak, st.Consumers)
	st.PeakGoHeapMB = round(float64(w.heapPeak)/1e6, 1)
	st.KeyFailed = x.keyFailed.Load()
	outOfOrder, keyDone, others := x.keyOrder()
	st.OutOfOrder = outOfOrder
	if !keyDone.IsZero() {
		st.KeyDoneSeconds = round(keyDone.Sub(t0).Seconds(), 2)
	}
	st.OtherKeys = ptr(summarise(others))
	return &st
}

// keyOrder counts the events first answered 2xx before the previous event
// of their key, and returns when key k0's last event was first answered
// 2xx and the latencies of the other keys' events.
func (x *tally) keyOrder() (outOfOrder int64, keyDone time.Time, others []time.Duration) {
	var lastK0 int64
	for n := range x.events {
		at := x.firstAt[n].Load()
		if n >= x.keys && at != 0 && at < x.firstAt[n-x.keys].Load() {
			outOfOrder++
		}
		switch {
		case n%x.keys == 0:
			lastK0 = max(lastK0, at)
		case x.seen[n].Load():
			others = append(others, time.Duration(x.latency[n].Load()))
		}
	}
	if lastK0 > 0 {
		keyDone = time.Unix(0, lastK0)
	}
	return outOfOrder, keyDone, others
}

// consumers is the number of JetStream consumers on h's account; -1 when
// it cannot be read.
func consumers(ctx context.Context, h *instance) int {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	ai, err := h.js.AccountInfo(ctx)
	if err != nil {
		return -1
	}
	return ai.Consumers
}

// orderedTargets are the per-key ordering scenarios' targets.
func orderedTargets(get func(string) *result) []target {
	perSecond := func(r *result) float64 { return r.PerSecond }
	cs := []check{
		ratioCheck("1,000 keys on one ordered endpoint vs the same endpoint unordered (nats.sync always)", ">= 80%", 80,
			get("ordered1000"), get("unordered1000"), "ordered1000 and unordered1000", perSecond),
		ratioCheck("1,000 keys on one ordered endpoint vs the same endpoint unordered (nats.sync 2m)", ">= 80%", 80,
			get("ordered1000fast"), get("unordered1000fast"), "ordered1000fast and unordered1000fast", perSecond),
	}
	cs = append(cs, failKeyCheck(get, "orderedbase", "orderedfail", "published at once"),
		failKeyCheck(get, "orderedbasepaced", "orderedfailpaced", fmt.Sprintf("published at %d/s", failPacedRate)))
	for _, name := range []string{"ordered1000", "ordered1000fast", "orderedbase", "orderedfail", "orderedbasepaced", "orderedfailpaced", "keys100k"} {
		r := get(name)
		o := check{name: name + ": every event delivered, none before the previous one of its key", goal: "0 out of order", unit: "events", need: name}
		if r != nil && r.Ordering != nil {
			o.value = float64(r.Ordering.OutOfOrder)
			o.ok = ptr(r.Ordering.OutOfOrder == 0 && r.Complete && r.Delivered == int64(r.Events))
			o.detail = fmt.Sprintf("%d of %d delivered", r.Delivered, r.Events)
		}
		cs = append(cs, o)
	}
	cs = append(cs, keys100kChecks(get("keys100k"))...)
	ts := make([]target, len(cs))
	for i, c := range cs {
		ts[i] = c.target()
	}
	return ts
}

// failKeyCheck compares the other keys' p99 with a failing key (scenario
// failName) against the same run without it (baseName).
func failKeyCheck(get func(string) *result, baseName, failName, how string) check {
	c := check{name: fmt.Sprintf("a key failing for %s, %s: the other keys' p99 over the same run without it", failKeyFor, how),
		goal: fmt.Sprintf("<= +%d ms", failKeyMargin), unit: "ms", need: baseName + " and " + failName}
	base, fail := get(baseName), get(failName)
	if base == nil || fail == nil || base.Ordering == nil || fail.Ordering == nil {
		return c
	}
	bp, fp := base.Ordering.OtherKeys.P99, fail.Ordering.OtherKeys.P99
	c.value = fp - bp
	// The key must have failed at all for the comparison to mean anything.
	c.ok = ptr(c.value <= failKeyMargin && fail.Ordering.KeyFailed > 0 && fail.Complete && base.Complete)
	c.detail = fmt.Sprintf("keys k1..k%d p99 %.0f ms vs %.0f ms without the failing key (p50 %.0f vs %.0f ms); k0 answered 500 %d times, its last event delivered %.1f s after the first publish",
		failKeys-1, fp, bp, fail.Ordering.OtherKeys.P50, base.Ordering.OtherKeys.P50, fail.Ordering.KeyFailed, fail.Ordering.KeyDoneSeconds)
	return c
}

// keys100kChecks: no consumer per key, and bounded memory.
func keys100kChecks(r *result) []check {
	cons := check{name: "100,000 distinct keys: JetStream consumers on the server", goal: fmt.Sprintf("<= %d (no consumer per key)", fixedConsumers), unit: "consumers", need: "keys100k"}
	rss := check{name: "100,000 distinct keys: peak RSS (whole process)", goal: fmt.Sprintf("<= %d MB", keys100kMaxMB), unit: "MB", need: "keys100k"}
	if r == nil || r.Ordering == nil {
		return []check{cons, rss}
	}
	o := r.Ordering
	cons.value = float64(o.ConsumersPeak)
	cons.ok = ptr(o.ConsumersPeak <= fixedConsumers && o.Consumers >= 0 && r.Complete)
	cons.detail = fmt.Sprintf("%d before the first publish, %d at the end, at most %d meanwhile (sampled every second)", o.ConsumersStart, o.Consumers, o.ConsumersPeak)
	rss.value = r.PeakRSSMB
	rss.ok = ptr(r.PeakRSSMB <= keys100kMaxMB && r.Complete)
	rss.detail = fmt.Sprintf("peak Go heap %.0f MB, at the end %.0f MB; %.0f deliveries/s; includes the harness's publisher and receiver", o.PeakGoHeapMB, r.GoHeapMB, r.PerSecond)
	return []check{cons, rss}
}

// orderedExtras are the report lines of a keyed run.
func orderedExtras(r *result) []string {
	o := r.Ordering
	if o == nil {
		return nil
	}
	out := []string{fmt.Sprintf("%d keys; keys but k0 p50 %.0f ms p99 %.0f ms; %d out of order; consumers %d→%d (at most %d); peak Go heap %.0f MB",
		o.Keys, o.OtherKeys.P50, o.OtherKeys.P99, o.OutOfOrder, o.ConsumersStart, o.Consumers, o.ConsumersPeak, o.PeakGoHeapMB)}
	if o.FailKeySeconds > 0 {
		out = append(out, fmt.Sprintf("k0 answered 500 %d times in %.0f s from its first request, last delivered after %.1f s", o.KeyFailed, o.FailKeySeconds, o.KeyDoneSeconds))
	}
	return out
}
