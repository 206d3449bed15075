package main

import (
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookjet/hookjet/config"
)

func TestPayloadRoundTrip(t *testing.T) {
	sent := time.Unix(1_790_000_000, 123_456_789)
	for _, tt := range []struct {
		name string
		n    int
		ep   int
	}{
		{"first", 0, 0},
		{"middle", 4242, 7},
		{"large", 9_999_999_999, 999},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := appendPayload(nil, tt.n, sent, tt.ep)
			if len(b) != payloadSize {
				t.Errorf("size %d, want %d", len(b), payloadSize)
			}
			n, at, ok := parsePayload(b)
			if !ok || n != tt.n || at != sent.UnixNano() {
				t.Errorf("parsePayload = %d, %d, %v; want %d, %d, true", n, at, ok, tt.n, sent.UnixNano())
			}
			if !strings.Contains(string(b), `"type":"`+eventType(tt.ep)+`"`) {
				t.Errorf("payload lacks its event type: %s", b)
			}
		})
	}
	for _, bad := range []string{"", `{"n":12}`, strings.Repeat("x", payloadSize)} {
		if _, _, ok := parsePayload([]byte(bad)); ok {
			t.Errorf("parsePayload(%q) ok", bad)
		}
	}
}

func TestSchedule(t *testing.T) {
	want := map[string]bool{"raw": true, "healthy10": true, "cost": true, "dead10": true}
	got := schedule(want, 2)
	exp := []string{"raw", "healthy10", "dead10", "raw", "healthy10", "dead10", "cost"}
	if !slices.Equal(got, exp) {
		t.Errorf("schedule = %v, want %v", got, exp)
	}
}

func TestDisturbedAndBest(t *testing.T) {
	rs := []*result{
		{Name: "raw", PerSecond: 100, OtherCPUPercent: 80},
		{Name: "healthy10", PerSecond: 50, OtherCPUPercent: 90},
		{Name: "raw", PerSecond: 120, OtherCPUPercent: 5},
		{Name: "healthy10", PerSecond: 40, OtherCPUPercent: 60},
	}
	want := map[string]bool{"raw": true, "healthy10": true}
	if got := disturbed(rs, want); !slices.Equal(got, []string{"healthy10"}) {
		t.Errorf("disturbed = %v, want [healthy10]", got)
	}
	markBest(rs)
	for i, wantBest := range []bool{false, true, true, false} {
		if rs[i].Best != wantBest {
			t.Errorf("result %d (%s run %d): best = %v, want %v", i, rs[i].Name, rs[i].Run, rs[i].Best, wantBest)
		}
	}
	if rs[2].Run != 2 || rs[3].Run != 2 {
		t.Errorf("runs not numbered: %d, %d", rs[2].Run, rs[3].Run)
	}
}

func TestNewTallyCompletes(t *testing.T) {
	x := newTally([]behaviour{healthy, dead, healthy}, 6, false)
	if got := x.healthyExpected(); got != 4 {
		t.Fatalf("healthyExpected = %d, want 4", got)
	}
	now := time.Now()
	for n := range 6 {
		ep := n % 3
		if ep == 1 {
			continue // the dead endpoint never records
		}
		x.record(ep, appendPayload(nil, n, now, ep), nil, nil)
		x.record(ep, appendPayload(nil, n, now, ep), nil, nil) // a duplicate
	}
	select {
	case <-x.done:
	default:
		t.Fatal("done not closed after every healthy endpoint got its events")
	}
	if got, _ := x.healthyDeliveries(); got != 4 {
		t.Errorf("healthyDeliveries = %d, want 4", got)
	}
	if d := x.duplicates.Load(); d != 4 {
		t.Errorf("duplicates = %d, want 4", d)
	}
	if l := len(x.healthyLatencies()); l != 4 {
		t.Errorf("%d latencies, want 4", l)
	}
}

