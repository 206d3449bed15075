package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hookjet/hookjet/internal/freeport"
	"github.com/hookjet/hookjet/internal/natscluster"
)

// result is what one scenario measured. Fields that do not apply are left
// out of the JSON.
type result struct {
	Name        string `json:"name"`
	Run         int    `json:"run"`  // 1-based, among the runs of this scenario
	Best        bool   `json:"best"` // the fastest run of this scenario: the one the targets use
	Description string `json:"description"`
	Endpoints   int    `json:"endpoints,omitempty"`
	Events      int    `json:"events,omitempty"`
	// Complete is false when the scenario's time bound ended it before
	// every event reached every healthy endpoint.
	Complete bool `json:"complete"`

	// Throughput: Delivered (unique events at healthy endpoints, or raw
	// requests) over Seconds, from the first publish to the last delivery.
	Delivered         int64   `json:"delivered"`
	Seconds           float64 `json:"seconds"`
	PerSecond         float64 `json:"per_second"`
	HealthyEndpoints  int     `json:"healthy_endpoints,omitempty"`
	Healthy9PerSecond float64 `json:"healthy9_per_second,omitempty"` // healthy10 only: e1..e9, the set the slow and dead scenarios compare with
	// Healthy900PerSecond (endpoints1000 only) is the rate of the endpoints
	// that stay healthy in dead1000 (index not a multiple of 10).
	Healthy900PerSecond float64 `json:"healthy900_per_second,omitempty"`
	PublishPerSecond    float64 `json:"publish_per_second,omitempty"`

	// Paced runs.
	OfferedRate  float64       `json:"offered_rate,omitempty"`
	AchievedRate float64       `json:"achieved_rate,omitempty"`
	Latency      *latencyStats `json:"latency,omitempty"`

	// CPU of the whole process (hookjet, embedded NATS, publisher,
	// receiver) over the measured window.
	CPUSeconds         float64 `json:"cpu_seconds"`
	CPUSecondsPer1000  float64 `json:"cpu_seconds_per_1000,omitempty"`
	CPUPercentOneCore  float64 `json:"cpu_percent_of_one_core"`
	IdleCPUPercent     float64 `json:"idle_cpu_percent_of_one_core,omitempty"`
	PeakRSSMB          float64 `json:"peak_rss_mb"`
	PeakRSSPerScenario bool    `json:"peak_rss_per_scenario"`        // false: VmHWM could not be reset, it is the process's peak so far
	RSSAnonMB          float64 `json:"rss_anon_mb,omitempty"`        // at the end of the measured window
	RSSFileMB          float64 `json:"rss_file_mb,omitempty"`        // same moment: mapped files (bbolt, JetStream blocks)
	GoHeapMB           float64 `json:"go_heap_in_use_mb,omitempty"`  // same moment
	GoStackMB          float64 `json:"go_stack_in_use_mb,omitempty"` // same moment
	GoSysMB            float64 `json:"go_sys_mb,omitempty"`          // memory the Go runtime holds from the OS, same moment
	Goroutines         int     `json:"goroutines,omitempty"`         // same moment
	StartupSeconds     float64 `json:"startup_seconds,omitempty"`
	ConfigSeconds      float64 `json:"config_seconds,omitempty"` // rendering and parsing the config file, before startup
	// SharedSeconds is how long after start-up the file's endpoints were
	// all stored for other processes (a first start does it in the
	// background); the idle window begins after it.
	SharedSeconds float64 `json:"config_shared_seconds,omitempty"`

	IdleRSSMB    float64 `json:"idle_rss_mb,omitempty"`    // VmRSS at the end of the idle window
	SettledRSSMB float64 `json:"settled_rss_mb,omitempty"` // startup100k: VmRSS settleAfter after ready
	// OutsideCPUPercent is the CPU of the process outside the measured one
	// (publisher, receiver), in percent of one core over the same window.
	OutsideCPUPercent float64 `json:"outside_cpu_percent_of_one_core,omitempty"`
	// APISeconds is the time to create the endpoints through the admin API;
	// AppliedSeconds until the engine has every one of them.
	APISeconds      float64 `json:"api_seconds,omitempty"`
	AppliedSeconds  float64 `json:"applied_seconds,omitempty"`
	ShutdownSeconds float64 `json:"shutdown_seconds,omitempty"`
	// StartupRSSMB is the VmRSS of the built binary when /readyz first
	// answered 200 (startup100k: test/bench/startup.go).
	StartupRSSMB float64 `json:"startup_rss_mb,omitempty"`
	// SlowConsumer counts the "slow consumer" lines in the binary's output
	// (startup100k): a subscription that dropped messages.
	SlowConsumer int64 `json:"slow_consumer,omitempty"`

	Duplicates       int64    `json:"duplicates"`
	BadRequests      int64    `json:"bad_requests"`
	Errors           int64    `json:"errors"`
	DeadRequests     int64    `json:"dead_requests,omitempty"`
	SignaturesVerify int64    `json:"signatures_verified,omitempty"`
	SignaturesBad    int64    `json:"signatures_bad"`
	PublishFailed    int64    `json:"publish_failed"`
	HookjetWarnings  int      `json:"hookjet_warnings"`
	HookjetErrors    int      `json:"hookjet_errors"`
	HookjetLog       []string `json:"hookjet_log,omitempty"`
	// OtherCPUPercent is the CPU other processes on the machine used during
	// the measured window, in percent of one core: what they took was not
	// available to this run.
	OtherCPUPercent  float64  `json:"other_processes_cpu_percent_of_one_core"`
	GoroutinesBefore int      `json:"goroutines_before"`
	GoroutinesAfter  int      `json:"goroutines_after"`
	Notes            []string `json:"notes,omitempty"`
	// ProcessDeliveries are the successful attempts each hookjet process
	// made (hookjet_attempts_total{class="success"}), with several on a
	// cluster (cluster3x3).
	ProcessDeliveries []float64 `json:"process_deliveries,omitempty"`
	// Parked is hookjet_deferrals_total at the end of a throughput run,
	// by cause, over every endpoint (of the first process): the
	// deliveries parked as tasks or put back without an attempt, each a
	// task write and a drain.
	Parked map[string]float64 `json:"parked,omitempty"`
	// Isolation is what the isolation scenarios (isolation.go) measure
	// besides the healthy endpoints' rate and latency.
	Isolation *isolationStats `json:"isolation,omitempty"`
	// Burst is what the burst scenarios (burst.go) measure.
	Burst *burstStats `json:"burst,omitempty"`
	// Ordering is what the per-key ordering scenarios (ordered.go) measure.
	Ordering *orderingStats `json:"ordering,omitempty"`
	// History is what history10m (history.go) measures.
	History *historyStats `json:"history,omitempty"`
	// EventList is what events1m (events.go) measures.
	EventList *eventListStats `json:"event_list,omitempty"`
	// DestConnsIdle and DestConnsBusy are the connections the broker of
	// dest-idle10000 saw from hookjet while its endpoints were idle, and
	// after 100 of them delivered (destinations.go).
	DestConnsIdle int `json:"destination_connections_idle,omitempty"`
	DestConnsBusy int `json:"destination_connections_busy,omitempty"`
}

