package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"

	hjs "github.com/hookjet/hookjet/jetstream"
)

// The burst scenarios: every event published at once (asynchronous
// publishes as fast as the publisher goes, not paced), with hookjet's
// default worker settings, in both sync modes. burst10 is 60,000 events
// round-robin over 10 healthy endpoints: its rate beside the raw ceiling of
// the same run, and the longest stretch without a delivery while events
// were still owed (a target: at most 1 s). burst1 is 300,000 events to one
// healthy endpoint, far past its max_backlog: every one delivered and none
// dead-lettered.

// burstStats is what the burst scenarios measure besides the rate.
type burstStats struct {
	// MaxGapSeconds is the longest time without a new delivery at the
	// receiver while some events the server had acknowledged were not
	// delivered (a publisher slowed by fsync is not hookjet's gap),
	// sampled every gapSample; Gaps counts the stretches over maxGap.
	MaxGapSeconds float64 `json:"max_gap_seconds"`
	Gaps          int     `json:"gaps_over_1s"`
	// DeadLetters is HOOKJET_DLQ's message count at the end.
	DeadLetters uint64 `json:"dead_letters"`
}

const (
	gapSample = 100 * time.Millisecond
	maxGap    = time.Second
)

// burstNames are the burst scenarios.
var burstNames = []string{"burst10", "burst10fast", "burst1", "burst1fast"}

func (b *bench) burstScenarios(ctx context.Context) map[string][]runFunc {
	events10, events1 := 60000, 300000
	bound10, bound1 := 3*time.Minute, 10*time.Minute
	if b.p.quick {
		events10, events1 = 10000, 30000
		bound10, bound1 = time.Minute, 2*time.Minute
	}
	run := func(name string, endpoints, events int, sync string, bound time.Duration) []runFunc {
		mode := "nats.sync always"
		if sync != "" {
			mode = "nats.sync " + sync
		}
		desc := fmt.Sprintf("%d events published at once, round-robin over %d healthy endpoint(s), default worker settings, %s", events, endpoints, mode)
		return []runFunc{func() (*result, error) {
			return b.throughput(ctx, defaultWorkers(throughputSpec{name: name, description: desc, behave: allHealthy(endpoints),
				events: events, bound: bound, sync: sync, burst: true}))
		}}
	}
	return map[string][]runFunc{
		"burst10":     run("burst10", 10, events10, "", bound10),
		"burst10fast": run("burst10fast", 10, events10, fastSync, bound10),
		"burst1":      run("burst1", 1, events1, "", bound1),
		"burst1fast":  run("burst1fast", 1, events1, fastSync, bound1),
	}
}

// gapDumpAt is how long a stretch without a delivery lasts before -gapdump
// writes what hookjet is doing.
const gapDumpAt = 700 * time.Millisecond

// watchGaps samples x's unique deliveries every gapSample until stop is
// closed or all arrived, counting a gap only while fewer were delivered than
// acked (the events the server acknowledged), and sends the stats it
// gathered. dump, when not nil, is called once per stretch that passes
// gapDumpAt, with the stretch's number.
func watchGaps(x *tally, acked func() int64, stop <-chan struct{}, dump func(n int)) <-chan burstStats {
	out := make(chan burstStats, 1)
	go func() {
		var st burstStats
		want := x.healthyExpected()
		last, lastAt := x.unique.Load(), time.Now()
		dumped, stretches := false, 0
		t := time.NewTicker(gapSample)
		defer t.Stop()
		for {
			select {
			case <-stop:
				out <- st
				return
			case <-t.C:
			}
			n, now := x.unique.Load(), time.Now()
			if n >= acked() {
				lastAt = now // nothing stored is waiting: no gap
			}
			if n != last {
				if gap := now.Sub(lastAt); gap > maxGap {
					st.Gaps++
				}
				last, lastAt = n, now
				dumped = false
			}
			if dump != nil && !dumped && now.Sub(lastAt) >= gapDumpAt {
				dumped = true
				stretches++
				dump(stretches)
			}
			st.MaxGapSeconds = max(st.MaxGapSeconds, round(now.Sub(lastAt).Seconds(), 1))
			if n >= want {
				out <- st
				return
			}
		}
	}()
	return out
}

