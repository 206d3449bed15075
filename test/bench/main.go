package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/server"
)

// profiledRuns are the runs inside a scenario -profile also takes: the
// floor's run at 116 events/s and the destinations scenario's broker runs.
var profiledRuns = []string{"floor116", "nats", "rabbitmq", "kafka", "dest-idle10000"}

// scenarioNames in the order they run.
var scenarioNames = []string{
	"raw", "healthy10", "healthy10fast", "slow10", "dead10", "floor", "floorfast", "endpoints1000", "endpoints10000", "dead1000",
	"endpoints100000", "startup100k", "latency", "cost", "cost116", "apicreate10000", "backlog20000",
	"healthy10nolog", "healthy10fastnolog", "cost116nolog",
	"inbound", // test/bench/inbound.go
	"cluster3",
	"slow16", "slow1at2500", "ratelimited70", "dead10pct", "logfull", "consumers1100",
	"burst10", "burst10fast", "burst1", "burst1fast", // test/bench/burst.go
	"ordered1000", "unordered1000", "ordered1000fast", "unordered1000fast", "orderedbase", "orderedfail",
	"orderedbasepaced", "orderedfailpaced", "keys100k", // test/bench/ordered.go
	"history10m",           // test/bench/history.go
	"publish",              // test/bench/publish.go
	"events1m",             // test/bench/events.go
	"filters", "transform", // test/bench/shape.go
	"destinations", // test/bench/destinations.go
	"validate",     // test/bench/validate.go
}

// groups are named sets of scenarios (-scenarios ordered) that the default
// run leaves out: on the shared 2-core machine they would take the default
// run past its time budget.
var groups = map[string][]string{
	"ordered": orderedNames, // test/bench/ordered.go
}

