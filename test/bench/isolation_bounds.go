package main

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"

	hjs "github.com/hookjet/hookjet/jetstream"
)

// logfull pushes several times streams.max_bytes through a small event log
// while a dead endpoint (connection refused) matches every event beside a
// healthy one: the log must be trimmed below the fan-out's ack floor so that
// no publish is refused, HOOKJET_TASKS must stay within
// streams.tasks_max_bytes (the rest of the dead endpoint's deliveries go to
// the DLQ as overflow), and every delivery the dead endpoint was owed must
// be pending or dead-lettered.
const (
	logMaxBytes   = 64 << 20
	logTasksBytes = 32 << 20
	logEventSize  = 16 << 10
	logRate       = 256.0 // events/s: 4 MiB/s, a tenth of max_bytes every 1.6 s
)

func (b *bench) logFull(ctx context.Context, sz isoSizes) (*result, error) {
	const name = "logfull"
	events := int(sz.logBytes / logEventSize)
	behave := []behaviour{refused, healthy}
	route := func(int) int { return 1 }
	r := &result{Name: name, Endpoints: 2, Events: events, OfferedRate: logRate,
		Isolation: &isolationStats{TasksMaxBytes: logTasksBytes, EventsMaxBytes: logMaxBytes, PushedBytes: int64(events) * logEventSize},
		Description: fmt.Sprintf("%d MiB in %d KiB events at %.0f/s through streams.max_bytes %d MiB (tasks_max_bytes %d MiB); e0 connection refused, matching every event; e1 healthy",
			sz.logBytes>>20, logEventSize>>10, logRate, logMaxBytes>>20, logTasksBytes>>20)}
	x := newRoutedTally(behave, events, true, route)
	rec, err := newReceiver(b.key, x)
	if err != nil {
		return nil, err
	}
	defer rec.close()
	spec, err := defaultWorkers(throughputSpec{behave: behave}).hookjetSpec(b, rec)
	if err != nil {
		return nil, err
	}
	spec = defaultSpec(spec)
	spec.endpoints[0].event = ">"
	spec.top = fmt.Sprintf("streams:\n  max_bytes: %d\n  tasks_max_bytes: %d\n", logMaxBytes, logTasksBytes)
	r.PeakRSSPerScenario = resetPeakRSS()
	r.GoroutinesBefore = runtime.NumGoroutine()
	b.say("%s: starting hookjet; %d events of %d KiB at %.0f/s", name, events, logEventSize>>10, logRate)
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
	w := watchStreams(ctx, h.js, 100*time.Millisecond)
	defer w.stop()
	pub := newPublisher(h.js, 2)
	pub.route, pub.pad = route, logEventSize-payloadSize
	cpu0, t0, m0 := cpuTime(), time.Now(), machineCPU()
	if err := pace(ctx, pub, events, logRate, t0); err != nil {
		r.Notes = append(r.Notes, "publish: "+err.Error())
	}
	pubEnd := time.Now()
	r.AchievedRate = round(float64(events)/pubEnd.Sub(t0).Seconds(), 1)
	flushCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	if err := pub.flush(flushCtx); err != nil {
		r.Notes = append(r.Notes, err.Error())
	}
	cancel()
	r.Complete = waitEndpoints(ctx, x, pubEnd.Add(30*time.Second), func(i int) bool { return i == 1 })
	cpu, tEnd := cpuTime()-cpu0, time.Now()
	r.setOther(m0, cpu, tEnd.Sub(t0))
	r.setMeasured(x, func(i int) bool { return i == 1 }, t0, tEnd, cpu)
	r.Latency = ptr(summarise(latenciesWhere(x, func(i int) bool { return i == 1 })))
	r.Isolation.Owed = h.pubAcked.Load()
	account(ctx, h.js, r.Isolation, "e0", time.Minute)
	r.Isolation.Deferrals = deferrals(ctx, "http://"+h.srv.AdminAddr(), func(i int) bool { return i == 1 })
	if _, r.Isolation.HealthyDeadLetters, _, err = deadAccount(ctx, h.js, "e1"); err != nil {
		r.Notes = append(r.Notes, "the healthy endpoint's dead letters: "+err.Error())
	}
	if !r.Complete {
		r.Notes = append(r.Notes, fmt.Sprintf("the healthy endpoint got %d of %d events within 30 s after publishing ended%s", r.Delivered, events, missing(x, func(i int) bool { return i == 1 })))
	}
	w.stop()
	r.Isolation.TasksPeakBytes, r.Isolation.EventsPeakBytes = w.tasksPeak.Load(), w.eventsPeak.Load()
	r.Isolation.LogOldest = logOldest(ctx, "http://"+h.srv.AdminAddr())
	r.PeakRSSMB = peakMB()
	r.runtimeStats()
	r.collect(x, h)
	r.ShutdownSeconds = round(h.stop().Seconds(), 3)
	stopped = true
	rec.close()
	r.GoroutinesAfter = settledGoroutines()
	r.collectLogs(h)
	st := r.Isolation
	b.say("%s: %d refused publishes; e1 (healthy) %d of %d delivered, %d dead-lettered; e0 owed %d, pending %d + dead letters %d (settled=%v); HOOKJET_TASKS peak %.1f MiB of %d MiB; HOOKJET_EVENTS peak %.1f MiB of %d MiB",
		name, r.PublishFailed, r.Delivered, events, st.HealthyDeadLetters, st.Owed, st.Pending, st.DeadLetters, st.Settled, float64(st.TasksPeakBytes)/(1<<20), logTasksBytes>>20, float64(st.EventsPeakBytes)/(1<<20), logMaxBytes>>20)
	return r, ctx.Err()
}