// params are the sizes of a run; quick shrinks them.
type params struct {
	rawDuration      time.Duration
	events           int // healthy10, slow10, dead10
	events1000       int
	latencyDuration  time.Duration
	costDuration     time.Duration
	bound            time.Duration // time bound of a throughput scenario, from the first publish
	bound1000        time.Duration
	idle             time.Duration // idle CPU measured before the cost and 1000-endpoint runs
	concurrency      int           // worker.concurrency and raw-ceiling goroutines
	maxInFlight      int           // per endpoint, 10-endpoint scenarios
	maxInFlight1000  int
	latencyRate      float64
	costRate         float64
	deadTimeout      string
	drainAfterPacing time.Duration
	scaleIdle        time.Duration // idle window of endpoints100000 and apicreate10000
	apiEndpoints     int           // endpoints apicreate10000 creates
	backlogEvents    int           // tasks backlog20000 drains
	historyRecords   int           // history10m: records of each kind (-history-records)
	eventsStored     int           // events1m: events stored (-events-stored)
	quick            bool
}

func fullParams() params {
	return params{
		rawDuration:      5 * time.Second,
		events:           60000,
		events1000:       60000,
		latencyDuration:  10 * time.Second,
		costDuration:     20 * time.Second,
		bound:            30 * time.Second,
		bound1000:        60 * time.Second,
		idle:             3 * time.Second,
		concurrency:      256,
		maxInFlight:      64,
		maxInFlight1000:  4,
		latencyRate:      2000,
		costRate:         116,
		deadTimeout:      "1s",
		drainAfterPacing: 10 * time.Second,
		scaleIdle:        10 * time.Second,
		apiEndpoints:     10000,
		backlogEvents:    20000,
	}
}

