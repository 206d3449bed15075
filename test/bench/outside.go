package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"runtime"
	"time"

	"github.com/hookjet/hookjet/config"
)

// The outside process: for cost116 and the floor at 116 events/s, the
// publisher (and, for hookjet, the receiver) run in a second process, this
// same binary started with childEnv set, so that the measured process is
// hookjet with its embedded NATS server (or the floor) only.
const childEnv = "HOOKJET_BENCH_OUTSIDE"

// childSpec is what the outside process does, passed as JSON in childEnv.
type childSpec struct {
	URL       string        `json:"url"` // NATS
	Endpoints int           `json:"endpoints"`
	Events    int           `json:"events"`
	Rate      float64       `json:"rate"`
	Receive   bool          `json:"receive"` // serve the receiver on the listener passed as fd 3
	Drain     time.Duration `json:"drain"`   // how long to wait for deliveries once publishing ended
}

// childResult is the outside process's last line on stdout.
type childResult struct {
	Published  int          `json:"published"`
	Acked      int64        `json:"acked"`
	Failed     int64        `json:"failed"`
	Delivered  int64        `json:"delivered"`
	Duplicates int64        `json:"duplicates"`
	Bad        int64        `json:"bad"`
	Complete   bool         `json:"complete"`
	Latency    latencyStats `json:"latency"`
	CPUSeconds float64      `json:"cpu_seconds"` // between "started" and this line
	Err        string       `json:"err,omitempty"`
}

// runChild is the outside process: it publishes spec.Events events at
// spec.Rate, writes "started" when the first goes out and its childResult as
// JSON once every event is acked (and, receiving, delivered) or the time is
// up.
func runChild(ctx context.Context, specJSON string, stdout io.Writer) error {
	var spec childSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		return fmt.Errorf("%s: %w", childEnv, err)
	}
	key, err := config.DecodeSecret(secret)
	if err != nil {
		return err
	}
	var x *tally
	if spec.Receive {
		ln, err := net.FileListener(os.NewFile(3, "receiver"))
		if err != nil {
			return fmt.Errorf("receiver listener: %w", err)
		}
		x = newTally(allHealthy(spec.Endpoints), spec.Events, true)
		rec := newReceiverOn(ln, key, x)
		defer rec.close()
	}
	h := &instance{logs: newLogCounter(io.Discard, slog.LevelWarn)}
	if err := h.connectPublisher(spec.URL); err != nil {
		return err
	}
	defer h.nc.Close()
	pub := newPublisher(h.js, spec.Endpoints)
	fmt.Fprintln(stdout, "started")
	cpu0, t0 := cpuTime(), time.Now()
	var res childResult
	errs := []error{pace(ctx, pub, spec.Events, spec.Rate, t0)}
	res.Published = spec.Events
	flushCtx, cancel := context.WithTimeout(ctx, spec.Drain)
	errs = append(errs, pub.flush(flushCtx))
	cancel()
	res.Complete = true
	if x != nil {
		res.Complete = x.wait(ctx, time.Now().Add(spec.Drain))
		res.Delivered, _ = x.healthyDeliveries()
		res.Duplicates, res.Bad = x.duplicates.Load(), x.bad.Load()+x.sigBad.Load()
		res.Latency = summarise(x.healthyLatencies())
	}
	res.CPUSeconds = round((cpuTime() - cpu0).Seconds(), 3)
	res.Acked, res.Failed = h.pubAcked.Load(), h.pubFailed.Load()
	if err := errors.Join(errs...); err != nil {
		res.Err = err.Error()
	}
	return json.NewEncoder(stdout).Encode(res)
}

// outsideSpec describes a paced run with the publisher outside the measured
// process.
type outsideSpec struct {
	name, description string
	floor             bool // the JetStream-only floor instead of hookjet
	endpoints         int
	rate              float64
	duration, idle    time.Duration
	logOff            bool // the delivery log off (test/bench/deliverylog.go)
}

// child is the running outside process.
type child struct {
	cmd    *exec.Cmd
	lines  *bufio.Scanner
	stdout io.ReadCloser
}

// startChild starts the outside process; listener, if not nil, becomes its
// fd 3 (and is closed here).
func startChild(ctx context.Context, spec childSpec, listener *os.File, stderr io.Writer) (*child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	js, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, exe)
	cmd.Env = append(os.Environ(), childEnv+"="+string(js))
	cmd.Stderr = stderr
	if listener != nil {
		cmd.ExtraFiles = []*os.File{listener}
		defer func() { _ = listener.Close() }()
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("outside process: %w", err)
	}
	c := &child{cmd: cmd, stdout: out, lines: bufio.NewScanner(out)}
	c.lines.Buffer(make([]byte, 0, 64<<10), 1<<20)
	return c, nil
}

// next reads the child's next line.
func (c *child) next() (string, error) {
	if c.lines.Scan() {
		return c.lines.Text(), nil
	}
	if err := c.lines.Err(); err != nil {
		return "", err
	}
	return "", io.ErrUnexpectedEOF
}

// wait reaps the child.
func (c *child) wait() error {
	_, _ = io.Copy(io.Discard, c.stdout)
	return c.cmd.Wait()
}