// account waits until the fan-out has settled every event and endpoint ep's
// pending tasks (parked and scheduled) plus its dead letters equal what it
// was owed at two readings in a row, or bound passes; it records the last
// reading.
func account(ctx context.Context, js natsjs.JetStream, st *isolationStats, ep string, bound time.Duration) {
	deadline := time.Now().Add(bound)
	equal := 0
	for {
		pending, dlq, settled, err := deadAccount(ctx, js, ep)
		if err == nil {
			st.Pending, st.DeadLetters = pending, dlq
			if settled && pending+dlq == st.Owed {
				equal++
			} else {
				equal = 0
			}
			if equal == 2 {
				st.Settled = true
				return
			}
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return
		}
		time.Sleep(time.Second)
	}
}

// deadAccount reads endpoint ep's pending tasks and dead letters, and
// whether the fan-out consumer has nothing left to deliver or settle.
func deadAccount(ctx context.Context, js natsjs.JetStream, ep string) (pending, dlq int64, settled bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	count := func(stream, filter string) (int64, error) {
		s, err := js.Stream(ctx, stream)
		if err != nil {
			return 0, err
		}
		info, err := s.Info(ctx, natsjs.WithSubjectFilter(filter))
		if err != nil {
			return 0, err
		}
		var n int64
		for _, c := range info.State.Subjects {
			n += int64(c)
		}
		return n, nil
	}
	parked, err := count(hjs.TasksStream, hjs.TasksPrefix+ep)
	if err != nil {
		return 0, 0, false, err
	}
	sched, err := count(hjs.TasksStream, hjs.SchedPrefix+ep+".>")
	if err != nil {
		return 0, 0, false, err
	}
	if dlq, err = count(hjs.DLQStream, hjs.DLQPrefix+ep); err != nil {
		return 0, 0, false, err
	}
	c, err := js.Consumer(ctx, hjs.EventsStream, hjs.FanoutConsumer)
	if err != nil {
		return 0, 0, false, err
	}
	ci := c.CachedInfo()
	return parked + sched, dlq, ci.NumPending == 0 && ci.NumAckPending == 0, nil
}

