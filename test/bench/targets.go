package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// check is one target: ok is nil when a scenario it needs did not run.
type check struct {
	name, goal, unit, need string
	value                  float64
	ok                     *bool
	detail                 string
}

func (c check) target() target {
	t := target{Name: c.name, Goal: c.goal, Unit: c.unit}
	switch {
	case c.ok == nil:
		t.Status, t.Detail = "N/A", "needs "+c.need
	case *c.ok:
		t.Status, t.Value, t.Detail = "PASS", round(c.value, 2), c.detail
	default:
		t.Status, t.Value, t.Detail = "MISS", round(c.value, 2), c.detail
	}
	return t
}

// scaleTargets are the targets for endpoints at any scale and the
// creation target, from the best run of each scenario.
func scaleTargets(get func(string) *result) []target {
	h10, e1k, e10k, e100k := get("healthy10"), get("endpoints1000"), get("endpoints10000"), get("endpoints100000")
	cs := []check{
		ratioCheck("10,000 endpoints (1,000 active): delivery rate vs 10 endpoints", ">= 80%", 80, e10k, h10,
			"endpoints10000 and healthy10", func(r *result) float64 { return r.PerSecond }),
		ratioCheck("10,000 endpoints: publish rate vs 10 endpoints", ">= 90%", 90, e10k, h10,
			"endpoints10000 and healthy10", func(r *result) float64 { return r.PublishPerSecond }),
		ratioCheck("1,000 active endpoints, 10% dead: the 900 healthy ones vs the same 900 all healthy", ">= 90%", 90, get("dead1000"), e1k,
			"dead1000 and endpoints1000", func(r *result) float64 {
				if r.Name == "dead1000" {
					return r.PerSecond
				}
				return r.Healthy900PerSecond
			}),
	}
	cs = append(cs, idleChecks("100,000 endpoints", e100k, "endpoints100000", true)...)
	cs = append(cs, startupChecks(get)...)               // test/bench/startup.go
	cs = append(cs, historyChecks(get("history10m"))...) // test/bench/history.go
	cs = append(cs, eventListChecks(get("events1m"))...) // test/bench/events.go
	cs = append(cs, costChecks(get("cost116"), get("floor116"))...)
	api := get("apicreate10000")
	c := check{name: "10,000 endpoints created through the API, one request each", goal: "<= 60 s", unit: "s", need: "apicreate10000"}
	if api != nil {
		c.value, c.ok = api.APISeconds, ptr(api.APISeconds <= 60 && api.Complete)
		c.detail = fmt.Sprintf("%d created, %d failed, %d at a time; engine counted all after %.1f s", api.Delivered, api.Errors, apiConcurrency, api.AppliedSeconds)
	}
	cs = append(cs, c)
	cs = append(cs, idleChecks("10,000 API endpoints", api, "apicreate10000", false)...)
	ts := make([]target, len(cs))
	for i, c := range cs {
		ts[i] = c.target()
	}
	return ts
}

// ratioCheck is 100 * of(r) / of(base) against a minimum percentage.
func ratioCheck(name, goal string, minPct float64, r, base *result, need string, of func(*result) float64) check {
	c := check{name: name, goal: goal, unit: "%", need: need}
	if r == nil || base == nil || of(base) <= 0 {
		return c
	}
	c.value = 100 * of(r) / of(base)
	c.ok = ptr(c.value >= minPct && r.Complete)
	c.detail = fmt.Sprintf("%s %.0f/s vs %s %.0f/s", r.Name, of(r), base.Name, of(base))
	if !r.Complete {
		c.detail += " (incomplete within its time bound)"
	}
	return c
}

// idleChecks are the idle targets of a scale scenario: ready time (with
// ready), idle RSS and idle CPU.
func idleChecks(what string, r *result, need string, ready bool) []check {
	var cs []check
	if ready {
		c := check{name: what + ": ready (config parse + start)", goal: "<= 10 s", unit: "s", need: need}
		if r != nil {
			v := r.ConfigSeconds + r.StartupSeconds
			c.value, c.ok = v, ptr(v <= 10)
			c.detail = fmt.Sprintf("config %.2f s + start %.2f s", r.ConfigSeconds, r.StartupSeconds)
		}
		cs = append(cs, c)
	}
	rss := check{name: what + ": idle RSS (whole process)", goal: "<= 300 MB", unit: "MB", need: need}
	cpu := check{name: what + ": idle CPU", goal: "<= 1% of one core", unit: "% core", need: need}
	if r != nil {
		rss.value, rss.ok = r.IdleRSSMB, ptr(r.IdleRSSMB <= 300)
		rss.detail = "VmRSS at the end of the idle window; includes the harness's receiver and publisher"
		cpu.value, cpu.ok = r.IdleCPUPercent, ptr(r.IdleCPUPercent <= 1)
		cpu.detail = "no traffic, whole process"
		if r.SharedSeconds > 0 {
			shared := fmt.Sprintf("; after the file's endpoints were stored for other processes (%.1f s after start-up)", r.SharedSeconds)
			if r.Endpoints >= bulkShared {
				shared += fmt.Sprintf(" and the store's garbage was handed back (%s later)", bulkSettle)
			}
			rss.detail += shared
			cpu.detail += shared
		}
	}
	return append(cs, rss, cpu)
}