func quickParams() params {
	p := fullParams()
	p.rawDuration = 2 * time.Second
	p.events = 10000
	p.events1000 = 10000
	p.latencyDuration = 3 * time.Second
	p.costDuration = 5 * time.Second
	p.bound = 20 * time.Second
	p.bound1000 = 30 * time.Second
	p.idle = time.Second
	p.scaleIdle = 3 * time.Second
	p.backlogEvents = 5000
	p.quick = true
	return p
}

// bulkShared and bulkSettle: after storing at least bulkShared config
// endpoints at start, hookjet hands the garbage of the store, the embedded
// server's caches of the written blocks included, back to the operating
// system once those caches expired (dispatch/sources: bulkShare,
// serverCacheExpiry, 15 s, timed from the end of the store, with a margin);
// a scale scenario's idle window begins after that, at the steady state.
const (
	bulkShared = 10_000
	bulkSettle = 20 * time.Second
)

// bench runs the scenarios against one receiver.
type bench struct {
	p          params
	key        []byte // the decoded signing secret
	memprofile string
	profile    string // the scenario to profile
	logOut     io.Writer
	cpuprofile string
	progress   io.Writer
	hookjetBin string // the built binary startup100k runs; empty until built
	gapDump    string // directory for the burst scenarios' dumps during a gap (burst.go); "": none
	destLogOff bool   // the destinations scenario's hookjet runs with the delivery log off
}

func (b *bench) say(format string, args ...any) {
	fmt.Fprintf(b.progress, "bench: "+format+"\n", args...)
}

func allHealthy(n int) []behaviour { return make([]behaviour, n) }

// raw measures the ceiling: concurrency goroutines POST the same kind of
// payloads with a plain keep-alive client to the same receiver, round-robin
// over ten endpoint paths, for a fixed time.
func (b *bench) raw(ctx context.Context) (*result, error) {
	const endpoints = 10
	r := &result{Name: "raw", Endpoints: endpoints, Complete: true,
		Description: fmt.Sprintf("raw HTTP ceiling: %d goroutines, plain keep-alive net/http client, %s", b.p.concurrency, b.p.rawDuration)}
	x := newTally(allHealthy(endpoints), 0, false)
	rec, err := newReceiver(b.key, x)
	if err != nil {
		return nil, err
	}
	defer rec.close()
	payloads := make([][]byte, 4096)
	now := time.Now()
	for n := range payloads {
		payloads[n] = appendPayload(nil, n, now, n%endpoints)
	}
	urls := make([]string, endpoints)
	for i := range urls {
		urls[i] = rec.url(i)
	}
	client := rawClient(b.p.concurrency)
	defer client.CloseIdleConnections()

	r.PeakRSSPerScenario = resetPeakRSS()
	r.GoroutinesBefore = runtime.NumGoroutine()
	runCtx, cancel := context.WithTimeout(ctx, b.p.rawDuration)
	defer cancel()
	var errs atomic.Int64
	var wg sync.WaitGroup
	cpu0, t0, m0 := cpuTime(), time.Now(), machineCPU()
	for g := range b.p.concurrency {
		wg.Go(func() {
			for i := g; runCtx.Err() == nil; i += b.p.concurrency {
				if err := post(runCtx, client, urls[i%endpoints], payloads[i%len(payloads)]); err != nil && runCtx.Err() == nil {
					errs.Add(1)
				}
			}
		})
	}
	wg.Wait()
	elapsed, cpu := time.Since(t0), cpuTime()-cpu0
	r.setOther(m0, cpu, elapsed)
	r.Delivered = x.requests.Load()
	r.Errors = errs.Load()
	r.BadRequests = x.bad.Load()
	r.setRate(elapsed, cpu)
	r.PeakRSSMB = peakMB()
	client.CloseIdleConnections()
	rec.close()
	r.GoroutinesAfter = settledGoroutines()
	b.say("raw: %d requests in %.2fs = %.0f/s", r.Delivered, r.Seconds, r.PerSecond)
	return r, ctx.Err()
}

