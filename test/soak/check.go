package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"
)

// matches reports whether a NATS-style pattern ("order.*", "invoice.>",
// ">") matches an event type, as hookjet's endpoint patterns do.
func matches(pattern, typ string) bool {
	p, t := strings.Split(pattern, "."), strings.Split(typ, ".")
	for i, tok := range p {
		if tok == ">" {
			return len(t) > i
		}
		if i >= len(t) || tok != "*" && tok != t[i] {
			return false
		}
	}
	return len(p) == len(t)
}

// owed returns every "endpoint id" pair hookjet owes for the acknowledged
// events.
func owed(events []ackedEvent, eps []endpoint) []string {
	var out []string
	for _, ev := range events {
		for _, ep := range eps {
			for _, p := range ep.patterns {
				if matches(p, ev.typ) {
					out = append(out, ep.id+" "+ev.id)
					break
				}
			}
		}
	}
	return out
}

// receiverLog is what the receiver's log says.
type receiverLog struct {
	delivered map[string]int // "endpoint id" → 2xx answers
	dupTimes  []dupAt        // every 2xx answer after the first, in log order
	failed    int            // 503s the script answered
	bad       int            // signatures that did not verify
}

// dupAt is a repeated delivery: its endpoint and when it arrived.
type dupAt struct {
	endpoint string
	at       time.Time
}

func readReceiverLog(path string) (receiverLog, error) {
	rl := receiverLog{delivered: map[string]int{}}
	f, err := os.Open(path)
	if err != nil {
		return rl, err
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 4 {
			return rl, fmt.Errorf("%s: malformed line %q", path, sc.Text())
		}
		switch fields[0] {
		case "ok":
			k := fields[1] + " " + fields[2]
			rl.delivered[k]++
			if rl.delivered[k] > 1 {
				ms, err := strconv.ParseInt(fields[3], 10, 64)
				if err != nil {
					return rl, fmt.Errorf("%s: malformed time in %q", path, sc.Text())
				}
				rl.dupTimes = append(rl.dupTimes, dupAt{endpoint: fields[1], at: time.UnixMilli(ms)})
			}
		case "fail":
			rl.failed++
		case "bad":
			rl.bad++
		}
	}
	return rl, sc.Err()
}

func readAcked(path string) ([]ackedEvent, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	var out []ackedEvent
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		id, typ, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			return nil, fmt.Errorf("%s: malformed line %q", path, sc.Text())
		}
		out = append(out, ackedEvent{id: id, typ: typ})
	}
	return out, sc.Err()
}

// readDLQ returns the reason of every dead letter in HOOKJET_DLQ, by
// "endpoint id".
func readDLQ(ctx context.Context, js natsjs.JetStream) (map[string]string, error) {
	out := map[string]string{}
	s, err := js.Stream(ctx, "HOOKJET_DLQ")
	if err != nil {
		return nil, fmt.Errorf("HOOKJET_DLQ: %w", err)
	}
	total := s.CachedInfo().State.Msgs
	if total == 0 {
		return out, nil
	}
	c, err := s.OrderedConsumer(ctx, natsjs.OrderedConsumerConfig{})
	if err != nil {
		return nil, err
	}
	for read := uint64(0); read < total; {
		batch, err := c.Fetch(500, natsjs.FetchMaxWait(2*time.Second))
		if err != nil {
			return nil, err
		}
		n := 0
		for m := range batch.Messages() {
			n++
			h := m.Headers()
			reason := h.Get("Hookjet-Reason")
			if reason == "" {
				reason = "(no reason)"
			}
			out[h.Get("Hookjet-Endpoint")+" "+h.Get("Hookjet-Event-Id")] = reason
		}
		if n == 0 {
			return nil, fmt.Errorf("HOOKJET_DLQ: read %d of %d dead letters: %w", read, total, batch.Error())
		}
		read += uint64(n)
	}
	return out, nil
}

