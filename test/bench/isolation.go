package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hookjet/hookjet/config"
)

// The isolation scenarios (DESIGN.md, "Isolation and bounded
// resources"): a healthy endpoint beside a mix of failing ones keeps its
// latency and its rate. Each mix runs twice in the same run, at the same
// offered rate and with the same routing: first all healthy (the baseline,
// "<name>-base"), then with the mix; the targets compare the endpoints that
// are healthy in the mix across the two. logfull and consumers1100 (in
// isolation_bounds.go) measure the bounds on storage and consumers.
//
// Worker settings are hookjet's defaults (worker.concurrency 256,
// max_in_flight 16), as a new user runs it.

// isolationStats is what the isolation scenarios measure besides the
// healthy endpoints' rate and latency.
type isolationStats struct {
	// Retries are the events of failFirst endpoints whose refused first
	// attempt was retried; RetriesMissing those not retried by the end;
	// RetryGap the time from the refused attempt to the retry.
	// Deferrals are hookjet_deferrals_total at the end, summed by cause,
	// for the measured endpoints ("measured <cause>") and the others
	// ("others <cause>"): deliveries parked or put back without an attempt.
	Deferrals map[string]float64 `json:"deferrals,omitempty"`

	Retries        int           `json:"retries,omitempty"`
	RetriesMissing int           `json:"retries_missing,omitempty"`
	RetryGap       *latencyStats `json:"retry_gap,omitempty"`

	// logfull: the dead endpoint's owed deliveries (events the log
	// accepted), its pending tasks (parked and scheduled) and its dead
	// letters once everything settled; the largest sizes of HOOKJET_TASKS
	// and HOOKJET_EVENTS seen, beside their bounds.
	Owed        int64 `json:"owed,omitempty"`
	Pending     int64 `json:"pending,omitempty"`
	DeadLetters int64 `json:"dead_letters,omitempty"`
	Settled     bool  `json:"settled,omitempty"`
	// HealthyDeadLetters are the healthy endpoint's dead letters: a
	// delivery it was owed that went to the DLQ (as overflow, when the dead
	// endpoint's tasks filled HOOKJET_TASKS).
	HealthyDeadLetters int64  `json:"healthy_dead_letters,omitempty"`
	TasksPeakBytes     int64  `json:"tasks_peak_bytes,omitempty"`
	TasksMaxBytes      int64  `json:"tasks_max_bytes,omitempty"`
	EventsPeakBytes    int64  `json:"events_peak_bytes,omitempty"`
	EventsMaxBytes     int64  `json:"events_max_bytes,omitempty"`
	PushedBytes        int64  `json:"pushed_bytes,omitempty"`
	LogOldest          string `json:"log_oldest,omitempty"`

	// consumers1100: consumers on HOOKJET_TASKS a while after the last
	// parked task was delivered, the most seen meanwhile, and how many
	// events were parked.
	Consumers     int   `json:"consumers,omitempty"`
	ConsumersPeak int   `json:"consumers_peak,omitempty"`
	Parked        int64 `json:"parked,omitempty"`
}

// isoSizes are the isolation scenarios' durations, smaller with -quick.
type isoSizes struct {
	mix          time.Duration // each paced run of a mix
	logBytes     int64         // logfull: payload bytes pushed through the log
	consumerWait time.Duration // consumers1100: how long after the last delivery consumers are counted
}

func (b *bench) isoSizes() isoSizes {
	if b.p.quick {
		return isoSizes{mix: 6 * time.Second, logBytes: 100 << 20, consumerWait: 15 * time.Second}
	}
	return isoSizes{mix: 20 * time.Second, logBytes: 300 << 20, consumerWait: time.Minute}
}

// mixSpec is one paced run of an isolation scenario.
type mixSpec struct {
	name, description string
	behave            []behaviour
	// measured are the endpoints the result is about: those healthy in the
	// mix (the same ones in its baseline).
	measured func(i int) bool
	route    func(n int) int // the endpoint of event n; nil: round-robin
	slowFor  time.Duration   // how long a slow endpoint takes
	// failOneIn: failFirst endpoints refuse the first attempt of the events
	// whose number is a multiple of it (tally.failOneIn).
	failOneIn int
	extra     func(i int) string // per-endpoint YAML lines
	rate      float64
	duration  time.Duration
}