// startProfile starts the CPU profile if scenario is the one to profile; the
// returned function stops it (and writes the heap profile, if one is asked
// for) and may be called more than once.
func (b *bench) startProfile(scenario string) (stop func(), err error) {
	if b.profile != scenario {
		return func() {}, nil
	}
	if b.cpuprofile == "" {
		return sync.OnceFunc(func() { b.writeHeapProfile(scenario) }), nil
	}
	f, err := os.Create(b.cpuprofile)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, err
	}
	return sync.OnceFunc(func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			b.say("cpu profile: %v", err)
		}
		b.say("%s: CPU profile written to %s", scenario, b.cpuprofile)
		b.writeHeapProfile(scenario)
	}), nil
}

func (b *bench) writeHeapProfile(scenario string) {
	if b.memprofile == "" {
		return
	}
	f, err := os.Create(b.memprofile)
	if err != nil {
		b.say("heap profile: %v", err)
		return
	}
	runtime.GC()
	err = pprof.Lookup("heap").WriteTo(f, 0)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		b.say("heap profile: %v", err)
		return
	}
	b.say("%s: heap profile written to %s", scenario, b.memprofile)
}

// setDelivered counts the deliveries at healthy endpoints and sets the rate
// over the window from t0 to the last of them when the run completed, to
// tEnd otherwise.
func (r *result) setDelivered(x *tally, t0, tEnd time.Time, cpu time.Duration) {
	var last time.Time
	r.Delivered, last = x.healthyDeliveries()
	window := tEnd.Sub(t0)
	if r.Complete && !last.IsZero() {
		window = last.Sub(t0)
	}
	r.setRate(window, cpu)
}

func (r *result) setRate(window, cpu time.Duration) {
	r.Seconds = round(window.Seconds(), 3)
	if window > 0 {
		r.PerSecond = round(float64(r.Delivered)/window.Seconds(), 1)
		r.CPUPercentOneCore = round(100*cpu.Seconds()/window.Seconds(), 2)
	}
	r.CPUSeconds = round(cpu.Seconds(), 3)
	if r.Delivered > 0 {
		r.CPUSecondsPer1000 = round(1000*cpu.Seconds()/float64(r.Delivered), 4)
	}
}

// setOther records what other processes used of the machine's CPUs over a
// window that started when machineCPU returned m0 and in which this process
// used cpu.
func (r *result) setOther(m0, cpu, window time.Duration) {
	if m0 == 0 || window <= 0 {
		return
	}
	other := machineCPU() - m0 - cpu
	r.OtherCPUPercent = round(max(0, 100*other.Seconds()/window.Seconds()), 1)
}