func TestRoutedTallyFailFirst(t *testing.T) {
	// Events 0, 2, 4 go to endpoint 1 (healthy), 1, 3, 5 to endpoint 0,
	// which refuses each event's first request.
	route := func(n int) int { return 1 - n%2 }
	x := newRoutedTally([]behaviour{failFirst, healthy}, 6, false, route)
	if x.expected[0] != 3 || x.expected[1] != 3 {
		t.Fatalf("expected = %v, want [3 3]", x.expected)
	}
	now := time.Now()
	for n := range 6 {
		ep := route(n)
		if ep == 0 && !x.failOnce(n) {
			t.Fatalf("event %d: first request not refused", n)
		}
		if ep == 0 && x.failOnce(n) {
			t.Fatalf("event %d: second request refused", n)
		}
		x.record(ep, appendPayload(nil, n, now, ep), nil, nil)
	}
	x.record(0, appendPayload(nil, 0, now, 1), nil, nil) // event 0 at the wrong endpoint
	if b := x.bad.Load(); b != 1 {
		t.Errorf("bad = %d, want 1 (the misrouted request)", b)
	}
	var st isolationStats
	st.retries(x)
	if st.Retries != 3 || st.RetriesMissing != 0 {
		t.Errorf("retries %d, missing %d; want 3, 0", st.Retries, st.RetriesMissing)
	}
	if got := len(latenciesWhere(x, func(i int) bool { return i == 1 })); got != 3 {
		t.Errorf("%d latencies for endpoint 1, want 3", got)
	}
	if !waitEndpoints(t.Context(), x, time.Now(), func(int) bool { return true }) {
		t.Error("waitEndpoints: not every endpoint complete")
	}
}

func TestPadPayload(t *testing.T) {
	b := padPayload(appendPayload(nil, 7, time.Unix(1_790_000_000, 0), 1), 1000)
	if len(b) != payloadSize+1000 || !strings.HasSuffix(string(b), `"}}`) {
		t.Fatalf("size %d (want %d), tail %q", len(b), payloadSize+1000, b[len(b)-3:])
	}
	if n, _, ok := parsePayload(b); !ok || n != 7 {
		t.Errorf("parsePayload = %d, %v; want 7, true", n, ok)
	}
}

func TestIsolationTargets(t *testing.T) {
	lat := func(p99 float64) *latencyStats { return &latencyStats{Count: 100, P99: p99} }
	rs := []*result{
		{Name: "slow16-base", Best: true, Complete: true, PerSecond: 100, Latency: lat(10)},
		{Name: "slow16", Best: true, Complete: true, PerSecond: 95, Latency: lat(300)},
		{Name: "dead10pct-base", Best: true, Complete: false, PerSecond: 50, Latency: lat(9000)},
		{Name: "dead10pct", Best: true, Complete: true, PerSecond: 100, Latency: lat(10)},
		{Name: "logfull", Best: true, Complete: true, Latency: lat(5), Isolation: &isolationStats{Owed: 10, Pending: 4, DeadLetters: 6, Settled: true, TasksPeakBytes: 5, TasksMaxBytes: 4}},
	}
	status := map[string]string{}
	for _, tg := range isolationTargets(func(name string) *result {
		for _, r := range rs {
			if r.Name == name {
				return r
			}
		}
		return nil
	}) {
		status[tg.Name] = tg.Status
	}
	for name, want := range map[string]string{
		"healthy endpoint p99 beside 16 slow endpoints (3 s) vs all healthy":                    "MISS", // +290 ms
		"healthy endpoint rate beside 16 slow endpoints (3 s) vs all healthy":                   "PASS",
		"healthy endpoint p99 beside 70 rate-limited backlogs vs all healthy":                   "N/A",
		"healthy endpoint p99 beside 10% of 1,000 endpoints dead vs all healthy":                "MISS", // the baseline fell behind
		"healthy endpoint rate beside 10% of 1,000 endpoints dead vs all healthy":               "MISS",
		"logfull: dead endpoint's pending + dead letters - owed":                                "PASS",
		"logfull: largest HOOKJET_TASKS seen vs streams.tasks_max_bytes":                        "MISS",
		"logfull: publishes refused while several times streams.max_bytes went through the log": "PASS",
	} {
		if status[name] != want {
			t.Errorf("%s: %s, want %s", name, status[name], want)
		}
	}
}

