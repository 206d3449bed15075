package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/internal/natscluster"
	"github.com/hookjet/hookjet/internal/powercut"
)

// soak is one run: what it started, to be stopped by stopAll.
type soak struct {
	o   options
	out io.Writer

	rec      *receiver
	cluster  *natscluster.Cluster
	proxies  []*proxies
	hookjets []*hookjetProc
	power    *powerFS // n3's store, when the run has power cuts
	nc       *nats.Conn
	js       natsjs.JetStream
	load     *load
}

// setUp starts the receiver, the cluster, the proxies and the hookjet
// processes, and connects the producer.
func (s *soak) setUp(ctx context.Context, stderr io.Writer) error {
	o := s.o
	if o.work == "" {
		dir, err := os.MkdirTemp("", "hookjet-soak-")
		if err != nil {
			return err
		}
		s.o.work = dir
	} else if err := os.MkdirAll(o.work, 0o755); err != nil {
		return err
	}
	fmt.Fprintf(s.out, "soak: seed %d; work dir %s\n", o.seed, s.o.work)
	fmt.Fprintf(s.out, "soak: reproduce with: go run ./test/soak %s\n", s.flagsLine())
	if _, err := os.Stat(o.hookjetBin); err != nil {
		return fmt.Errorf("-hookjet %s: %w (run make build)", o.hookjetBin, err)
	}
	if err := natscluster.EnsureBinary(ctx, ".", o.natsBin, stderr); err != nil {
		return err
	}
	if err := s.preparePowerCut(); err != nil {
		return err
	}
	var err error
	if s.rec, err = newReceiver(filepath.Join(s.o.work, "received.log"), []string{endpointSecret}, o.failRate, o.seed); err != nil {
		return err
	}
	copts := natscluster.Options{Binary: o.natsBin, Dir: filepath.Join(s.o.work, "nats"), Name: "soak", SyncInterval: o.sync}
	if slices.Contains(s.o.kinds, powerCut) {
		mountpoint := filepath.Join(copts.Dir, fmt.Sprintf("n%d", powerCutNode+1), "store")
		if s.power, err = newPowerFS(filepath.Join(copts.Dir, "n3-backing"), mountpoint); err != nil {
			return err
		}
		copts.StoreDir = func(i int) string {
			if i == powerCutNode {
				return mountpoint
			}
			return filepath.Join(copts.Dir, fmt.Sprintf("n%d", i+1), "store")
		}
	}
	if s.cluster, err = natscluster.Start(ctx, copts); err != nil {
		return err
	}
	var upstreams []string
	for _, n := range s.cluster.Nodes() {
		u, _ := url.Parse(n.URL())
		upstreams = append(upstreams, u.Host)
	}
	tp := newToxiproxy()
	for i := range o.hookjets {
		name := fmt.Sprintf("hookjet%d", i+1)
		px, err := newProxies(tp, name, upstreams)
		if err != nil {
			return err
		}
		s.proxies = append(s.proxies, px)
		h, err := newHookjetProc(name, o.hookjetBin, s.o.work, px.url(), s.rec, o.maxInFlight)
		if err != nil {
			return err
		}
		s.hookjets = append(s.hookjets, h)
		if err := h.start(ctx, recoverTimeout); err != nil {
			return err
		}
	}
	if s.nc, s.js, err = connectProducer(s.cluster.URL()); err != nil {
		return err
	}
	s.load, err = newLoad(s.js, fmt.Sprintf("soak%d", o.seed), filepath.Join(s.o.work, "acked.log"), o.rate)
	return err
}

// preparePowerCut leaves the power-cut fault out where no FUSE filesystem
// can be mounted, unless -kinds asked for it.
func (s *soak) preparePowerCut() error {
	if !slices.Contains(s.o.kinds, powerCut) {
		return nil
	}
	err := powercut.Available()
	if err == nil {
		fmt.Fprintf(s.out, "soak: n%d's store is on the power-cut filesystem\n", powerCutNode+1)
		return nil
	}
	if s.o.kindsSet {
		return fmt.Errorf("-kinds %s: %w", powerCut, err)
	}
	fmt.Fprintf(s.out, "soak: the power-cut fault is left out: %v\n", err)
	s.o.kinds = slices.DeleteFunc(slices.Clone(s.o.kinds), func(k string) bool { return k == powerCut })
	return nil
}