// runtimeStats records the Go runtime's view of memory and goroutines, to
// compare with the kernel's RSS.
func (r *result) runtimeStats() {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	r.GoHeapMB = round(float64(ms.HeapInuse)/1e6, 1)
	r.GoStackMB = round(float64(ms.StackInuse)/1e6, 1)
	m := memStatus()
	r.RSSAnonMB = round(float64(m["RssAnon"])/1e6, 1)
	r.RSSFileMB = round(float64(m["RssFile"])/1e6, 1)
	r.GoSysMB = round(float64(ms.Sys)/1e6, 1)
	r.Goroutines = runtime.NumGoroutine()
}

func peakMB() float64 {
	return round(float64(memStatus()["VmHWM"])/1e6, 1)
}

// throughputSpec describes a throughput scenario: events published as fast
// as the publisher can, concurrently with delivery, round-robin over the
// endpoints; the rate is measured at the healthy endpoints.
type throughputSpec struct {
	name, description string
	behave            []behaviour
	events            int
	maxInFlight       int
	bound             time.Duration
	extra             func(i int) string // per-endpoint YAML lines
	idle              time.Duration
	// configured is the number of endpoints in the config: the first
	// len(behave) get the traffic, the others none (each has its own event
	// type); 0 means len(behave).
	configured int
	// floor runs the JetStream-only floor instead of hookjet.
	floor bool
	// cluster runs hookjet, or the floor, on this outside cluster (R3).
	cluster *natscluster.Cluster
	// processes is how many hookjet processes run on cluster, each
	// connected to its own node (0: one).
	processes int
	// sync is nats.sync (the floor's server policy too); empty: always.
	sync string
	// logOff turns the delivery log off (test/bench/deliverylog.go).
	logOff bool
	// burst watches for stretches without a delivery and counts the dead
	// letters at the end (test/bench/burst.go).
	burst bool
	// keys gives each event an ordering key, k<n % keys>; failKeyFor makes
	// key k0's requests answer 500 for that long from the first of them
	// (test/bench/ordered.go).
	keys       int
	failKeyFor time.Duration
	// rate paces the publisher at this many events/s; 0: all at once.
	rate float64
}

// hookjetSpec renders s's endpoints for rec: endpoint i gets event type
// bench.e<i> and path /e/<i>; a refused endpoint a closed port.
func (s throughputSpec) hookjetSpec(b *bench, rec *receiver) (hookjetSpec, error) {
	spec := hookjetSpec{maxInFlight: s.maxInFlight, concurrency: b.p.concurrency, sync: s.sync, logOff: s.logOff}
	closed := ""
	if slices.Contains(s.behave, refused) {
		port, err := freeport.Port()
		if err != nil {
			return spec, err
		}
		closed = fmt.Sprintf("http://127.0.0.1:%d", port)
	}
	spec.endpoints = make([]endpointSpec, 0, max(s.configured, len(s.behave)))
	for i := range max(s.configured, len(s.behave)) {
		ep := endpointSpec{url: rec.url(i), event: eventType(i)}
		if i < len(s.behave) && s.behave[i] == refused {
			ep.url = closed + "/e/" + strconv.Itoa(i)
		}
		if s.extra != nil {
			ep.extra = s.extra(i)
		}
		spec.endpoints = append(spec.endpoints, ep)
	}
	return spec, nil
}

// start starts hookjet for s, or the floor, and notes the time the config
// took to parse.
func (b *bench) start(ctx context.Context, s throughputSpec, x *tally, rec *receiver, r *result) (*instance, error) {
	if s.cluster != nil {
		return b.startOnCluster(ctx, s, x, rec, r)
	}
	if s.floor {
		b.say("%s: starting the JetStream-only floor", s.name)
		return startFloor(ctx, x, false, b.logOut, s.sync)
	}
	spec, err := s.hookjetSpec(b, rec)
	if err != nil {
		return nil, err
	}
	b.say("%s: starting hookjet with %d endpoints", s.name, len(spec.endpoints))
	h, err := startHookjet(ctx, spec, b.logOut)
	if h != nil {
		r.ConfigSeconds = round(h.parse.Seconds(), 3)
	}
	return h, err
}