// gapDumper returns what watchGaps calls during a stretch without a
// delivery when -gapdump names a directory (nil otherwise): it writes, on a
// goroutine of its own, the process's goroutines (hookjet runs in this
// process) and the state of the fan-out consumer and the streams it
// writes to, with how long each answer took.
func (b *bench) gapDumper(ctx context.Context, scenario string, h *instance) func(n int) {
	if b.gapDump == "" {
		return nil
	}
	if err := os.MkdirAll(b.gapDump, 0o755); err != nil {
		b.say("gapdump: %v", err)
		return nil
	}
	return func(n int) {
		base := filepath.Join(b.gapDump, fmt.Sprintf("%s-gap%02d", scenario, n))
		if f, err := os.Create(base + "-goroutines.txt"); err == nil {
			_ = pprof.Lookup("goroutine").WriteTo(f, 1)
			_ = f.Close()
		}
		go func() {
			var out strings.Builder
			fmt.Fprintf(&out, "at %s\n", time.Now().UTC().Format(time.RFC3339Nano))
			writeGapState(ctx, &out, h.js)
			if err := os.WriteFile(base+"-state.txt", []byte(out.String()), 0o644); err != nil {
				b.say("gapdump: %v", err)
			}
		}()
	}
}

// writeGapState writes the fan-out consumer's info and the sizes of the
// streams a fan-out writes to.
func writeGapState(ctx context.Context, w io.Writer, js natsjs.JetStream) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	t0 := time.Now()
	c, err := js.Consumer(ctx, hjs.EventsStream, hjs.FanoutConsumer)
	if err != nil {
		fmt.Fprintf(w, "consumer info: %v\n", err)
	} else {
		ci := c.CachedInfo()
		fmt.Fprintf(w, "consumer %s (answered in %s): num_pending %d num_ack_pending %d num_waiting %d num_redelivered %d delivered.stream %d ack_floor.stream %d\n",
			hjs.FanoutConsumer, time.Since(t0).Round(time.Millisecond), ci.NumPending, ci.NumAckPending, ci.NumWaiting, ci.NumRedelivered, ci.Delivered.Stream, ci.AckFloor.Stream)
	}
	for _, name := range []string{hjs.EventsStream, hjs.TasksStream, hjs.LogStream} {
		t0 := time.Now()
		st, err := js.Stream(ctx, name)
		if err != nil {
			fmt.Fprintf(w, "stream %s: %v\n", name, err)
			continue
		}
		s := st.CachedInfo().State
		fmt.Fprintf(w, "stream %s (answered in %s): msgs %d bytes %d last_seq %d\n", name, time.Since(t0).Round(time.Millisecond), s.Msgs, s.Bytes, s.LastSeq)
	}
}

// deadLetters counts HOOKJET_DLQ's messages.
func (h *instance) deadLetters(ctx context.Context) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	st, err := h.js.Stream(ctx, hjs.DLQStream)
	if err != nil {
		return 0, err
	}
	return st.CachedInfo().State.Msgs, nil
}

// burstTargets are the burst scenarios' targets.
func burstTargets(get func(string) *result) []target {
	raw := get("raw")
	var cs []check
	for _, name := range burstNames {
		r := get(name)
		c := check{name: name + ": longest stretch without a delivery while events were owed", goal: "<= 1 s", unit: "s", need: name}
		if r != nil && r.Burst != nil {
			c.value = r.Burst.MaxGapSeconds
			c.ok = ptr(r.Burst.MaxGapSeconds <= maxGap.Seconds() && r.Complete)
			c.detail = fmt.Sprintf("%d stretch(es) over 1 s; %d deliveries in %.1f s = %.0f/s", r.Burst.Gaps, r.Delivered, r.Seconds, r.PerSecond)
			if raw != nil && raw.PerSecond > 0 {
				c.detail += fmt.Sprintf(", %.1f%% of the raw ceiling (%.0f/s)", 100*r.PerSecond/raw.PerSecond, raw.PerSecond)
			}
		}
		cs = append(cs, c)
		d := check{name: name + ": every event delivered, none dead-lettered", goal: "0 dead letters", unit: "dead letters", need: name}
		if r != nil && r.Burst != nil {
			d.value = float64(r.Burst.DeadLetters)
			d.ok = ptr(r.Burst.DeadLetters == 0 && r.Complete && r.Delivered == int64(r.Events))
			d.detail = fmt.Sprintf("%d of %d delivered", r.Delivered, r.Events)
		}
		cs = append(cs, d)
	}
	ts := make([]target, len(cs))
	for i, c := range cs {
		ts[i] = c.target()
	}
	return ts
}