func (s *soak) flagsLine() string {
	o := s.o
	line := fmt.Sprintf("-seed %d -duration %s -faults %d -rate %g -hookjets %d -workers %d -kinds %s -fail-rate %g -max-in-flight %d",
		o.seed, o.duration, o.faults, o.rate, o.hookjets, o.workers, strings.Join(o.kinds, ","), o.failRate, o.maxInFlight)
	if o.sync != "" {
		line += " -nats-sync " + o.sync
	}
	if o.strict {
		line += " -strict"
	}
	return line
}

// campaign runs the load and the faults, waits for the deliveries, checks
// them and prints the summary.
func (s *soak) campaign(ctx context.Context) error {
	o := s.o
	faults := plan(o.seed, o.duration, o.faults, o.kinds, len(s.cluster.Nodes()), len(s.hookjets))
	fmt.Fprintf(s.out, "soak: %d faults scheduled over %s:\n", len(faults), o.duration)
	for _, f := range faults {
		fmt.Fprintf(s.out, "       %s\n", f)
	}
	in := &injector{cluster: s.cluster, hookjets: s.hookjets, proxies: s.proxies, power: s.power, out: s.out}
	start := time.Now()
	loadCtx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	// A publish being retried when the load stops gets 30 s more.
	drainCtx, stopDrain := context.WithCancel(ctx)
	defer stopDrain()
	loadDone := make(chan struct{})
	go func() {
		defer close(loadDone)
		s.load.run(loadCtx, drainCtx, o.workers)
	}()
	in.run(ctx, start, faults)
	sleepCtx(ctx, time.Until(start.Add(o.duration)))
	stopLoad()
	drainTimer := time.AfterFunc(30*time.Second, stopDrain)
	<-loadDone
	drainTimer.Stop()
	loadTime := time.Since(start)
	// A process that died on its own since the last fault fails the run.
	if err := in.healthy(ctx); err != nil {
		in.problems = append(in.problems, fmt.Sprintf("at the end of the load: %v", err))
	}
	if err := s.load.close(); err != nil {
		return err
	}
	fmt.Fprintf(s.out, "soak: load stopped after %s: %d events acknowledged; waiting up to %s for deliveries\n",
		loadTime.Round(time.Second), len(s.load.events()), o.quiet)
	owedPairs := owed(s.load.events(), endpoints)
	waited := s.quiet(ctx, owedPairs)
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("interrupted after %s: %w", time.Since(start).Round(time.Second), err)
	}
	if err := s.rec.flush(); err != nil {
		return err
	}
	return s.verdict(ctx, in, loadTime, waited)
}

// quiet waits until every owed delivery has arrived or is dead-lettered (or
// -quiet passes), then until no delivery has arrived for 5 s (at most 30 s
// more), so that late duplicates are counted. It returns how long it waited.
func (s *soak) quiet(ctx context.Context, owedPairs []string) time.Duration {
	start := time.Now()
	deadline := start.Add(s.o.quiet)
	for ctx.Err() == nil && time.Now().Before(deadline) {
		missing := s.rec.missing(owedPairs)
		if len(missing) == 0 {
			break
		}
		if len(missing) < 5000 {
			dlq, err := readDLQ(ctx, s.js)
			if err == nil && allIn(missing, dlq) {
				break
			}
		}
		sleepCtx(ctx, 2*time.Second)
	}
	settle := time.Now().Add(30 * time.Second)
	for ctx.Err() == nil && time.Now().Before(settle) {
		if _, last := s.rec.progress(); time.Since(last) >= 5*time.Second {
			break
		}
		sleepCtx(ctx, time.Second)
	}
	return time.Since(start)
}

func allIn(keys []string, m map[string]string) bool {
	for _, k := range keys {
		if m[k] == "" {
			return false
		}
	}
	return true
}