func (b *bench) throughput(ctx context.Context, s throughputSpec) (*result, error) {
	e := len(s.behave)
	r := &result{Name: s.name, Description: s.description, Endpoints: e, Events: s.events}
	x := newTally(s.behave, s.events, !s.floor)
	x.setKeys(s.keys, s.failKeyFor)
	rec, err := newReceiver(b.key, x)
	if err != nil {
		return nil, err
	}
	defer rec.close()
	r.PeakRSSPerScenario = resetPeakRSS()
	r.GoroutinesBefore = runtime.NumGoroutine()
	h, err := b.start(ctx, s, x, rec, r)
	if err != nil {
		return nil, err
	}
	r.Endpoints = max(s.configured, e)
	stopped := false
	defer func() {
		if !stopped {
			h.stop()
		}
	}()
	r.StartupSeconds = round(h.startup.Seconds(), 3)
	// The profile covers the idle window too, if there is one.
	stopProfile, err := b.startProfile(s.name)
	if err != nil {
		return nil, err
	}
	defer stopProfile()
	if s.idle > 0 {
		// A first start stores the file's endpoints for other processes in
		// the background (dispatch/sources.ShareConfigEndpoints): that is
		// start-up work, and idle begins once it is done.
		if !s.floor && s.cluster == nil {
			t0 := time.Now()
			if err := waitConfigShared(ctx, h.js, max(s.configured, e), 120*time.Second); err != nil {
				r.Notes = append(r.Notes, err.Error())
			}
			r.SharedSeconds = round(time.Since(t0).Seconds(), 2)
			if max(s.configured, e) >= bulkShared {
				time.Sleep(bulkSettle)
			}
		}
		r.IdleCPUPercent = idleCPU(ctx, s.idle)
		r.IdleRSSMB = round(float64(memStatus()["VmRSS"])/1e6, 1)
	}

	pub := newPublisher(h.js, e)
	pubCtx, stopPub := context.WithCancel(ctx)
	defer stopPub()
	cpu0, t0, m0 := cpuTime(), time.Now(), machineCPU()
	stopGaps := make(chan struct{})
	var gaps <-chan burstStats
	if s.burst {
		gaps = watchGaps(x, h.pubAcked.Load, stopGaps, b.gapDumper(ctx, s.name, h))
	}
	keyed := b.watchKeyed(ctx, s, h, pub) // test/bench/ordered.go
	pubDone := pub.publishAll(pubCtx, s.events, s.rate, t0)
	r.Complete = x.wait(ctx, t0.Add(s.bound))
	cpu, tEnd := cpuTime()-cpu0, time.Now()
	close(stopGaps)
	r.Ordering = keyed.finish(ctx, x, t0)
	if gaps != nil {
		st := <-gaps
		r.Burst = &st
		n, err := h.deadLetters(ctx)
		if err != nil {
			r.Notes = append(r.Notes, "dead letters: "+err.Error())
		}
		r.Burst.DeadLetters = n
	}
	r.setOther(m0, cpu, tEnd.Sub(t0))
	stopProfile()
	stopPub()
	if err := <-pubDone; err != nil && r.Complete {
		r.Notes = append(r.Notes, err.Error())
	}
	flushCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	if err := pub.flush(flushCtx); err != nil {
		r.Notes = append(r.Notes, err.Error())
	}
	cancel()
	if last := h.lastAck.Load(); last > 0 && h.pubAcked.Load() > 0 {
		r.PublishPerSecond = round(float64(h.pubAcked.Load())/time.Unix(0, last).Sub(t0).Seconds(), 1)
	}

	r.setDelivered(x, t0, tEnd, cpu)
	if len(h.others) > 0 {
		r.ProcessDeliveries = processDeliveries(ctx, h)
	}
	if h.srv != nil {
		r.Parked = parked(deferrals(ctx, "http://"+h.srv.AdminAddr(), func(int) bool { return true }))
	}
	r.HealthyEndpoints = countHealthy(s.behave)
	if e == 10 && r.HealthyEndpoints == 10 {
		r.Healthy9PerSecond = healthySubsetRate(x, 1, 10, t0)
	}
	if e == 1000 && r.HealthyEndpoints == 1000 {
		r.Healthy900PerSecond = rateWhere(x, t0, func(i int) bool { return i%10 != 0 })
	}
	r.Latency = ptr(summarise(x.healthyLatencies()))
	r.PeakRSSMB = peakMB()
	r.runtimeStats()
	r.collect(x, h)
	if !r.Complete {
		r.Notes = append(r.Notes, fmt.Sprintf("time bound %s reached: %d of %d events for healthy endpoints delivered; rate is over the bound", s.bound, r.Delivered, x.healthyExpected()))
	}
	shutdown := h.stop()
	stopped = true
	r.ShutdownSeconds = round(shutdown.Seconds(), 3)
	rec.close()
	r.GoroutinesAfter = settledGoroutines()
	r.collectLogs(h)
	b.say("%s: %d deliveries in %.2fs = %.0f/s (complete=%v), startup %.2fs, peak RSS %.0f MB, CPU %.3fs per 1000",
		s.name, r.Delivered, r.Seconds, r.PerSecond, r.Complete, r.StartupSeconds, r.PeakRSSMB, r.CPUSecondsPer1000)
	return r, ctx.Err()
}