// baseline is s with every endpoint healthy and no extra settings but
// those of failFirst endpoints (whose retries are compared too).
func (s mixSpec) baseline() mixSpec {
	m := s
	m.name += "-base"
	m.description = "baseline of " + s.name + ", every endpoint healthy: " + s.description
	m.behave = make([]behaviour, len(s.behave))
	for i, k := range s.behave {
		if k == failFirst {
			m.behave[i] = failFirst
		}
	}
	if s.extra != nil {
		m.extra = func(i int) string {
			if s.behave[i] == failFirst {
				return s.extra(i)
			}
			return ""
		}
	}
	return m
}

func (b *bench) isolationScenarios(ctx context.Context) map[string][]runFunc {
	sz := b.isoSizes()
	pair := func(s mixSpec) []runFunc {
		return []runFunc{
			func() (*result, error) { return b.mixed(ctx, s.baseline()) },
			func() (*result, error) { return b.mixed(ctx, s) },
		}
	}
	return map[string][]runFunc{
		"slow16":        pair(slow16(sz)),
		"slow1at2500":   pair(slow1at2500(sz)),
		"ratelimited70": pair(ratelimited70(sz)),
		"dead10pct":     pair(dead10pct(sz)),
		"logfull":       {func() (*result, error) { return b.logFull(ctx, sz) }},
		"consumers1100": {func() (*result, error) { return b.consumers(ctx, sz) }},
	}
}

// slow16: 16 endpoints that answer after 3 s (at max_in_flight 16 they
// fill worker.concurrency 256) beside a fast one; half the events are the
// fast one's, the other half spread over the slow ones (6.25/s each, more
// than the 5.3/s they take, so they stay saturated).
func slow16(sz isoSizes) mixSpec {
	bs := make([]behaviour, 17)
	for i := range 16 {
		bs[i] = slow
	}
	return mixSpec{name: "slow16", behave: bs, slowFor: 3 * time.Second, rate: 200, duration: sz.mix,
		description: fmt.Sprintf("16 endpoints answer after 3 s beside a fast one (e16), 200 events/s for %s: half to e16, half over the slow ones; default worker settings", sz.mix),
		measured:    func(i int) bool { return i == 16 },
		route: func(n int) int {
			if n%2 == 0 {
				return 16
			}
			return (n / 2) % 16
		}}
}

// slow1at2500: one endpoint answering after 2 s beside a healthy one, at
// 2,500 events/s round-robin.
func slow1at2500(sz isoSizes) mixSpec {
	return mixSpec{name: "slow1at2500", behave: []behaviour{slow, healthy}, slowFor: 2 * time.Second, rate: 2500, duration: sz.mix,
		description: fmt.Sprintf("e0 answers after 2 s beside a healthy e1, 2,500 events/s round-robin for %s; default worker settings", sz.mix),
		measured:    func(i int) bool { return i == 1 }}
}

// ratelimited70: 70 endpoints limited to 0.1 requests/s, offered 1.1
// events/s each, so their backlogs grow all along, beside an endpoint that
// refuses (503) the first attempt of one event in 7 of its 20/s, with the
// retry due within 0.5 s (retry.base and cap 500ms; one failure at a time
// never opens its breaker), and a healthy one that gets half the events.
// The limited endpoints answer at once: the mix is their rate limit, which
// the baseline does not have.
func ratelimited70(sz isoSizes) mixSpec {
	const limited, retrying, fast = 70, 70, 71
	bs := make([]behaviour, 72)
	for i := range limited {
		bs[i] = healthy
	}
	bs[retrying] = failFirst
	return mixSpec{name: "ratelimited70", behave: bs, rate: 200, duration: sz.mix, failOneIn: 7,
		description: fmt.Sprintf("70 endpoints rate-limited to 0.1 rps (burst 1), offered 1.1/s each, beside e70 (20/s) that refuses the first attempt of one event in 7 (retry.base 500ms: due within 0.5 s) and a healthy e71 (100/s); 200 events/s for %s", sz.mix),
		measured:    func(i int) bool { return i == fast },
		route: func(n int) int {
			switch m := n % 10; {
			case m < 5:
				return fast
			case m == 5:
				return retrying
			default:
				return (n/10*4 + m - 6) % limited
			}
		},
		extra: func(i int) string {
			switch {
			case i < limited:
				return "    rate_limit: {rps: 0.1, burst: 1}\n"
			case i == retrying:
				return "    retry: {base: 500ms, cap: 500ms}\n"
			}
			return ""
		}}
}

