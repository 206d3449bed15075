package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/hookjet/hookjet/internal/natscluster"
)

// The kinds of fault.
const (
	natsKill     = "nats-kill"     // kill -9 of a nats-server node, restarted after a while
	natsPause    = "nats-pause"    // SIGSTOP of a node, SIGCONT after a while
	hookjetKill  = "hookjet-kill"  // kill -9 of a hookjet process, restarted after a while
	hookjetPause = "hookjet-pause" // SIGSTOP of a hookjet process, SIGCONT after a while
	latency      = "latency"       // delay between one hookjet and every node
	partition    = "partition"     // nothing passes between one hookjet and one or every node
	powerCut     = "powercut"      // kill -9 of the node on the power-cut filesystem, which then forgets what it did not fsync
)

// allKinds are the kinds a schedule draws from by default (powercut only
// where a FUSE filesystem can be mounted).
var allKinds = []string{natsKill, natsPause, hookjetKill, hookjetPause, latency, partition, powerCut}

// powerCutNode is the node whose store is on the power-cut filesystem (n3).
const powerCutNode = 2

// fault is one scheduled fault.
type fault struct {
	At     time.Duration // after the load started
	Kind   string
	Target int           // node (nats-*) or hookjet process (the others)
	Node   int           // partition: the node cut off, -1 for all of them
	For    time.Duration // how long the fault lasts
	Delay  time.Duration // latency: added each way
}

func (f fault) String() string {
	var what string
	switch f.Kind {
	case natsKill, natsPause, powerCut:
		what = fmt.Sprintf("n%d", f.Target+1)
	case latency:
		what = fmt.Sprintf("hookjet%d <-> nats, +%s each way", f.Target+1, f.Delay)
	case partition:
		node := "all nodes"
		if f.Node >= 0 {
			node = fmt.Sprintf("n%d", f.Node+1)
		}
		what = fmt.Sprintf("hookjet%d <-/-> %s", f.Target+1, node)
	default:
		what = fmt.Sprintf("hookjet%d", f.Target+1)
	}
	return fmt.Sprintf("t+%-7s %-13s %s for %s", f.At.Round(100*time.Millisecond), f.Kind, what, f.For.Round(100*time.Millisecond))
}

// longPause is how long a long hookjet-pause lasts at least: past the
// fan-out's AckWait (30 s with the soak's 5 s endpoint timeout), so that
// JetStream hands the paused process's events to another one while it still
// holds them.
const longPause = 35 * time.Second

// plan draws n faults from kinds over duration, deterministically from
// seed: one at a time, each kind about equally often (every kind at least
// once when n >= len(kinds)), with gaps between them so that the system can
// recover before the next. In runs of 4 minutes or more the first
// hookjet-pause, and every third after it, outlasts the fan-out's AckWait.
func plan(seed uint64, duration time.Duration, n int, kinds []string, nodes, hookjets int) []fault {
	if n <= 0 || len(kinds) == 0 {
		return nil
	}
	rnd := rand.New(rand.NewPCG(seed, 0xfa17))
	var order []string
	for len(order) < n {
		order = append(order, kinds...)
	}
	order = order[:n]
	rnd.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	// Faults may take half the run; the other half is gaps.
	slot := duration / time.Duration(n+1)
	allowLong := duration >= 4*time.Minute
	between := func(lo, hi time.Duration) time.Duration {
		hi = max(lo, min(hi, slot/2))
		return lo + time.Duration(rnd.Int64N(int64(hi-lo)+1))
	}
	out := make([]fault, n)
	var busy time.Duration
	pauses := 0
	for i, kind := range order {
		f := fault{Kind: kind, Node: -1}
		switch kind {
		case natsKill:
			f.Target, f.For = rnd.IntN(nodes), between(time.Second, 6*time.Second)
		case natsPause:
			f.Target, f.For = rnd.IntN(nodes), between(time.Second, 8*time.Second)
		case powerCut:
			f.Target, f.For = min(powerCutNode, nodes-1), between(time.Second, 5*time.Second)
		case hookjetKill:
			f.Target, f.For = rnd.IntN(hookjets), between(200*time.Millisecond, 4*time.Second)
		case hookjetPause:
			f.Target, f.For = rnd.IntN(hookjets), between(time.Second, 10*time.Second)
			if allowLong && pauses%3 == 0 {
				f.For = longPause + time.Duration(rnd.Int64N(int64(10*time.Second)))
			}
			pauses++
		case latency:
			f.Target, f.For = rnd.IntN(hookjets), between(3*time.Second, 15*time.Second)
			f.Delay = time.Duration(20+rnd.IntN(480)) * time.Millisecond
		case partition:
			f.Target, f.For = rnd.IntN(hookjets), between(2*time.Second, 10*time.Second)
			if rnd.IntN(2) == 0 {
				f.Node = rnd.IntN(nodes)
			}
		}
		busy += f.For
		out[i] = f
	}
	// Spread the rest of the run over the n+1 gaps, each 70-100% of its
	// share: the last fault ends before the run does.
	gap := max(0, (duration-busy)/time.Duration(n+1))
	at := time.Duration(0)
	for i := range out {
		at += gap*7/10 + time.Duration(rnd.Int64N(int64(gap*3/10)+1))
		out[i].At = at
		at += out[i].For
	}
	return out
}