// healthySubsetRate is the rate of endpoints [from, to) of a run where they
// all completed: their deliveries over the time their last one arrived.
func healthySubsetRate(x *tally, from, to int, t0 time.Time) float64 {
	var n, lastNs int64
	for i := from; i < to; i++ {
		n += x.perEP[i].Load()
		done := x.epDoneAt[i].Load()
		if done == 0 {
			return 0
		}
		lastNs = max(lastNs, done)
	}
	return round(float64(n)/time.Unix(0, lastNs).Sub(t0).Seconds(), 1)
}

// rateWhere is the rate of the endpoints keep selects, in a run where they
// all completed; 0 otherwise.
func rateWhere(x *tally, t0 time.Time, keep func(i int) bool) float64 {
	var n, lastNs int64
	for i := range x.behave {
		if !keep(i) {
			continue
		}
		done := x.epDoneAt[i].Load()
		if done == 0 {
			return 0
		}
		n += x.perEP[i].Load()
		lastNs = max(lastNs, done)
	}
	if lastNs == 0 {
		return 0
	}
	return round(float64(n)/time.Unix(0, lastNs).Sub(t0).Seconds(), 1)
}

func countHealthy(bs []behaviour) int {
	n := 0
	for _, b := range bs {
		if b == healthy {
			n++
		}
	}
	return n
}

func ptr[T any](v T) *T { return &v }

// idleCPU measures the process's CPU share of one core while nothing is
// published.
func idleCPU(ctx context.Context, d time.Duration) float64 {
	c0, t0 := cpuTime(), time.Now()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
	return round(100*(cpuTime()-c0).Seconds()/time.Since(t0).Seconds(), 2)
}

// settledGoroutines is the goroutine count once goroutines that are just
// finishing have had a moment to exit.
func settledGoroutines() int {
	n := runtime.NumGoroutine()
	for range 20 {
		time.Sleep(50 * time.Millisecond)
		m := runtime.NumGoroutine()
		if m >= n {
			return m
		}
		n = m
	}
	return n
}

func (r *result) collect(x *tally, h *instance) {
	r.Duplicates = x.duplicates.Load()
	r.BadRequests = x.bad.Load()
	r.DeadRequests = x.deadRequests.Load()
	r.SignaturesVerify = x.sigChecked.Load()
	r.SignaturesBad = x.sigBad.Load()
	r.PublishFailed = h.pubFailed.Load()
}

func (r *result) collectLogs(h *instance) {
	r.HookjetWarnings, r.HookjetErrors, r.HookjetLog = h.logs.summary()
}

// pacedSpec describes a run at a fixed offered rate to healthy endpoints.
type pacedSpec struct {
	name, description string
	endpoints         int
	rate              float64
	duration          time.Duration
	idle              time.Duration
}