// defaultScenarios are the scenarios a run without -scenarios runs: all but
// the groups'.
func defaultScenarios() []string {
	var out []string
	for _, name := range scenarioNames {
		inGroup := false
		for _, g := range groups {
			inGroup = inGroup || slices.Contains(g, name)
		}
		if !inGroup {
			out = append(out, name)
		}
	}
	return out
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	var err error
	if spec := os.Getenv(childEnv); spec != "" {
		err = runChild(ctx, spec, os.Stdout)
	} else if dir := os.Getenv(natsChildEnv); dir != "" { // test/bench/history.go
		err = runNATSChild(dir, os.Stdin, os.Stdout)
	} else {
		err = run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	}
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// report is the JSON file's content.
type report struct {
	Started    time.Time `json:"started"`
	Finished   time.Time `json:"finished"`
	Command    string    `json:"command"`
	Quick      bool      `json:"quick"`
	Version    string    `json:"hookjet_version"`
	GoVersion  string    `json:"go_version"`
	OS         string    `json:"os"`
	CPUs       int       `json:"cpus"`
	GOMAXPROCS int       `json:"gomaxprocs"`
	CPUModel   string    `json:"cpu_model,omitempty"`
	// Scope says what CPU and RSS figures cover.
	Scope   string    `json:"scope"`
	Results []*result `json:"results"`
	Targets []target  `json:"targets"`
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "", "write the results as JSON to `FILE`")
	scen := fs.String("scenarios", strings.Join(defaultScenarios(), ","), "comma-separated scenarios to run: "+strings.Join(scenarioNames, ", ")+
		"; or a group: "+strings.Join(slices.Sorted(maps.Keys(groups)), ", "))
	quick := fs.Bool("quick", false, "smaller counts and shorter runs, for a smoke test")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of one scenario's measured window to `FILE`")
	memprofile := fs.String("memprofile", "", "write a heap profile at the end of the profiled scenario's measured window to `FILE`")
	profile := fs.String("profile", "healthy10", "the `scenario` -cpuprofile and -memprofile profile (also floor116: the floor's run at 116 events/s; nats, rabbitmq, kafka: the destinations scenario's runs through hookjet; dest-idle10000: its idle window)")
	repeat := fs.Int("repeat", 2, "run the compared throughput scenarios (raw, healthy10, slow10, dead10) `N` times, interleaved; the fastest run of each counts; 1 with -quick")
	rerunBusy := fs.Int("rerun-busy", 2, "up to `N` extra runs of each compared throughput scenario whose every run was disturbed by other processes; 0 with -quick")
	eventsStored := fs.Int("events-stored", 1_000_000, "events1m: events to store and list, `N`")
	historyRecords := fs.Int("history-records", 10_000_000, "history10m: delivery-log records and remembered ids to store, `N` of each")
	gapDump := fs.String("gapdump", "", "burst scenarios: when a stretch without a delivery while events are owed passes 0.7 s, write a goroutine dump and the fan-out consumer's state into `DIR`")
	destLogOff := fs.Bool("destinations-log-off", false, "destinations: run hookjet's broker runs with the delivery log off (log.enabled: false), to see what it costs")
	logFile := fs.String("log", "", "write hookjet's warnings and errors to `FILE` (default: counted, then discarded)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	want, err := wanted(*scen)
	if err != nil {
		return err
	}
	if !slices.Contains(scenarioNames, *profile) && !slices.Contains(profiledRuns, *profile) {
		return fmt.Errorf("-profile %q: not a scenario (have %s, %s)", *profile, strings.Join(scenarioNames, ", "), strings.Join(profiledRuns, ", "))
	}
	p := fullParams()
	if *quick {
		p = quickParams()
		if !flagSet(fs, "repeat") {
			*repeat = 1
		}
		if !flagSet(fs, "rerun-busy") {
			*rerunBusy = 0
		}
	}
	p.historyRecords = *historyRecords
	p.eventsStored = *eventsStored
	if *eventsStored < 20000 {
		return fmt.Errorf("-events-stored %d: want at least 20000", *eventsStored)
	}
	if *historyRecords < 10000 {
		return fmt.Errorf("-history-records %d: want at least 10000", *historyRecords)
	}
	if *repeat < 1 {
		return fmt.Errorf("-repeat %d: want at least 1", *repeat)
	}
	logOut := io.Discard
	if *logFile != "" {
		f, err := os.Create(*logFile)
		if err != nil {
			return err
		}
		defer func() { _ = f.Close() }()
		logOut = f
	}
	key, err := config.DecodeSecret(secret)
	if err != nil {
		return err
	}

	rep := &report{
		Started:    time.Now().UTC(),
		Command:    "go run ./test/bench " + strings.Join(args, " "),
		Quick:      *quick,
		Version:    server.Version,
		GoVersion:  runtime.Version(),
		OS:         runtime.GOOS + "/" + runtime.GOARCH,
		CPUs:       runtime.NumCPU(),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		CPUModel:   cpuModel(),
		Scope: "one process: hookjet, its embedded NATS server, the publisher and the receiver; " +
			"CPU is getrusage(RUSAGE_SELF) user+system over each measured window, peak RSS is VmHWM reset before each scenario",
	}
	b := &bench{p: p, key: key, logOut: logOut, cpuprofile: *cpuprofile, memprofile: *memprofile, profile: *profile, progress: stderr, gapDump: *gapDump, destLogOff: *destLogOff}
	runErr := b.runAll(rep, b.scenarios(ctx), schedule(want, *repeat), want, *rerunBusy)
	if b.hookjetBin != "" { // built by startup100k
		_ = os.RemoveAll(filepath.Dir(b.hookjetBin))
	}
	markBest(rep.Results)
	rep.Finished = time.Now().UTC()
	rep.Targets = evaluate(rep.Results)
	printReport(stdout, rep)
	if *out != "" {
		data, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return errors.Join(runErr, err)
		}
		if err := os.WriteFile(*out, append(data, '\n'), 0o644); err != nil {
			return errors.Join(runErr, err)
		}
		fmt.Fprintf(stdout, "\nresults written to %s\n", *out)
	}
	return runErr
}

