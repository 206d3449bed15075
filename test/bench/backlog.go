package main

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"time"

	hjs "github.com/hookjet/hookjet/jetstream"
)

// backlog measures how fast an endpoint that comes back drains what waited
// for it: endpoint e0 is disabled through the admin API, n events for it are
// published and parked as tasks in HOOKJET_TASKS (the fan-out acks them and
// keeps no ack slot), then e0 is enabled and its drain delivers them. The
// rate is n over the time from the enable to the last delivery.
func (b *bench) backlog(ctx context.Context, name string, n int) (*result, error) {
	behave := allHealthy(1)
	r := &result{Name: name, Endpoints: 1, Events: n,
		Description: fmt.Sprintf("1 endpoint disabled while %d events for it are parked as tasks, then enabled: drain rate, max_in_flight %d", n, b.p.maxInFlight)}
	x := newTally(behave, n, true)
	rec, err := newReceiver(b.key, x)
	if err != nil {
		return nil, err
	}
	defer rec.close()
	r.PeakRSSPerScenario = resetPeakRSS()
	r.GoroutinesBefore = runtime.NumGoroutine()
	b.say("%s: starting hookjet with 1 endpoint", name)
	h, err := startHookjet(ctx, hookjetSpec{maxInFlight: b.p.maxInFlight, concurrency: b.p.concurrency,
		endpoints: []endpointSpec{{url: rec.url(0), event: eventType(0)}}}, b.logOut)
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
	client := &http.Client{Timeout: 30 * time.Second}
	defer client.CloseIdleConnections()

	if err := send(ctx, client, http.MethodPost, base+"/api/v1/endpoints/e0/disable", "", http.StatusOK); err != nil {
		return nil, err
	}
	parkStart := time.Now()
	if err := b.park(ctx, h, n); err != nil {
		return nil, err
	}
	r.Notes = append(r.Notes, fmt.Sprintf("%d events published and parked as tasks in %.2fs", n, time.Since(parkStart).Seconds()))

	stopProfile, err := b.startProfile(name)
	if err != nil {
		return nil, err
	}
	defer stopProfile()
	cpu0, t0, m0 := cpuTime(), time.Now(), machineCPU()
	if err := send(ctx, client, http.MethodPost, base+"/api/v1/endpoints/e0/enable", "", http.StatusOK); err != nil {
		return nil, err
	}
	r.Complete = x.wait(ctx, t0.Add(b.p.bound1000))
	cpu, tEnd := cpuTime()-cpu0, time.Now()
	stopProfile()
	r.setOther(m0, cpu, tEnd.Sub(t0))
	r.setDelivered(x, t0, tEnd, cpu)
	r.HealthyEndpoints = 1
	r.PeakRSSMB = peakMB()
	r.runtimeStats()
	r.collect(x, h)
	if !r.Complete {
		r.Notes = append(r.Notes, fmt.Sprintf("time bound %s reached: %d of %d delivered", b.p.bound1000, r.Delivered, n))
	}
	r.ShutdownSeconds = round(h.stop().Seconds(), 3)
	stopped = true
	rec.close()
	r.GoroutinesAfter = settledGoroutines()
	r.collectLogs(h)
	b.say("%s: %d waiting tasks delivered in %.2fs after the enable = %.0f/s (complete=%v), CPU %.3fs per 1000",
		name, r.Delivered, r.Seconds, r.PerSecond, r.Complete, r.CPUSecondsPer1000)
	return r, ctx.Err()
}

// park publishes n events for e0 and waits until the fan-out has settled
// them all, each as a task on e0's subject.
func (b *bench) park(ctx context.Context, h *instance, n int) error {
	pub := newPublisher(h.js, 1)
	for i := range n {
		if err := pub.publish(i); err != nil {
			return fmt.Errorf("publish event %d: %w", i, err)
		}
	}
	flushCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := pub.flush(flushCtx); err != nil {
		return err
	}
	deadline := time.Now().Add(b.p.bound1000)
	for time.Now().Before(deadline) {
		st, err := h.js.Stream(ctx, hjs.TasksStream)
		if err != nil {
			return err
		}
		info, err := st.Info(ctx)
		if err != nil {
			return err
		}
		if info.State.Msgs >= uint64(n) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return fmt.Errorf("the %d events were not all parked as tasks within %s", n, b.p.bound1000)
}