// startOutsideTarget starts hookjet (endpoints pointing at a receiver
// listener handed to the outside process) or the floor for s.
func (b *bench) startOutsideTarget(ctx context.Context, s outsideSpec, x *tally) (h *instance, url string, ln *os.File, err error) {
	if s.floor {
		h, err = startFloor(ctx, x, true, b.logOut, "")
		if err != nil {
			return nil, "", nil, err
		}
		return h, h.ns.ClientURL(), nil, nil
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", nil, err
	}
	defer func() { _ = l.Close() }()
	if ln, err = l.(*net.TCPListener).File(); err != nil {
		return nil, "", nil, err
	}
	base := "http://" + l.Addr().String()
	spec := hookjetSpec{maxInFlight: b.p.maxInFlight, concurrency: b.p.concurrency, logOff: s.logOff}
	for i := range s.endpoints {
		spec.endpoints = append(spec.endpoints, endpointSpec{url: fmt.Sprintf("%s/e/%d", base, i), event: eventType(i)})
	}
	if h, err = startHookjet(ctx, spec, b.logOut); err != nil {
		_ = ln.Close()
		return nil, "", nil, err
	}
	return h, h.srv.NATSURL(), ln, nil
}

// outside runs s: the measured process is hookjet (or the floor) alone; the
// publisher, and hookjet's receiver, are in the outside process.
func (b *bench) outside(ctx context.Context, s outsideSpec) (*result, error) {
	events := int(s.rate * s.duration.Seconds())
	r := &result{Name: s.name, Description: s.description, Endpoints: s.endpoints, Events: events, OfferedRate: s.rate}
	x := newTally(allHealthy(s.endpoints), events, false) // the floor's consumer counts here
	r.PeakRSSPerScenario = resetPeakRSS()
	r.GoroutinesBefore = runtime.NumGoroutine()
	b.say("%s: starting; %.0f events/s for %s from an outside process", s.name, s.rate, s.duration)
	h, url, ln, err := b.startOutsideTarget(ctx, s, x)
	if err != nil {
		return nil, err
	}
	defer h.stop()
	r.StartupSeconds = round(h.startup.Seconds(), 3)
	if s.idle > 0 {
		r.IdleCPUPercent = idleCPU(ctx, s.idle)
	}
	spec := childSpec{URL: url, Endpoints: s.endpoints, Events: events, Rate: s.rate, Receive: !s.floor, Drain: b.p.drainAfterPacing}
	c, err := startChild(ctx, spec, ln, b.progress)
	if err != nil {
		return nil, err
	}
	defer func() { _ = c.wait() }()
	if line, err := c.next(); err != nil || line != "started" {
		return nil, fmt.Errorf("outside process: %q: %w", line, err)
	}
	stopProfile, err := b.startProfile(s.name)
	if err != nil {
		return nil, err
	}
	defer stopProfile()
	cpu0, t0, m0 := cpuTime(), time.Now(), machineCPU()
	line, err := c.next()
	if err != nil {
		return nil, fmt.Errorf("outside process: %w", err)
	}
	var cr childResult
	if err := json.Unmarshal([]byte(line), &cr); err != nil {
		return nil, fmt.Errorf("outside process said %q: %w", line, err)
	}
	b.settleOutside(ctx, r, s, x, &cr, t0)
	cpu, tEnd := cpuTime()-cpu0, time.Now()
	stopProfile()
	r.setOther(m0, cpu, tEnd.Sub(t0))
	r.setRate(tEnd.Sub(t0), cpu)
	r.OutsideCPUPercent = round(100*cr.CPUSeconds/tEnd.Sub(t0).Seconds(), 2)
	r.AchievedRate = round(float64(cr.Published)/s.duration.Seconds(), 1)
	r.PeakRSSMB = peakMB()
	r.runtimeStats()
	r.PublishFailed = cr.Failed
	if cr.Err != "" {
		r.Notes = append(r.Notes, "outside process: "+cr.Err)
	}
	r.collectLogs(h)
	b.say("%s: %d of %d delivered; CPU %.2f%% of one core (outside process %.2f%%)", s.name, r.Delivered, events, r.CPUPercentOneCore, r.OutsideCPUPercent)
	return r, ctx.Err()
}

// settleOutside fills in what arrived: at the outside receiver (hookjet) or
// at the floor's consumer, for which it waits up to the drain time.
func (b *bench) settleOutside(ctx context.Context, r *result, s outsideSpec, x *tally, cr *childResult, t0 time.Time) {
	if s.floor {
		r.Complete = x.wait(ctx, time.Now().Add(b.p.drainAfterPacing))
		r.Delivered, _ = x.healthyDeliveries()
		r.Duplicates, r.BadRequests = x.duplicates.Load(), x.bad.Load()
		r.Latency = ptr(summarise(x.healthyLatencies()))
	} else {
		r.Complete = cr.Complete
		r.Delivered, r.Duplicates, r.BadRequests = cr.Delivered, cr.Duplicates, cr.Bad
		r.Latency = &cr.Latency
	}
	if !r.Complete {
		r.Notes = append(r.Notes, fmt.Sprintf("%d of %d events delivered within %s after publishing ended (%s since the first)", r.Delivered, r.Events, b.p.drainAfterPacing, time.Since(t0).Round(time.Millisecond)))
	}
}