// runAll runs the scenarios in order into rep.Results, then, after the last
// repeated one, runs again up to rerunBusy times those whose every run was
// disturbed by other processes. It stops at the first error.
func (b *bench) runAll(rep *report, runs map[string][]runFunc, order []string, want map[string]bool, rerunBusy int) error {
	var runErr error
	runOne := func(name string) bool {
		for _, fn := range runs[name] {
			r, err := fn()
			if r != nil {
				rep.Results = append(rep.Results, r)
			}
			if err != nil {
				runErr = fmt.Errorf("%s: %w", name, err)
				return false
			}
		}
		return true
	}
	for i, name := range order {
		if !runOne(name) {
			break
		}
		// After the last repeated scenario, give those whose every run was
		// disturbed by other processes another chance.
		if i+1 < len(order) && slices.Contains(repeated, order[i+1]) || !slices.Contains(repeated, name) {
			continue
		}
		for range rerunBusy {
			busy := disturbed(rep.Results, want)
			if len(busy) == 0 {
				break
			}
			b.say("other processes used more than %d%% of one core during every run of %s: running again", busyPercent, strings.Join(busy, ", "))
			for _, n := range busy {
				if !runOne(n) {
					break
				}
			}
			if runErr != nil {
				break
			}
		}
		if runErr != nil {
			break
		}
	}
	return runErr
}

// repeated are the scenarios whose ratios to each other are targets; -repeat
// runs them several times, interleaved, so that a burst of load from other
// processes does not decide a ratio.
var repeated = []string{"raw", "healthy10", "healthy10fast", "slow10", "dead10", "healthy10nolog", "healthy10fastnolog"}

// schedule is the order scenarios run in: the repeated ones round by round,
// then the others once.
func schedule(want map[string]bool, rounds int) []string {
	var out []string
	for range rounds {
		for _, name := range repeated {
			if want[name] {
				out = append(out, name)
			}
		}
	}
	for _, name := range scenarioNames {
		if want[name] && !slices.Contains(repeated, name) {
			out = append(out, name)
		}
	}
	return out
}

// busyPercent is how much of one core other processes may use during a
// measured window before the run counts as disturbed.
const busyPercent = 25

// disturbed returns the repeated scenarios that ran and whose every run was
// disturbed.
func disturbed(rs []*result, want map[string]bool) []string {
	var out []string
	for _, name := range repeated {
		if !want[name] {
			continue
		}
		quiet := false
		for _, r := range rs {
			quiet = quiet || r.Name == name && r.OtherCPUPercent <= busyPercent
		}
		if !quiet {
			out = append(out, name)
		}
	}
	return out
}

// markBest numbers the runs of each scenario and marks the fastest one,
// which the targets use.
func markBest(rs []*result) {
	best := map[string]*result{}
	runs := map[string]int{}
	for _, r := range rs {
		runs[r.Name]++
		r.Run = runs[r.Name]
		if b := best[r.Name]; b == nil || r.PerSecond > b.PerSecond {
			best[r.Name] = r
		}
	}
	for _, r := range best {
		r.Best = true
	}
}

// wanted is the set of scenarios a -scenarios list names, groups expanded.
func wanted(list string) (map[string]bool, error) {
	want := map[string]bool{}
	for _, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		if g, ok := groups[s]; ok {
			for _, name := range g {
				want[name] = true
			}
			continue
		}
		if s == "" {
			continue
		}
		if !slices.Contains(scenarioNames, s) {
			return nil, fmt.Errorf("unknown scenario %q (have %s)", s, strings.Join(scenarioNames, ", "))
		}
		want[s] = true
	}
	return want, nil
}