// costChecks are the 116 events/s targets: the share of one core and the
// ratio to the floor at the same rate.
func costChecks(c, floor *result) []check {
	abs := check{name: "116 events/s: hookjet + embedded NATS, publisher and receiver outside", goal: "<= 8% of one core", unit: "% core", need: "cost116"}
	rel := check{name: "116 events/s: hookjet vs the JetStream-only floor at the same rate", goal: "<= 1.3x", unit: "x", need: "cost116 and floor"}
	if c == nil {
		return []check{abs, rel}
	}
	abs.value, abs.ok = c.CPUPercentOneCore, ptr(c.CPUPercentOneCore <= 8 && c.Complete)
	abs.detail = fmt.Sprintf("outside process (publisher, receiver) %.2f%%; idle %.2f%%", c.OutsideCPUPercent, c.IdleCPUPercent)
	if floor != nil && floor.CPUPercentOneCore > 0 {
		rel.value = c.CPUPercentOneCore / floor.CPUPercentOneCore
		rel.ok = ptr(rel.value <= 1.3 && c.Complete)
		rel.detail = fmt.Sprintf("%.2f%% vs floor %.2f%% of one core", c.CPUPercentOneCore, floor.CPUPercentOneCore)
	}
	return []check{abs, rel}
}

// scaleExtras are the report lines of the fields the scale and outside
// scenarios fill in.
func scaleExtras(r *result) []string {
	var out []string
	if r.Healthy900PerSecond > 0 {
		out = append(out, fmt.Sprintf("the 900 endpoints dead1000 keeps healthy %.0f/s", r.Healthy900PerSecond))
	}
	if r.ConfigSeconds > 0 {
		out = append(out, fmt.Sprintf("config parse %.2fs", r.ConfigSeconds))
	}
	if r.StartupRSSMB > 0 {
		out = append(out, fmt.Sprintf("VmRSS at ready %.0f MB", r.StartupRSSMB))
	}
	if r.IdleRSSMB > 0 {
		out = append(out, fmt.Sprintf("idle RSS %.0f MB", r.IdleRSSMB))
	}
	if r.SlowConsumer > 0 {
		out = append(out, fmt.Sprintf("%d slow consumer lines in the log", r.SlowConsumer))
	}
	if r.OutsideCPUPercent > 0 {
		out = append(out, fmt.Sprintf("outside process %.2f%% of one core", r.OutsideCPUPercent))
	}
	if r.APISeconds > 0 {
		out = append(out, fmt.Sprintf("API creation %.2fs (%.0f/s), engine had them all after %.2fs", r.APISeconds, r.PerSecond, r.AppliedSeconds))
	}
	out = append(out, orderedExtras(r)...) // test/bench/ordered.go
	return append(out, isolationExtras(r)...)
}

// printRatios puts each hookjet figure beside the baselines of the same run:
// the raw HTTP ceiling and the JetStream-only floor (throughput and CPU per
// event), and the floor at 116 events/s for the runs at that rate.
func printRatios(w io.Writer, rs []*result) {
	best := map[string]*result{}
	for _, r := range rs {
		if r.Best {
			best[r.Name] = r
		}
	}
	raw, floor, floor116 := best["raw"], best["floor"], best["floor116"]
	if raw == nil && floor == nil && floor116 == nil {
		return
	}
	fmt.Fprintln(w, "\nbeside the baselines of this run (best runs):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  scenario\tper s / raw\tper s / floor\tCPU per event / floor\t% core / floor116")
	for _, r := range rs {
		if !r.Best || r == raw || r == floor || r == floor116 || r.Name == "apicreate10000" {
			continue
		}
		cells := []string{"-", "-", "-", "-"}
		paced := r.OfferedRate > 0
		if raw != nil && raw.PerSecond > 0 && !paced {
			cells[0] = fmt.Sprintf("%.2f", r.PerSecond/raw.PerSecond)
		}
		if floor != nil && floor.PerSecond > 0 && !paced {
			cells[1] = fmt.Sprintf("%.2f", r.PerSecond/floor.PerSecond)
		}
		if floor != nil && floor.CPUSecondsPer1000 > 0 && r.CPUSecondsPer1000 > 0 && !paced {
			cells[2] = fmt.Sprintf("%.2fx", r.CPUSecondsPer1000/floor.CPUSecondsPer1000)
		}
		if floor116 != nil && floor116.CPUPercentOneCore > 0 && paced && r.OfferedRate == floor116.OfferedRate {
			cells[3] = fmt.Sprintf("%.2fx", r.CPUPercentOneCore/floor116.CPUPercentOneCore)
		}
		fmt.Fprintf(tw, "  %s\t%s\n", r.Name, strings.Join(cells, "\t"))
	}
	_ = tw.Flush()
	if floor116 != nil {
		fmt.Fprintln(w, "  (cost includes the publisher and the receiver; cost116 and floor116 have them in an outside process)")
	}
}