// parseKinds checks a comma-separated list of kinds.
func parseKinds(s string) ([]string, error) {
	var out []string
	for k := range strings.SplitSeq(s, ",") {
		k = strings.TrimSpace(k)
		if k == "" {
			continue
		}
		if !slices.Contains(allKinds, k) {
			return nil, fmt.Errorf("-kinds: unknown fault %q (have %s)", k, strings.Join(allKinds, ", "))
		}
		out = append(out, k)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("-kinds: no fault kinds")
	}
	return out, nil
}

// injector applies a schedule to the running system.
type injector struct {
	cluster  *natscluster.Cluster
	hookjets []*hookjetProc
	proxies  []*proxies
	out      io.Writer

	power    *powerFS // the power-cut filesystem of powerCutNode; nil without one
	injected map[string]int
	windows  []faultWindow // each fault as it began
	problems []string      // the system did not recover from a fault
}

// recoverTimeout bounds how long a node or a hookjet may take to be healthy
// again after a fault; past it the run fails as a hang.
const recoverTimeout = 90 * time.Second

// run injects the faults in order, each at its time (at once when the one
// before took longer), and waits after each one until every node and
// process is healthy again. It returns when the schedule is done or ctx ends;
// a fault in progress is always reverted.
func (in *injector) run(ctx context.Context, start time.Time, faults []fault) {
	in.injected = map[string]int{}
	for _, f := range faults {
		if !sleepCtx(ctx, time.Until(start.Add(f.At))) {
			return
		}
		fmt.Fprintf(in.out, "fault  %s (at t+%s)\n", f, time.Since(start).Round(100*time.Millisecond))
		in.windows = append(in.windows, faultWindow{what: f.String(), began: time.Now()})
		if err := in.apply(ctx, f); err != nil {
			in.problems = append(in.problems, fmt.Sprintf("%s: %v", f, err))
			fmt.Fprintf(in.out, "       %v\n", err)
		}
		in.injected[f.Kind]++
		if err := in.healthy(ctx); err != nil {
			in.problems = append(in.problems, fmt.Sprintf("after %s: %v", f, err))
			fmt.Fprintf(in.out, "       not recovered: %v\n", err)
		}
	}
}

// apply injects f, waits f.For and reverts it.
func (in *injector) apply(ctx context.Context, f fault) error {
	switch f.Kind {
	case natsKill:
		n := in.cluster.Nodes()[f.Target]
		if err := n.Kill(); err != nil {
			return err
		}
		sleepCtx(ctx, f.For)
		return n.Start(context.WithoutCancel(ctx), recoverTimeout)
	case powerCut:
		if in.power == nil {
			return fmt.Errorf("no power-cut filesystem")
		}
		n := in.cluster.Nodes()[f.Target]
		if err := n.Kill(); err != nil {
			return err
		}
		if err := in.power.cut(); err != nil {
			return err
		}
		sleepCtx(ctx, f.For)
		if err := in.power.mount(); err != nil {
			return err
		}
		return n.Start(context.WithoutCancel(ctx), recoverTimeout)
	case natsPause:
		n := in.cluster.Nodes()[f.Target]
		if err := n.Pause(); err != nil {
			return err
		}
		sleepCtx(ctx, f.For)
		return n.Resume()
	case hookjetKill:
		h := in.hookjets[f.Target]
		if err := h.kill(); err != nil {
			return err
		}
		sleepCtx(ctx, f.For)
		return h.start(context.WithoutCancel(ctx), recoverTimeout)
	case hookjetPause:
		h := in.hookjets[f.Target]
		if err := h.signal(syscall.SIGSTOP); err != nil {
			return err
		}
		sleepCtx(ctx, f.For)
		return h.signal(syscall.SIGCONT)
	case latency, partition:
		t := toxic{kind: "latency", attrs: fmt.Sprintf(`{"latency":%d,"jitter":%d}`, f.Delay.Milliseconds(), f.Delay.Milliseconds()/4)}
		if f.Kind == partition {
			// Data stops both ways and connections stay open: a silent
			// partition, not a reset.
			t = toxic{kind: "timeout", attrs: `{"timeout":0}`}
		}
		px := in.proxies[f.Target]
		err := px.add(t, f.Node)
		if err == nil {
			sleepCtx(ctx, f.For)
		}
		px.clear()
		return err
	}
	return fmt.Errorf("unknown fault kind %q", f.Kind)
}

// healthy waits until every node and every hookjet process is healthy.
func (in *injector) healthy(ctx context.Context) error {
	ctx = context.WithoutCancel(ctx)
	if err := in.cluster.WaitHealthy(ctx, recoverTimeout); err != nil {
		return err
	}
	for _, h := range in.hookjets {
		if err := h.waitReady(ctx, recoverTimeout); err != nil {
			return err
		}
	}
	return nil
}

// counts is "kind n, kind n" in a fixed order, and the total.
func counts(m map[string]int) (string, int) {
	keys := make([]string, 0, len(m))
	total := 0
	for k, n := range m {
		keys = append(keys, k)
		total += n
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", "), total
}

// sleepCtx sleeps for d unless ctx ends first; it reports whether it slept
// the whole time.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