// verdict reads the logs and the DLQ, prints the summary and returns
// errFailed when the run failed.
func (s *soak) verdict(ctx context.Context, in *injector, loadTime, waited time.Duration) error {
	o := s.o
	acked, err := readAcked(filepath.Join(o.work, "acked.log"))
	if err != nil {
		return err
	}
	rl, err := readReceiverLog(filepath.Join(o.work, "received.log"))
	if err != nil {
		return err
	}
	dlq, err := readDLQ(ctx, s.js)
	if err != nil {
		return fmt.Errorf("read the DLQ: %w", err)
	}
	kinds, total := counts(in.injected)
	// The documented bound: a crash (or a pause or partition that outlasts
	// AckWait, which looks like one) redelivers at most max_in_flight
	// deliveries per endpoint; summed over the run's faults, per endpoint.
	bound := total * o.maxInFlight
	v := check(owed(acked, endpoints), rl, dlq, bound)
	fails := v.failures(rl, in.problems)
	w := s.out
	fmt.Fprintf(w, "\nsoak summary\n")
	fmt.Fprintf(w, "  seed                %d (go run ./test/soak %s)\n", o.seed, s.flagsLine())
	fmt.Fprintf(w, "  topology            3 nats-server processes (R3, sync %s), %d hookjet processes, %d endpoints\n", orDefault(o.sync), len(s.hookjets), len(endpoints))
	fmt.Fprintf(w, "  load                %s at %g events/s, then %s quiet\n", loadTime.Round(time.Second), o.rate, waited.Round(time.Second))
	fmt.Fprintf(w, "  faults injected     %d: %s\n", total, kinds)
	fmt.Fprintf(w, "  events acknowledged %d (publish retries %d, PubAcks flagged duplicate %d, abandoned unacknowledged %d)\n",
		len(acked), s.load.retries.Load(), s.load.duplicates.Load(), s.load.givenUp.Load())
	fmt.Fprintf(w, "  deliveries owed     %d (event, matching endpoint)\n", v.Owed)
	fmt.Fprintf(w, "  delivered           %d\n", v.Delivered)
	fmt.Fprintf(w, "  dead-lettered       %d %v\n", v.DeadLettered, v.ByReason)
	fmt.Fprintf(w, "  lost                %d\n", v.Lost)
	fmt.Fprintf(w, "  duplicates          %d %v (bound per endpoint %d = %d faults x max_in_flight %d)\n", v.Duplicates, v.DupByEndpoint, v.Bound, total, o.maxInFlight)
	perFault := 0
	if o.strict {
		perFault = o.maxInFlight
	}
	lines, over := dupsAfter(rl.dupTimes, in.windows, perFault)
	for _, line := range lines {
		fmt.Fprintf(w, "                      after %s\n", line)
	}
	fails = append(fails, over...)
	fmt.Fprintf(w, "  receiver            %d requests, %d answered 503 by the script, %d bad signatures, %d deliveries of unacknowledged events\n",
		s.rec.requests.Load(), rl.failed, rl.bad, v.Unowed)
	fmt.Fprintf(w, "  hookjet logs        %s\n", s.logStats())
	if len(fails) == 0 {
		fmt.Fprintf(w, "  result              PASS\n")
		return nil
	}
	fmt.Fprintf(w, "  result              FAIL\n")
	for _, f := range fails {
		fmt.Fprintf(w, "    - %s\n", f)
	}
	fmt.Fprintf(w, "  logs and data kept in %s\n", o.work)
	return errFailed
}

func orDefault(s string) string {
	if s == "" {
		return "default 2m"
	}
	return s
}

// logStats counts error lines and panics in the hookjet processes' logs.
func (s *soak) logStats() string {
	var parts []string
	for _, h := range s.hookjets {
		errs, panics := 0, 0
		if f, err := os.Open(h.logPath); err == nil {
			sc := bufio.NewScanner(f)
			sc.Buffer(make([]byte, 64<<10), 1<<20)
			for sc.Scan() {
				line := sc.Text()
				if strings.Contains(line, `"level":"ERROR"`) {
					errs++
				}
				if strings.HasPrefix(line, "panic:") || strings.HasPrefix(line, "fatal error:") {
					panics++
				}
			}
			_ = f.Close()
		}
		parts = append(parts, fmt.Sprintf("%s: %d errors, %d panics", h.name, errs, panics))
	}
	return strings.Join(parts, "; ")
}

// stopAll stops everything setUp started, in reverse order; it is safe after
// a partial set-up.
func (s *soak) stopAll() {
	for _, h := range s.hookjets {
		h.terminate(10 * time.Second)
	}
	if s.nc != nil {
		s.nc.Close()
	}
	for _, px := range s.proxies {
		px.stop()
	}
	if s.cluster != nil {
		s.cluster.Close()
	}
	if s.power != nil {
		if err := s.power.unmount(); err != nil {
			fmt.Fprintln(s.out, "soak: unmount the power-cut filesystem:", err)
		}
	}
	if s.rec != nil {
		if err := s.rec.close(); err != nil && !errors.Is(err, os.ErrClosed) {
			fmt.Fprintln(s.out, "soak: receiver log:", err)
		}
	}
}