// dead10pct: 1,000 endpoints, every 10th connection refused, 2,000 events/s
// round-robin; the 900 healthy ones are measured.
func dead10pct(sz isoSizes) mixSpec {
	bs := make([]behaviour, 1000)
	for i := 0; i < len(bs); i += 10 {
		bs[i] = refused
	}
	return mixSpec{name: "dead10pct", behave: bs, rate: 1000, duration: sz.mix,
		description: fmt.Sprintf("1,000 endpoints, every 10th connection refused, 1,000 events/s round-robin for %s; the 900 healthy ones; default worker settings", sz.mix),
		measured:    func(i int) bool { return i%10 != 0 }}
}

// mixed runs s: hookjet with s's endpoints, events published at s.rate for
// s.duration; the result is the measured endpoints' rate and latency, and
// the retries of failFirst endpoints.
func (b *bench) mixed(ctx context.Context, s mixSpec) (*result, error) {
	events := int(s.rate * s.duration.Seconds())
	r := &result{Name: s.name, Description: s.description, Endpoints: len(s.behave), Events: events, OfferedRate: s.rate, Isolation: &isolationStats{}}
	x := newRoutedTally(s.behave, events, true, s.route)
	x.slowFor, x.failOneIn = s.slowFor, s.failOneIn
	rec, err := newReceiver(b.key, x)
	if err != nil {
		return nil, err
	}
	defer rec.close()
	spec, err := defaultWorkers(throughputSpec{behave: s.behave, extra: s.extra}).hookjetSpec(b, rec)
	if err != nil {
		return nil, err
	}
	spec = defaultSpec(spec)
	r.PeakRSSPerScenario = resetPeakRSS()
	r.GoroutinesBefore = runtime.NumGoroutine()
	b.say("%s: starting hookjet with %d endpoints; %.0f events/s for %s", s.name, len(s.behave), s.rate, s.duration)
	h, err := startHookjet(ctx, spec, b.logOut)
	if err != nil {
		return nil, err
	}
	stopped := false
	defer func() {
		if !stopped {
			h.stop()
		}
	}()
	r.StartupSeconds = round(h.startup.Seconds(), 3)
	pub := newPublisher(h.js, len(s.behave))
	pub.route = s.route
	stopProfile, err := b.startProfile(s.name)
	if err != nil {
		return nil, err
	}
	defer stopProfile()
	// Sampled once a second: the watch's stream info requests are few
	// beside the engine's own.
	w := watchStreams(ctx, h.js, time.Second)
	defer w.stop()
	cpu0, t0, m0 := cpuTime(), time.Now(), machineCPU()
	if err := pace(ctx, pub, events, s.rate, t0); err != nil {
		r.Notes = append(r.Notes, "publish: "+err.Error())
	}
	pubEnd := time.Now()
	r.AchievedRate = round(float64(events)/pubEnd.Sub(t0).Seconds(), 1)
	deadline := pubEnd.Add(b.p.drainAfterPacing)
	r.Complete = waitEndpoints(ctx, x, deadline, s.measured)
	retriesDone := waitEndpoints(ctx, x, deadline, func(i int) bool { return s.behave[i] == failFirst })
	cpu, tEnd := cpuTime()-cpu0, time.Now()
	stopProfile()
	w.stop()
	r.Isolation.TasksPeakBytes, r.Isolation.ConsumersPeak = w.tasksPeak.Load(), int(w.consumersPeak.Load())
	r.setOther(m0, cpu, tEnd.Sub(t0))
	r.setMeasured(x, s.measured, t0, tEnd, cpu)
	r.Latency = ptr(summarise(latenciesWhere(x, s.measured)))
	r.Isolation.retries(x)
	r.Isolation.Deferrals = deferrals(ctx, "http://"+h.srv.AdminAddr(), s.measured)
	if !retriesDone {
		r.Notes = append(r.Notes, "a failFirst endpoint did not get all its events by the end")
	}
	r.PeakRSSMB = peakMB()
	r.runtimeStats()
	flushCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	if err := pub.flush(flushCtx); err != nil {
		r.Notes = append(r.Notes, err.Error())
	}
	cancel()
	r.collect(x, h)
	if !r.Complete {
		r.Notes = append(r.Notes, fmt.Sprintf("%d of %d events for the measured endpoints delivered within %s after publishing ended%s",
			r.Delivered, expectedWhere(x, s.measured), b.p.drainAfterPacing, missing(x, s.measured)))
	}
	r.ShutdownSeconds = round(h.stop().Seconds(), 3)
	stopped = true
	rec.close()
	r.GoroutinesAfter = settledGoroutines()
	r.collectLogs(h)
	b.say("%s: offered %.0f/s achieved %.0f/s; measured endpoints %.0f/s, p50 %.2fms p99 %.2fms max %.2fms%s",
		s.name, s.rate, r.AchievedRate, r.PerSecond, r.Latency.P50, r.Latency.P99, r.Latency.Max, r.Isolation.retryLine())
	return r, ctx.Err()
}