// verdict is the checker's result.
type verdict struct {
	Owed, Delivered, DeadLettered, Lost int
	Duplicates                          int            // 2xx answers beyond the first for an owed delivery
	DupByEndpoint                       map[string]int // the same, per endpoint
	Unowed                              int            // deliveries of events the producer never saw acknowledged
	ByReason                            map[string]int
	LostSample                          []string // up to 10 lost "endpoint id" pairs
	Bound                               int      // the duplicates allowed per endpoint
}

// check compares what is owed with what arrived and what was dead-lettered.
// Every owed pair must have been delivered at least once or be in the DLQ
// with a reason; each endpoint's duplicates are counted against bound.
func check(owedPairs []string, rl receiverLog, dlq map[string]string, bound int) verdict {
	v := verdict{Owed: len(owedPairs), ByReason: map[string]int{}, DupByEndpoint: map[string]int{}, Bound: bound}
	want := make(map[string]bool, len(owedPairs))
	for _, k := range owedPairs {
		want[k] = true
		switch n := rl.delivered[k]; {
		case n > 0:
			v.Delivered++
			v.Duplicates += n - 1
			if n > 1 {
				v.DupByEndpoint[strings.Fields(k)[0]] += n - 1
			}
		case dlq[k] != "":
			v.DeadLettered++
			v.ByReason[dlq[k]]++
		default:
			v.Lost++
			if len(v.LostSample) < 10 {
				v.LostSample = append(v.LostSample, k)
			}
		}
	}
	for k := range rl.delivered {
		if !want[k] {
			v.Unowed++
		}
	}
	sort.Strings(v.LostSample)
	return v
}

// failures lists why a run fails: a loss, duplicates over the bound, a bad
// signature, a fault the system did not recover from.
func (v verdict) failures(rl receiverLog, problems []string) []string {
	var out []string
	if v.Lost > 0 {
		out = append(out, fmt.Sprintf("%d acknowledged deliveries lost (e.g. %s)", v.Lost, strings.Join(v.LostSample, ", ")))
	}
	eps := make([]string, 0, len(v.DupByEndpoint))
	for ep := range v.DupByEndpoint {
		eps = append(eps, ep)
	}
	sort.Strings(eps)
	for _, ep := range eps {
		if n := v.DupByEndpoint[ep]; n > v.Bound {
			out = append(out, fmt.Sprintf("endpoint %s: %d duplicates, over the bound of %d", ep, n, v.Bound))
		}
	}
	if rl.bad > 0 {
		out = append(out, fmt.Sprintf("%d requests with a signature that did not verify", rl.bad))
	}
	return append(out, problems...)
}

// faultWindow is a fault as injected: when it began.
type faultWindow struct {
	what  string
	began time.Time
}

// dupsAfter attributes each repeated delivery to the latest fault that had
// begun when it arrived (before the first fault: "no fault yet") and returns
// a line per fault that has any, with the count per endpoint, and the lines
// where one endpoint got more than perFault (0: none are flagged). It is a
// guide to which fault caused them: a redelivery comes up to AckWait after
// its cause, when the next fault may have begun.
func dupsAfter(dups []dupAt, faults []faultWindow, perFault int) (lines, over []string) {
	type key struct {
		fault    int
		endpoint string
	}
	n := map[key]int{}
	for _, d := range dups {
		i := sort.Search(len(faults), func(i int) bool { return faults[i].began.After(d.at) }) - 1
		n[key{i, d.endpoint}]++
	}
	for i := -1; i < len(faults); i++ {
		var parts []string
		excess := false
		for _, ep := range endpoints {
			if c := n[key{i, ep.id}]; c > 0 {
				parts = append(parts, fmt.Sprintf("%s %d", ep.id, c))
				excess = excess || perFault > 0 && c > perFault
			}
		}
		if len(parts) == 0 {
			continue
		}
		what := "no fault yet"
		if i >= 0 {
			what = faults[i].what
		}
		line := fmt.Sprintf("%s: %s", what, strings.Join(parts, ", "))
		lines = append(lines, line)
		if excess {
			over = append(over, fmt.Sprintf("duplicates after one fault over max_in_flight %d at an endpoint: %s", perFault, line))
		}
	}
	return lines, over
}