func TestParseDeferrals(t *testing.T) {
	text := `# HELP hookjet_deferrals_total Messages put back without an attempt, by endpoint and cause.
# TYPE hookjet_deferrals_total counter
hookjet_deferrals_total{cause="concurrency",endpoint="e1"} 3
hookjet_deferrals_total{cause="breaker",endpoint="e0"} 7
hookjet_deferrals_total{cause="breaker",endpoint="_other"} 2
hookjet_deferrals_total{cause="in_flight",endpoint="e2"} 0
hookjet_attempts_total{class="success",endpoint="e1"} 9
`
	got := parseDeferrals(text, func(i int) bool { return i == 1 })
	want := map[string]float64{"measured concurrency": 3, "others breaker": 9}
	if !maps.Equal(got, want) {
		t.Errorf("parseDeferrals = %v, want %v", got, want)
	}
}

func TestKeyedTally(t *testing.T) {
	// 6 events over 2 keys to one endpoint: k0 has 0, 2, 4; k1 has 1, 3, 5.
	x := newTally([]behaviour{healthy}, 6, false)
	x.setKeys(2, time.Hour)
	body := func(n int) []byte { return appendPayload(nil, n, time.Now(), 0) }
	if x.keyFails(body(1)) {
		t.Error("k1's request failed")
	}
	if !x.keyFails(body(0)) || !x.keyFails(body(2)) {
		t.Error("k0's requests did not fail within failKeyFor of its first")
	}
	if x.keyFailed.Load() != 2 {
		t.Errorf("keyFailed = %d, want 2", x.keyFailed.Load())
	}
	x.failKeyUntil.Store(time.Now().UnixNano())
	if x.keyFails(body(0)) {
		t.Error("k0's request failed after failKeyUntil")
	}
	// k1 first delivered 5 before 3: one out of order.
	for _, n := range []int{0, 1, 2, 5, 3, 4} {
		x.record(0, body(n), nil, nil)
		time.Sleep(time.Millisecond)
	}
	out, k0Done, others := x.keyOrder()
	if out != 1 {
		t.Errorf("out of order = %d, want 1", out)
	}
	if k0Done.IsZero() || len(others) != 3 {
		t.Errorf("k0 done %v, %d other latencies; want a time and 3", k0Done, len(others))
	}
	noKeys := newTally([]behaviour{healthy}, 6, false)
	noKeys.setKeys(0, time.Hour)
	if noKeys.keyFails(body(0)) || noKeys.firstAt != nil {
		t.Error("a tally without keys fails requests or notes first deliveries")
	}
}

func TestGroupsLeftOutOfTheDefault(t *testing.T) {
	def := defaultScenarios()
	if !slices.Contains(def, "raw") || !slices.Contains(def, "publish") {
		t.Errorf("default %v lacks raw or publish", def)
	}
	for name, g := range groups {
		if slices.Contains(scenarioNames, name) {
			t.Errorf("group %s is also a scenario's name", name)
		}
		for _, s := range g {
			if !slices.Contains(scenarioNames, s) || slices.Contains(def, s) {
				t.Errorf("group %s: %s unknown or in the default run", name, s)
			}
		}
	}
	if len(def)+len(orderedNames) != len(scenarioNames) {
		t.Errorf("%d default + %d ordered != %d scenarios", len(def), len(orderedNames), len(scenarioNames))
	}
}

func TestFailingKeyTarget(t *testing.T) {
	lat := func(p99 float64) *latencyStats { return &latencyStats{Count: 100, P99: p99} }
	rs := map[string]*result{
		"orderedbase": {Name: "orderedbase", Complete: true, Ordering: &orderingStats{OtherKeys: lat(1000)}},
		"orderedfail": {Name: "orderedfail", Complete: true, Ordering: &orderingStats{OtherKeys: lat(1200), KeyFailed: 2}},
	}
	get := func(name string) *result { return rs[name] }
	status := func() string {
		for _, tg := range orderedTargets(get) {
			if strings.HasPrefix(tg.Name, "a key failing") {
				return tg.Status
			}
		}
		return "absent"
	}
	if s := status(); s != "PASS" {
		t.Errorf("p99 +200 ms: %s, want PASS", s)
	}
	rs["orderedfail"].Ordering.OtherKeys = lat(1300)
	if s := status(); s != "MISS" {
		t.Errorf("p99 +300 ms: %s, want MISS", s)
	}
	rs["orderedfail"].Ordering.OtherKeys, rs["orderedfail"].Ordering.KeyFailed = lat(1000), 0
	if s := status(); s != "MISS" {
		t.Errorf("a key that never failed: %s, want MISS", s)
	}
}