func (b *bench) paced(ctx context.Context, s pacedSpec) (*result, error) {
	events := int(s.rate * s.duration.Seconds())
	r := &result{Name: s.name, Description: s.description, Endpoints: s.endpoints, Events: events, OfferedRate: s.rate}
	x := newTally(allHealthy(s.endpoints), events, true)
	rec, err := newReceiver(b.key, x)
	if err != nil {
		return nil, err
	}
	defer rec.close()
	var h *instance
	spec := hookjetSpec{maxInFlight: b.p.maxInFlight, concurrency: b.p.concurrency}
	for i := range s.endpoints {
		spec.endpoints = append(spec.endpoints, endpointSpec{url: rec.url(i), event: eventType(i)})
	}
	r.PeakRSSPerScenario = resetPeakRSS()
	r.GoroutinesBefore = runtime.NumGoroutine()
	b.say("%s: starting hookjet with %d endpoints; %.0f events/s for %s", s.name, s.endpoints, s.rate, s.duration)
	h, err = startHookjet(ctx, spec, b.logOut)
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
	if s.idle > 0 {
		r.IdleCPUPercent = idleCPU(ctx, s.idle)
	}
	pub := newPublisher(h.js, s.endpoints)
	stopProfile, err := b.startProfile(s.name)
	if err != nil {
		return nil, err
	}
	defer stopProfile()
	cpu0, t0, m0 := cpuTime(), time.Now(), machineCPU()
	pubErr := pace(ctx, pub, events, s.rate, t0)
	pubEnd := time.Now()
	if pubErr != nil {
		r.Notes = append(r.Notes, "publish: "+pubErr.Error())
	}
	r.AchievedRate = round(float64(events)/pubEnd.Sub(t0).Seconds(), 1)
	r.Complete = x.wait(ctx, pubEnd.Add(b.p.drainAfterPacing))
	cpu, tEnd := cpuTime()-cpu0, time.Now()
	r.setOther(m0, cpu, tEnd.Sub(t0))
	stopProfile()
	r.setDelivered(x, t0, tEnd, cpu)
	if len(h.others) > 0 {
		r.ProcessDeliveries = processDeliveries(ctx, h)
	}
	r.Latency = ptr(summarise(x.healthyLatencies()))
	r.PeakRSSMB = peakMB()
	r.runtimeStats()
	flushCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	if err := pub.flush(flushCtx); err != nil {
		r.Notes = append(r.Notes, err.Error())
	}
	cancel()
	r.collect(x, h)
	if !r.Complete {
		r.Notes = append(r.Notes, fmt.Sprintf("%d of %d events delivered within %s after publishing ended", r.Delivered, events, b.p.drainAfterPacing))
	}
	shutdown := h.stop()
	stopped = true
	r.ShutdownSeconds = round(shutdown.Seconds(), 3)
	rec.close()
	r.GoroutinesAfter = settledGoroutines()
	r.collectLogs(h)
	b.say("%s: offered %.0f/s achieved %.0f/s; p50 %.2fms p99 %.2fms max %.2fms; CPU %.2f%% of one core",
		s.name, s.rate, r.AchievedRate, r.Latency.P50, r.Latency.P99, r.Latency.Max, r.CPUPercentOneCore)
	return r, ctx.Err()
}

// pace publishes events events at rate, the first at t0, and returns once
// the last one is sent (its PubAck may still be on the way).
func pace(ctx context.Context, pub *publisher, events int, rate float64, t0 time.Time) error {
	interval := time.Duration(float64(time.Second) / rate)
	for n := 0; n < events && ctx.Err() == nil; {
		due := min(events, int(time.Since(t0)/interval)+1)
		for ; n < due; n++ {
			if err := pub.publish(n); err != nil {
				return err
			}
		}
		if n < events {
			time.Sleep(time.Until(t0.Add(time.Duration(n) * interval)))
		}
	}
	return ctx.Err()
}