// defaultWorkers gives s hookjet's default worker settings.
func defaultWorkers(s throughputSpec) throughputSpec {
	s.maxInFlight = config.Default().Defaults.MaxInFlight
	return s
}

// defaultSpec sets worker.concurrency to hookjet's default.
func defaultSpec(spec hookjetSpec) hookjetSpec {
	spec.concurrency = config.Default().Worker.Concurrency
	return spec
}

// setMeasured sets the delivered count and rate of the endpoints keep
// selects: over the window from t0 to their last delivery when every one of
// them completed, to tEnd otherwise.
func (r *result) setMeasured(x *tally, keep func(int) bool, t0, tEnd time.Time, cpu time.Duration) {
	var n, lastNs int64
	complete := true
	for i := range x.behave {
		if !keep(i) {
			continue
		}
		n += x.perEP[i].Load()
		done := x.epDoneAt[i].Load()
		complete = complete && done != 0
		lastNs = max(lastNs, done)
	}
	r.Delivered = n
	r.HealthyEndpoints = 0
	for i := range x.behave {
		if keep(i) {
			r.HealthyEndpoints++
		}
	}
	window := tEnd.Sub(t0)
	if complete && lastNs > 0 {
		window = time.Unix(0, lastNs).Sub(t0)
	}
	r.setRate(window, cpu)
}

// expectedWhere is the number of events bound for the endpoints keep selects.
func expectedWhere(x *tally, keep func(int) bool) int64 {
	var n int64
	for i, e := range x.expected {
		if keep(i) {
			n += e
		}
	}
	return n
}

// latenciesWhere are the publish→delivery latencies of the events delivered
// to the endpoints keep selects.
func latenciesWhere(x *tally, keep func(int) bool) []time.Duration {
	var out []time.Duration
	for n := range x.events {
		if keep(x.endpointOf(n)) && x.seen[n].Load() {
			out = append(out, time.Duration(x.latency[n].Load()))
		}
	}
	return out
}