func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	for line := range strings.Lines(string(b)) {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// target is one goal of the issue, evaluated on this run's results.
type target struct {
	Name   string  `json:"name"`
	Goal   string  `json:"goal"`
	Value  float64 `json:"value"`
	Unit   string  `json:"unit"`
	Detail string  `json:"detail"`
	// Status is PASS, MISS, N/A (a scenario it needs did not run) or INFO
	// (reported, not judged).
	Status string `json:"status"`
}

func evaluate(rs []*result) []target {
	get := func(name string) *result {
		for _, r := range rs {
			if r.Name == name && r.Best {
				return r
			}
		}
		return nil
	}
	status := func(ok bool) string {
		if ok {
			return "PASS"
		}
		return "MISS"
	}
	na := func(name, goal, unit, need string) target {
		return target{Name: name, Goal: goal, Unit: unit, Status: "N/A", Detail: "needs " + need}
	}
	var ts []target
	raw, h10 := get("raw"), get("healthy10")

	const tpName, tpGoal = "hookjet throughput vs raw HTTP ceiling (10 healthy endpoints)", ">= 50%"
	if raw != nil && h10 != nil && raw.PerSecond > 0 {
		v := 100 * h10.PerSecond / raw.PerSecond
		ts = append(ts, target{Name: tpName, Goal: tpGoal, Value: round(v, 1), Unit: "%", Status: status(v >= 50),
			Detail: fmt.Sprintf("%.0f deliveries/s vs %.0f requests/s; CPU per 1000: hookjet %.3f s, raw %.3f s", h10.PerSecond, raw.PerSecond, h10.CPUSecondsPer1000, raw.CPUSecondsPer1000)})
	} else {
		ts = append(ts, na(tpName, tpGoal, "%", "raw and healthy10"))
	}

	const latName, latGoal = "p99 publish→delivery at 2,000 events/s offered", "<= 50 ms"
	if l := get("latency"); l != nil && l.Latency != nil {
		ok := l.Latency.P99 <= 50 && l.Complete && l.AchievedRate >= 0.95*l.OfferedRate
		ts = append(ts, target{Name: latName, Goal: latGoal, Value: l.Latency.P99, Unit: "ms", Status: status(ok),
			Detail: fmt.Sprintf("p50 %.2f ms, p99 %.2f ms, max %.2f ms; offered %.0f/s achieved %.0f/s", l.Latency.P50, l.Latency.P99, l.Latency.Max, l.OfferedRate, l.AchievedRate)})
	} else {
		ts = append(ts, na(latName, latGoal, "ms", "latency"))
	}

	for _, c := range []struct{ scen, what string }{{"slow10", "10% slow (2 s)"}, {"dead10", "10% dead (timeouts)"}} {
		name, goal := "healthy endpoints' throughput with "+c.what+" vs all healthy", ">= 90%"
		r := get(c.scen)
		if r == nil || h10 == nil || h10.Healthy9PerSecond == 0 {
			ts = append(ts, na(name, goal, "%", c.scen+" and healthy10"))
			continue
		}
		v := 100 * r.PerSecond / h10.Healthy9PerSecond
		ts = append(ts, target{Name: name, Goal: goal, Value: round(v, 1), Unit: "%", Status: status(v >= 90),
			Detail: fmt.Sprintf("9 healthy: %.0f/s vs %.0f/s for e1..e9 when all 10 are healthy (stricter, vs all 10 together: %.0f%%)", r.PerSecond, h10.Healthy9PerSecond, 100*r.PerSecond/h10.PerSecond)})
	}

	e1k := get("endpoints1000")
	const e1Name, e1Goal = "1,000 endpoints throughput vs 10 endpoints", ">= 80% (<= 20% below)"
	if e1k != nil && h10 != nil && h10.PerSecond > 0 {
		v := 100 * e1k.PerSecond / h10.PerSecond
		ts = append(ts, target{Name: e1Name, Goal: e1Goal, Value: round(v, 1), Unit: "%", Status: status(v >= 80),
			Detail: fmt.Sprintf("%.0f/s vs %.0f/s; startup %.1f s", e1k.PerSecond, h10.PerSecond, e1k.StartupSeconds)})
	} else {
		ts = append(ts, na(e1Name, e1Goal, "%", "endpoints1000 and healthy10"))
	}
	const rssName, rssGoal = "1,000 endpoints peak RSS (whole process)", "<= 300 MB"
	if e1k != nil {
		scope := "VmHWM reset before the scenario"
		if !e1k.PeakRSSPerScenario {
			scope = "VmHWM since process start (reset unsupported)"
		}
		ts = append(ts, target{Name: rssName, Goal: rssGoal, Value: e1k.PeakRSSMB, Unit: "MB", Status: status(e1k.PeakRSSMB <= 300),
			Detail: scope + "; includes publisher and receiver"})
	} else {
		ts = append(ts, na(rssName, rssGoal, "MB", "endpoints1000"))
	}
	const costName, costGoal = "CPU at 116 events/s (hookjet + embedded NATS)", "<= 5% of one core"
	if c := get("cost"); c != nil {
		ts = append(ts, target{Name: costName, Goal: costGoal, Value: c.CPUPercentOneCore, Unit: "% core", Status: status(c.CPUPercentOneCore <= 5 && c.Complete),
			Detail: fmt.Sprintf("whole process incl. publisher and receiver; idle with 10 endpoints %.2f%%", c.IdleCPUPercent)})
	} else {
		ts = append(ts, na(costName, costGoal, "% core", "cost"))
	}
	ts = append(ts, scaleTargets(get)...)
	ts = append(ts, inboundTargets(get)...)     // test/bench/inbound.go
	ts = append(ts, burstTargets(get)...)       // test/bench/burst.go
	ts = append(ts, orderedTargets(get)...)     // test/bench/ordered.go
	ts = append(ts, publishTargets(get)...)     // test/bench/publish.go
	ts = append(ts, shapeTargets(get)...)       // test/bench/shape.go
	ts = append(ts, destinationTargets(get)...) // test/bench/destinations.go
	ts = append(ts, validateTargets(get)...)    // test/bench/validate.go
	ts = append(ts, clusterTargets(get)...)
	return append(ts, isolationTargets(get)...)
}

func printReport(w io.Writer, rep *report) {
	fmt.Fprintf(w, "\nhookjet %s benchmark — %s, %d CPUs (%s), GOMAXPROCS %d, %s%s\n",
		rep.Version, rep.OS, rep.CPUs, rep.CPUModel, rep.GOMAXPROCS, rep.GoVersion, map[bool]string{true: ", QUICK", false: ""}[rep.Quick])
	fmt.Fprintf(w, "scope: %s\n\n", rep.Scope)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tdelivered\tseconds\tper s\tp50 ms\tp99 ms\tmax ms\tCPU s/1000\t% core\tpeak RSS MB\tstartup s\tdup\terrors\t")
	for _, r := range rep.Results {
		p50, p99, mx := "-", "-", "-"
		if r.Latency != nil && r.Latency.Count > 0 {
			p50, p99, mx = f2(r.Latency.P50), f2(r.Latency.P99), f2(r.Latency.Max)
		}
		name := r.Name
		if runs := countRuns(rep.Results, r.Name); runs > 1 {
			name += fmt.Sprintf(" #%d", r.Run)
			if r.Best {
				name += "*"
			}
		}
		if !r.Complete {
			name += " (bound)"
		}
		fmt.Fprintf(tw, "%s\t%d\t%.2f\t%.0f\t%s\t%s\t%s\t%.4f\t%.1f\t%.0f\t%.2f\t%d\t%d\t\n",
			name, r.Delivered, r.Seconds, r.PerSecond, p50, p99, mx, r.CPUSecondsPer1000, r.CPUPercentOneCore, r.PeakRSSMB,
			r.StartupSeconds, r.Duplicates, r.Errors+r.BadRequests+r.SignaturesBad+r.PublishFailed)
	}
	_ = tw.Flush()
	if hasRepeats(rep.Results) {
		fmt.Fprintln(w, "  * the best of the repeated runs; the targets use it")
	}
	for _, r := range rep.Results {
		var extra []string
		if r.Healthy9PerSecond > 0 {
			extra = append(extra, fmt.Sprintf("e1..e9 alone %.0f/s", r.Healthy9PerSecond))
		}
		if r.PublishPerSecond > 0 {
			extra = append(extra, fmt.Sprintf("publish %.0f/s", r.PublishPerSecond))
		}
		if r.OfferedRate > 0 {
			extra = append(extra, fmt.Sprintf("offered %.0f/s achieved %.0f/s", r.OfferedRate, r.AchievedRate))
		}
		if r.IdleCPUPercent > 0 {
			extra = append(extra, fmt.Sprintf("idle CPU %.2f%% of one core", r.IdleCPUPercent))
		}
		if r.GoSysMB > 0 {
			extra = append(extra, fmt.Sprintf("at the end: RSS anon %.0f MB + file %.0f MB, Go heap %.0f MB, stacks %.0f MB, Go sys %.0f MB, %d goroutines",
				r.RSSAnonMB, r.RSSFileMB, r.GoHeapMB, r.GoStackMB, r.GoSysMB, r.Goroutines))
		}
		if len(r.Parked) > 0 {
			extra = append(extra, "parked or put back: "+causeCounts(r.Parked))
		}
		if r.ShutdownSeconds > 0 {
			extra = append(extra, fmt.Sprintf("shutdown %.2fs", r.ShutdownSeconds))
		}
		if r.DeadRequests > 0 {
			extra = append(extra, fmt.Sprintf("%d requests to the dead endpoint", r.DeadRequests))
		}
		if r.HookjetWarnings+r.HookjetErrors > 0 {
			extra = append(extra, fmt.Sprintf("hookjet logged %d warnings, %d errors", r.HookjetWarnings, r.HookjetErrors))
		}
		extra = append(extra, scaleExtras(r)...)
		extra = append(extra, fmt.Sprintf("goroutines %d→%d", r.GoroutinesBefore, r.GoroutinesAfter))
		extra = append(extra, fmt.Sprintf("other processes used %.0f%% of one core meanwhile", r.OtherCPUPercent))
		extra = append(extra, r.Notes...)
		name := r.Name
		if countRuns(rep.Results, r.Name) > 1 {
			name += fmt.Sprintf(" #%d", r.Run)
		}
		fmt.Fprintf(w, "  %s: %s\n", name, strings.Join(extra, "; "))
	}
	if busy := busiest(rep.Results); busy > busyPercent {
		fmt.Fprintf(w, "  WARNING: other processes used up to %.0f%% of one core (of %d) during a measured window: rates are lower and ratios between scenarios noisier than on an idle machine; compare CPU s/1000 too.\n", busy, 100*rep.CPUs)
	}
	printRatios(w, rep.Results)
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "target\tgoal\tvalue\tresult\tdetail")
	for _, t := range rep.Targets {
		v := "-"
		if t.Status != "N/A" {
			v = fmt.Sprintf("%.2f %s", t.Value, t.Unit)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", t.Name, t.Goal, v, t.Status, t.Detail)
	}
	_ = tw.Flush()
}

func countRuns(rs []*result, name string) int {
	n := 0
	for _, r := range rs {
		if r.Name == name {
			n++
		}
	}
	return n
}

func hasRepeats(rs []*result) bool {
	for _, r := range rs {
		if r.Run > 1 {
			return true
		}
	}
	return false
}

// busiest is the most CPU other processes used during any measured window.
func busiest(rs []*result) float64 {
	var m float64
	for _, r := range rs {
		m = max(m, r.OtherCPUPercent)
	}
	return m
}

func f2(v float64) string { return fmt.Sprintf("%.2f", v) }