// logOldest reads log_oldest from the summary; empty if it is not there.
func logOldest(ctx context.Context, base string) string {
	var s struct {
		LogOldest string `json:"log_oldest"`
	}
	client := &http.Client{Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()
	if err := getJSON(ctx, client, base+"/api/v1/summary", &s); err != nil {
		return "summary: " + err.Error()
	}
	return s.LogOldest
}

// streamWatch samples HOOKJET_TASKS (bytes, consumers) and HOOKJET_EVENTS
// (bytes) every interval and keeps the largest values; stop ends it and
// waits for its goroutine.
type streamWatch struct {
	tasksPeak, eventsPeak atomic.Int64
	consumersPeak         atomic.Int64
	stop                  func()
}

func watchStreams(ctx context.Context, js natsjs.JetStream, every time.Duration) *streamWatch {
	ctx, cancel := context.WithCancel(ctx)
	w := &streamWatch{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			w.sample(ctx, js)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	w.stop = sync.OnceFunc(func() { cancel(); <-done })
	return w
}

func (w *streamWatch) sample(ctx context.Context, js natsjs.JetStream) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if s, err := js.Stream(ctx, hjs.TasksStream); err == nil {
		st := s.CachedInfo().State
		raise(&w.tasksPeak, int64(st.Bytes))
		raise(&w.consumersPeak, int64(st.Consumers))
	}
	if s, err := js.Stream(ctx, hjs.EventsStream); err == nil {
		raise(&w.eventsPeak, int64(s.CachedInfo().State.Bytes))
	}
}

func raise(a *atomic.Int64, v int64) {
	for {
		old := a.Load()
		if v <= old || a.CompareAndSwap(old, v) {
			return
		}
	}
}

// consumers: 1,100 endpoints are disabled, get one event each (parked as a
// task), and are enabled, so that each drains one parked task; a while
// after the last delivery the consumers left on HOOKJET_TASKS are counted.
func (b *bench) consumers(ctx context.Context, sz isoSizes) (*result, error) {
	const name, n = "consumers1100", 1100
	r := &result{Name: name, Endpoints: n, Events: n, Isolation: &isolationStats{},
		Description: fmt.Sprintf("%d endpoints disabled, one event each parked, enabled: consumers on HOOKJET_TASKS %s after the last delivery", n, sz.consumerWait)}
	behave := allHealthy(n)
	x := newTally(behave, n, true)
	rec, err := newReceiver(b.key, x)
	if err != nil {
		return nil, err
	}
	defer rec.close()
	spec, err := defaultWorkers(throughputSpec{behave: behave}).hookjetSpec(b, rec)
	if err != nil {
		return nil, err
	}
	r.PeakRSSPerScenario = resetPeakRSS()
	r.GoroutinesBefore = runtime.NumGoroutine()
	b.say("%s: starting hookjet with %d endpoints", name, n)
	h, err := startHookjet(ctx, defaultSpec(spec), b.logOut)
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
	base := "http://" + h.srv.AdminAddr()
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: apiConcurrency}}
	defer client.CloseIdleConnections()
	if err := adminAll(ctx, client, base, n, "disable"); err != nil {
		return nil, err
	}
	if r.Isolation.Parked, err = parkAll(ctx, h, x, n, b.p.bound1000); err != nil {
		return nil, err
	}
	w := watchStreams(ctx, h.js, 100*time.Millisecond)
	defer w.stop()
	cpu0, t0, m0 := cpuTime(), time.Now(), machineCPU()
	if err := adminAll(ctx, client, base, n, "enable"); err != nil {
		return nil, err
	}
	r.Complete = x.wait(ctx, t0.Add(2*b.p.bound1000))
	cpu, tEnd := cpuTime()-cpu0, time.Now()
	r.setOther(m0, cpu, tEnd.Sub(t0))
	r.setDelivered(x, t0, tEnd, cpu)
	b.say("%s: %d of %d delivered %.1fs after the enables began; counting consumers in %s", name, r.Delivered, n, r.Seconds, sz.consumerWait)
	select {
	case <-ctx.Done():
	case <-time.After(sz.consumerWait):
	}
	w.stop()
	r.Isolation.ConsumersPeak = int(w.consumersPeak.Load())
	r.Isolation.Consumers = -1
	if s, err := h.js.Stream(ctx, hjs.TasksStream); err == nil {
		r.Isolation.Consumers = s.CachedInfo().State.Consumers
	} else {
		r.Notes = append(r.Notes, "counting consumers: "+err.Error())
	}
	r.PeakRSSMB = peakMB()
	r.runtimeStats()
	r.collect(x, h)
	r.ShutdownSeconds = round(h.stop().Seconds(), 3)
	stopped = true
	rec.close()
	r.GoroutinesAfter = settledGoroutines()
	r.collectLogs(h)
	b.say("%s: %d parked; %d consumers on HOOKJET_TASKS %s after, at most %d meanwhile",
		name, r.Isolation.Parked, r.Isolation.Consumers, sz.consumerWait, r.Isolation.ConsumersPeak)
	return r, ctx.Err()
}

// adminAll POSTs /api/v1/endpoints/e<i>/<action> for endpoints e0..e<n-1>,
// apiConcurrency at a time, and returns the first failure.
func adminAll(ctx context.Context, client *http.Client, base string, n int, action string) error {
	var next atomic.Int64
	var once sync.Once
	var first error
	var wg sync.WaitGroup
	for range apiConcurrency {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n && ctx.Err() == nil; i = int(next.Add(1) - 1) {
				url := fmt.Sprintf("%s/api/v1/endpoints/e%d/%s", base, i, action)
				if err := send(ctx, client, http.MethodPost, url, "", http.StatusOK); err != nil {
					once.Do(func() { first = err })
				}
			}
		})
	}
	wg.Wait()
	return first
}

// parkAll publishes one event for each of n endpoints and waits until every
// one is parked in HOOKJET_TASKS or delivered (an endpoint whose disable the
// engine had not applied yet); it returns how many were parked.
func parkAll(ctx context.Context, h *instance, x *tally, n int, bound time.Duration) (int64, error) {
	pub := newPublisher(h.js, n)
	for i := range n {
		if err := pub.publish(i); err != nil {
			return 0, fmt.Errorf("publish event %d: %w", i, err)
		}
	}
	flushCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := pub.flush(flushCtx); err != nil {
		return 0, err
	}
	deadline := time.Now().Add(bound)
	for ctx.Err() == nil && time.Now().Before(deadline) {
		s, err := h.js.Stream(ctx, hjs.TasksStream)
		if err != nil {
			return 0, err
		}
		parked := int64(s.CachedInfo().State.Msgs)
		if parked+x.unique.Load() >= int64(n) {
			return parked, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return 0, fmt.Errorf("the %d events were not all parked or delivered within %s", n, bound)
}