// waitEndpoints polls until every endpoint keep selects has all its events,
// ctx ends or the deadline passes; it reports whether they all arrived.
func waitEndpoints(ctx context.Context, x *tally, deadline time.Time, keep func(int) bool) bool {
	for {
		all := true
		for i := range x.behave {
			all = all && (!keep(i) || x.perEP[i].Load() >= x.expected[i])
		}
		if all {
			return true
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// retries reads the retry gaps of x's failFirst endpoints.
func (st *isolationStats) retries(x *tally) {
	if x.failedAt == nil {
		return
	}
	var gaps []time.Duration
	for n := range x.events {
		if x.failedAt[n].Load() == 0 {
			continue
		}
		if g := x.retryGap[n].Load(); g > 0 {
			gaps = append(gaps, time.Duration(g))
		} else {
			st.RetriesMissing++
		}
	}
	st.Retries = len(gaps)
	st.RetryGap = ptr(summarise(gaps))
}

func (st *isolationStats) retryLine() string {
	if st.RetryGap == nil {
		return ""
	}
	return fmt.Sprintf("; %d retries, refused attempt→retry p50 %.0fms p99 %.0fms max %.0fms, %d not retried",
		st.Retries, st.RetryGap.P50, st.RetryGap.P99, st.RetryGap.Max, st.RetriesMissing)
}

// padPayload adds pad bytes to the note of a payload built by appendPayload.
func padPayload(b []byte, pad int) []byte {
	const tail = `"}}`
	b = b[:len(b)-len(tail)]
	for pad > 0 {
		k := min(pad, len(payloadFiller))
		b = append(b, payloadFiller[:k]...)
		pad -= k
	}
	return append(b, tail...)
}

// isolationTargets are the targets of the healthy endpoints
// beside each mix against their baseline, the retry beside rate-limited
// backlogs, and the bounds of logfull and consumers1100.
func isolationTargets(get func(string) *result) []target {
	var cs []check
	for _, m := range []struct{ scen, what string }{
		{"slow16", "16 slow endpoints (3 s)"},
		{"slow1at2500", "one slow endpoint (2 s) at 2,500 events/s"},
		{"ratelimited70", "70 rate-limited backlogs"},
		{"dead10pct", "10% of 1,000 endpoints dead"},
	} {
		mix, base := get(m.scen), get(m.scen+"-base")
		p := check{name: "healthy endpoint p99 beside " + m.what + " vs all healthy", goal: "<= +250 ms", unit: "ms", need: m.scen}
		if mix != nil && base != nil && mix.Latency != nil && base.Latency != nil && mix.Latency.Count > 0 && base.Latency.Count > 0 {
			p.value = mix.Latency.P99 - base.Latency.P99
			p.ok = ptr(p.value <= 250 && mix.Complete)
			p.detail = fmt.Sprintf("p99 %.2f ms vs %.2f ms, p50 %.2f vs %.2f ms, max %.0f vs %.0f ms", mix.Latency.P99, base.Latency.P99, mix.Latency.P50, base.Latency.P50, mix.Latency.Max, base.Latency.Max)
			if !mix.Complete {
				p.detail += " (incomplete within its time bound)"
			}
		}
		rate := ratioCheck("healthy endpoint rate beside "+m.what+" vs all healthy", ">= 90%", 90, mix, base, m.scen,
			func(r *result) float64 { return r.PerSecond })
		cs = append(cs, baselineHeld(p, base), baselineHeld(rate, base))
	}
	retry := check{name: "retry due within 0.5 s beside 70 rate-limited backlogs: refused attempt to retry, slowest", goal: "<= 3 s", unit: "s", need: "ratelimited70"}
	if r := get("ratelimited70"); r != nil && r.Isolation != nil && r.Isolation.RetryGap != nil {
		st := r.Isolation
		retry.value = st.RetryGap.Max / 1000
		retry.ok = ptr(st.Retries > 0 && st.RetriesMissing == 0 && retry.value <= 3)
		retry.detail = fmt.Sprintf("%d retries: p50 %.0f ms, p99 %.0f ms, max %.0f ms; %d not retried", st.Retries, st.RetryGap.P50, st.RetryGap.P99, st.RetryGap.Max, st.RetriesMissing)
		if b := get("ratelimited70-base"); b != nil && b.Isolation != nil && b.Isolation.RetryGap != nil {
			retry.detail += fmt.Sprintf("; baseline p99 %.0f ms, max %.0f ms", b.Isolation.RetryGap.P99, b.Isolation.RetryGap.Max)
		}
	}
	cs = append(cs, retry)
	cs = append(cs, logFullChecks(get("logfull"))...)
	c := check{name: "consumers on HOOKJET_TASKS after 1,100 endpoints each drained a parked task", goal: "<= 70", unit: "consumers", need: "consumers1100"}
	if r := get("consumers1100"); r != nil && r.Isolation != nil && r.Isolation.Consumers >= 0 {
		c.value = float64(r.Isolation.Consumers)
		c.ok = ptr(r.Isolation.Consumers <= 70 && r.Complete)
		c.detail = fmt.Sprintf("%d parked, %d delivered in %.1f s; at most %d consumers meanwhile", r.Isolation.Parked, r.Delivered, r.Seconds, r.Isolation.ConsumersPeak)
	}
	cs = append(cs, c)
	ts := make([]target, len(cs))
	for i, c := range cs {
		ts[i] = c.target()
	}
	return ts
}

// baselineHeld fails c when its all-healthy baseline did not deliver
// everything in time: a mix compared with a baseline that fell behind
// proves nothing.
func baselineHeld(c check, base *result) check {
	if c.ok != nil && base != nil && !base.Complete {
		c.ok = ptr(false)
		c.detail += fmt.Sprintf("; the all-healthy baseline fell behind (%.0f/s, p99 %.0f ms, incomplete): no comparison", base.PerSecond, base.Latency.P99)
	}
	return c
}

// logFullChecks are logfull's targets: no refused publish, the dead
// endpoint's deliveries accounted for exactly, HOOKJET_TASKS within
// tasks_max_bytes.
func logFullChecks(r *result) []check {
	refusedPub := check{name: "logfull: publishes refused while several times streams.max_bytes went through the log", goal: "0", unit: "publishes", need: "logfull"}
	owed := check{name: "logfull: dead endpoint's pending + dead letters - owed", goal: "0", unit: "deliveries", need: "logfull"}
	tasks := check{name: "logfull: largest HOOKJET_TASKS seen vs streams.tasks_max_bytes", goal: "<= 100%", unit: "%", need: "logfull"}
	healthy := check{name: "logfull: the healthy endpoint's events dead-lettered (it gets every one)", goal: "0", unit: "deliveries", need: "logfull"}
	if r == nil || r.Isolation == nil {
		return []check{refusedPub, owed, tasks, healthy}
	}
	st := r.Isolation
	refusedPub.value, refusedPub.ok = float64(r.PublishFailed), ptr(r.PublishFailed == 0)
	refusedPub.detail = fmt.Sprintf("%d MiB pushed through max_bytes %d MiB; largest HOOKJET_EVENTS seen %.1f MiB; log_oldest %s; healthy endpoint %.0f/s, p99 %.1f ms",
		st.PushedBytes>>20, st.EventsMaxBytes>>20, float64(st.EventsPeakBytes)/(1<<20), st.LogOldest, r.PerSecond, r.Latency.P99)
	owed.value = float64(st.Pending + st.DeadLetters - st.Owed)
	owed.ok = ptr(st.Settled && st.Pending+st.DeadLetters == st.Owed)
	owed.detail = fmt.Sprintf("owed %d (events the log accepted), pending tasks %d, dead letters %d; fan-out settled: %v", st.Owed, st.Pending, st.DeadLetters, st.Settled)
	if st.TasksMaxBytes > 0 {
		tasks.value = 100 * float64(st.TasksPeakBytes) / float64(st.TasksMaxBytes)
		tasks.ok = ptr(st.TasksPeakBytes <= st.TasksMaxBytes)
		tasks.detail = fmt.Sprintf("%.2f MiB of %d MiB (sampled every 100 ms)", float64(st.TasksPeakBytes)/(1<<20), st.TasksMaxBytes>>20)
	}
	healthy.value, healthy.ok = float64(st.HealthyDeadLetters), ptr(st.HealthyDeadLetters == 0 && r.Complete)
	healthy.detail = fmt.Sprintf("%d of %d delivered, %d dead-lettered", r.Delivered, r.Events, st.HealthyDeadLetters)
	return []check{refusedPub, owed, tasks, healthy}
}

// isolationExtras are the report lines of what the isolation scenarios
// measure.
func isolationExtras(r *result) []string {
	st := r.Isolation
	if st == nil {
		return nil
	}
	var out []string
	if line := st.retryLine(); line != "" {
		out = append(out, line[2:])
	}
	if st.Owed > 0 {
		out = append(out, fmt.Sprintf("healthy endpoint's dead letters %d; dead endpoint owed %d: pending %d + dead letters %d (settled %v); HOOKJET_TASKS peak %.1f MiB of %d MiB; HOOKJET_EVENTS peak %.1f MiB of %d MiB, %d MiB pushed; log_oldest %s",
			st.HealthyDeadLetters, st.Owed, st.Pending, st.DeadLetters, st.Settled, float64(st.TasksPeakBytes)/(1<<20), st.TasksMaxBytes>>20,
			float64(st.EventsPeakBytes)/(1<<20), st.EventsMaxBytes>>20, st.PushedBytes>>20, st.LogOldest))
	}
	if len(st.Deferrals) > 0 {
		out = append(out, "deferrals: "+causeCounts(st.Deferrals))
	}
	switch {
	case st.Parked > 0:
		out = append(out, fmt.Sprintf("%d parked; %d consumers on HOOKJET_TASKS at the end, at most %d meanwhile", st.Parked, st.Consumers, st.ConsumersPeak))
	case st.Owed == 0 && (st.ConsumersPeak > 0 || st.TasksPeakBytes > 0):
		out = append(out, fmt.Sprintf("HOOKJET_TASKS (sampled every second): at most %d consumers, %.1f MiB", st.ConsumersPeak, float64(st.TasksPeakBytes)/(1<<20)))
	}
	return out
}

// missing names the first few events the endpoints keep selects did not
// get.
func missing(x *tally, keep func(int) bool) string {
	var ids []string
	for n := 0; n < x.events && len(ids) < 5; n++ {
		if ep := x.endpointOf(n); keep(ep) && !x.seen[n].Load() {
			ids = append(ids, fmt.Sprintf("%s for e%d", eventID(n), ep))
		}
	}
	if len(ids) == 0 {
		return ""
	}
	return "; missing: " + strings.Join(ids, ", ")
}

// deferrals reads hookjet_deferrals_total from the admin API's /metrics and
// sums it by cause, for the endpoints measured selects and for the others;
// nil if the metrics cannot be read.
func deferrals(ctx context.Context, base string, measured func(int) bool) map[string]float64 {
	text, err := metricsText(ctx, base)
	if err != nil {
		return nil
	}
	return parseDeferrals(text, measured)
}

// causeCounts lists counts by cause, sorted: "in_flight 3, rate_limit 1".
func causeCounts(m map[string]float64) string {
	keys := slices.Sorted(maps.Keys(m))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %.0f", k, m[k])
	}
	return strings.Join(parts, ", ")
}

// parked keeps the non-zero causes of deferrals' sums, dropping the
// "measured " prefix (every endpoint is measured).
func parked(d map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range d {
		if v > 0 {
			out[strings.TrimPrefix(k, "measured ")] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// metricsText is the Prometheus text exposition at base's /metrics.
func metricsText(ctx context.Context, base string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return "", err
	}
	client := &http.Client{}
	defer client.CloseIdleConnections()
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	return string(body), nil
}

// parseDeferrals sums the hookjet_deferrals_total samples of a Prometheus
// text exposition by cause, "measured <cause>" for endpoints e<i> that
// measured selects and "others <cause>" for the rest.
func parseDeferrals(text string, measured func(int) bool) map[string]float64 {
	out := map[string]float64{}
	for line := range strings.Lines(text) {
		rest, ok := strings.CutPrefix(line, "hookjet_deferrals_total{")
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil || v == 0 {
			continue
		}
		who := "others"
		if i, err := strconv.Atoi(strings.TrimPrefix(label(labels, "endpoint"), "e")); err == nil && measured(i) {
			who = "measured"
		}
		out[who+" "+label(labels, "cause")] += v
	}
	return out
}

// label is the value of name in a Prometheus label set a="x",b="y".
func label(labels, name string) string {
	_, v, ok := strings.Cut(labels, name+`="`)
	if !ok {
		return ""
	}
	v, _, _ = strings.Cut(v, `"`)
	return v
}