// The cluster's share target takes the smallest process's part of the
// deliveries, and says nothing when a process's count could not be read.
func TestShareCheck(t *testing.T) {
	r := &result{Name: "cluster3x3", Complete: true, ProcessDeliveries: []float64{7092, 5587, 7321}}
	c := shareCheck(r)
	if c.ok == nil || !*c.ok || math.Abs(c.value-27.935) > 0.01 {
		t.Fatalf("shares 7092, 5587, 7321: value %.3f ok %v, want 27.935 and a pass", c.value, c.ok)
	}
	r.ProcessDeliveries = []float64{9000, 900, 100}
	if c := shareCheck(r); c.ok == nil || *c.ok {
		t.Fatalf("a process with 1%% of the deliveries passed: %+v", c)
	}
	r.ProcessDeliveries = []float64{9000, -1, 100}
	if c := shareCheck(r); c.ok != nil {
		t.Fatalf("an unread process's count gave a verdict: %+v", c)
	}
}

// The filters, transform and destinations scenarios' endpoints are a
// config hookjet accepts, with the filter, script and destination as
// written.
func TestShapeAndDestinationConfigs(t *testing.T) {
	spec := hookjetSpec{maxInFlight: 4, concurrency: 8, endpoints: []endpointSpec{
		{url: "http://127.0.0.1:1/e/0", event: eventType(0), extra: filterYAML(0)},
		{url: "http://127.0.0.1:1/e/1", event: eventType(1), extra: transformYAML},
		{event: eventType(2), extra: "    destination: {type: nats, url: \"nats://127.0.0.1:4222\", subject: \"out.{type}\"}\n"},
	}}
	cfg, err := config.Parse([]byte(configYAML(t.TempDir(), 4222, spec)), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Endpoints[0].Filter; got != `type == "bench.e0"` {
		t.Errorf("filter %q", got)
	}
	if got := strings.TrimSpace(cfg.Endpoints[1].Transform); got != benchTransform {
		t.Errorf("transform:\n%s\nwant:\n%s", got, benchTransform)
	}
	if d := cfg.Endpoints[2].Destination; d.TypeName() != "nats" || cfg.Endpoints[2].URL != "" {
		t.Errorf("destination %q, url %q: want nats and none", d.TypeName(), cfg.Endpoints[2].URL)
	}
}

func TestDestinationTargets(t *testing.T) {
	rs := map[string]*result{
		"nats-direct":    {Name: "nats-direct", PerSecond: 1000, Complete: true},
		"nats":           {Name: "nats", PerSecond: 800, Complete: true},
		"kafka-direct":   {Name: "kafka-direct", PerSecond: 1000, Complete: true},
		"kafka":          {Name: "kafka", PerSecond: 100, Complete: true},
		"dest-webhook":   {Name: "dest-webhook", PerSecond: 900, Complete: true},
		"dest-idle10000": {Name: "dest-idle10000", Complete: true, DestConnsIdle: 0, DestConnsBusy: 2},
		"nats-relay":     {Name: "nats-relay", PerSecond: 1000, Complete: true},
		"kafka-relay":    {Name: "kafka-relay", PerSecond: 1000, Complete: false}, // an incomplete floor is no floor
	}
	ts := destinationTargets(func(name string) *result { return rs[name] })
	want := []string{"PASS", "N/A", "INFO", "N/A", "N/A", "INFO", "MISS"}
	if len(ts) != len(want) {
		t.Fatalf("%d targets, want %d", len(ts), len(want))
	}
	if ts[2].Value != 80 || !strings.Contains(ts[2].Detail, "the relay itself is 100% of the client publishing directly") {
		t.Errorf("relay target: %v %s", ts[2].Value, ts[2].Detail)
	}
	for i, tt := range ts {
		if tt.Status != want[i] {
			t.Errorf("%s: %s, want %s (%s)", tt.Name, tt.Status, want[i], tt.Detail)
		}
	}
	if !strings.Contains(ts[0].Detail, "dest-webhook 900/s") {
		t.Errorf("the NATS target does not put it beside the webhook run: %s", ts[0].Detail)
	}
}
