package hookjettest_test

// The isolation promise (DESIGN.md, "Isolation and bounded resources"):
// one customer's slow, saturated, rate-limited or disabled endpoint is never
// felt by the others, and nothing vanishes. These began as review probes;
// each assertion failed on 23fc73e. Slow receivers block on a
// gate the test holds, so what is asserted is an order of events (the
// healthy endpoint got everything while the slow ones were still held), not
// a duration.

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/hookjettest"
)

// arrivals records when each webhook-id first reached each path.
type arrivals struct {
	mu  sync.Mutex
	got map[string]map[string]time.Time // path -> id -> first arrival
	n   map[string]int
}

func newArrivals() *arrivals {
	return &arrivals{got: map[string]map[string]time.Time{}, n: map[string]int{}}
}

func (s *arrivals) record(path, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.got[path] == nil {
		s.got[path] = map[string]time.Time{}
	}
	if _, ok := s.got[path][id]; !ok {
		s.got[path][id] = time.Now()
	}
	s.n[path]++
}

func (s *arrivals) at(path, id string) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.got[path][id]
	return t, ok
}

// distinct counts the different ids that reached path.
func (s *arrivals) distinct(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.got[path])
}

func (s *arrivals) count(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n[path]
}

// gate holds slow receivers until the test ends.
type gate struct {
	ch   chan struct{}
	once sync.Once
	done atomic.Int64 // requests that got past the gate
}

// newGate returns a closed-until-cleanup gate. Create it after the
// receiver, so that its cleanup (which runs first) frees the receiver's
// handlers before the receiver closes.
func newGate(t *testing.T) *gate {
	g := &gate{ch: make(chan struct{})}
	t.Cleanup(g.open)
	return g
}

func (g *gate) open() { g.once.Do(func() { close(g.ch) }) }

func (g *gate) wait(r *http.Request) {
	select {
	case <-g.ch:
	case <-r.Context().Done():
	}
	g.done.Add(1)
}

func endpointOf(c *config.Config, id, url string, events []string, mod func(*config.Settings)) config.Endpoint {
	s := c.Defaults
	if mod != nil {
		mod(&s)
	}
	return config.Endpoint{ID: id, URL: url, Events: events,
		Secrets: []config.Secret{config.NewSecret(hookjettest.NewSecret())}, Settings: s}
}

func postOK(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, 4096)
	n, _ := resp.Body.Read(buf)
	if resp.StatusCode >= 300 {
		t.Fatalf("POST %s: %d %s", url, resp.StatusCode, buf[:n])
	}
	return string(buf[:n])
}

// eventually polls f every 50 ms for up to d.
func eventually(d time.Duration, f func() bool) bool {
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		if f() {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return f()
}

// subjectCount is how many messages st holds on subj.
func subjectCount(t *testing.T, st natsjs.Stream, subj string) uint64 {
	t.Helper()
	info, err := st.Info(context.Background(), natsjs.WithSubjectFilter(subj))
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Subjects[subj]
}

func jsOf(t *testing.T, h *hookjettest.Hookjet) natsjs.JetStream {
	t.Helper()
	nc, err := nats.Connect(h.NATSURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := natsjs.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// 16 slow endpoints with the default max_in_flight (16) would take all 256
// worker slots; the fan-out then blocked in launch and a fast endpoint got
// nothing until a slow request ended.
func TestSlowEndpointsLeaveWorkersForOthers(t *testing.T) {
	st := newArrivals()
	var g *gate
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/slow") {
			g.wait(r)
		}
		st.record(r.URL.Path, r.Header.Get("webhook-id"))
	}))
	t.Cleanup(srv.Close)
	g = newGate(t)
	h := hookjettest.Start(t, hookjettest.WithTimeout(90*time.Second), hookjettest.WithConfig(func(c *config.Config) {
		for i := range 16 {
			c.Endpoints = append(c.Endpoints, endpointOf(c, fmt.Sprintf("slow%d", i), srv.URL+fmt.Sprintf("/slow%d", i), []string{"e.>"},
				func(s *config.Settings) { s.Timeout = 40 * time.Second }))
		}
		c.Endpoints = append(c.Endpoints, endpointOf(c, "fast", srv.URL+"/fast", []string{"e.>"}, nil))
	}))
	const n = 200
	for i := range n {
		h.Publish("e.x", fmt.Sprintf("e-%d", i), []byte(`{}`))
		time.Sleep(5 * time.Millisecond)
	}
	if !eventually(30*time.Second, func() bool { return st.distinct("/fast") == n }) {
		t.Fatalf("the fast endpoint got %d of %d events while 16 slow endpoints held their requests", st.distinct("/fast"), n)
	}
	if done := g.done.Load(); done != 0 {
		t.Fatalf("%d slow requests ended before the fast endpoint had everything: the test proves nothing", done)
	}
}

// A saturated endpoint's deliveries used to wait 250 ms each for its slot
// while holding one of the fan-out's 2*worker.concurrency unsettled events,
// so the fan-out of every endpoint was capped by it. Now at most
// max_in_flight of them wait; the rest are parked at once.
func TestSaturatedEndpointHoldsFewUnsettledEvents(t *testing.T) {
	st := newArrivals()
	var g *gate
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			g.wait(r)
		}
		st.record(r.URL.Path, r.Header.Get("webhook-id"))
	}))
	t.Cleanup(srv.Close)
	g = newGate(t)
	const concurrency = 8 // 16 unsettled events
	h := hookjettest.Start(t, hookjettest.WithTimeout(90*time.Second), hookjettest.WithConfig(func(c *config.Config) {
		c.Worker.Concurrency = concurrency
		c.Endpoints = append(c.Endpoints,
			endpointOf(c, "slow", srv.URL+"/slow", []string{"e.>"}, func(s *config.Settings) { s.MaxInFlight = 2; s.Timeout = 40 * time.Second }),
			endpointOf(c, "fast", srv.URL+"/fast", []string{"e.>"}, nil))
	}))
	js := jsOf(t, h)
	ctx := context.Background()
	var most atomic.Int64
	stop := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			c, err := js.Consumer(ctx, "HOOKJET_EVENTS", "hookjet-fanout")
			if err != nil {
				continue
			}
			if n := int64(c.CachedInfo().NumAckPending); n > most.Load() {
				most.Store(n)
			}
		}
	})
	const n = 300
	for i := range n {
		h.Publish("e.x", fmt.Sprintf("e-%d", i), []byte(`{}`))
		time.Sleep(5 * time.Millisecond)
	}
	ok := eventually(30*time.Second, func() bool { return st.distinct("/fast") == n })
	close(stop)
	sampler.Wait()
	if !ok {
		t.Fatalf("the fast endpoint got %d of %d events", st.distinct("/fast"), n)
	}
	// 2 in flight and 2 waiting for the slow endpoint, plus events passing
	// through; 16 means the saturated endpoint held every unsettled slot.
	if m := most.Load(); m >= 2*concurrency {
		t.Fatalf("the fan-out had %d unsettled events (its cap is %d): the saturated endpoint held them", m, 2*concurrency)
	}
	if g.done.Load() != 0 {
		t.Fatal("a slow request ended early: the test proves nothing")
	}
}

// 64 rate-limited endpoints (0.1 rps) with small backlogs used to take every
// drain of the process, each sleeping on its next token; a healthy
// endpoint's task (a test event) waited until one ended.
func TestRateLimitedBacklogsDoNotStarveDrains(t *testing.T) {
	st := newArrivals()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st.record(r.URL.Path, r.Header.Get("webhook-id"))
	}))
	t.Cleanup(srv.Close)
	const limited = 70
	h := hookjettest.Start(t, hookjettest.WithTimeout(90*time.Second), hookjettest.WithConfig(func(c *config.Config) {
		for i := range limited {
			c.Endpoints = append(c.Endpoints, endpointOf(c, fmt.Sprintf("rl%d", i), srv.URL+fmt.Sprintf("/rl%d", i), []string{"rl.>"}, func(s *config.Settings) {
				s.RateLimit = config.RateLimit{RPS: 0.1, Burst: 1}
			}))
		}
		c.Endpoints = append(c.Endpoints, endpointOf(c, "ok", srv.URL+"/ok", []string{"ok.>"}, nil))
	}))
	for i := range 4 {
		h.Publish("rl.x", fmt.Sprintf("rl-%d", i), []byte(`{}`))
	}
	// Each rate-limited endpoint takes its first event at once and holds
	// the other three as tasks, one every 10 s.
	if !eventually(20*time.Second, func() bool {
		for i := range limited {
			if st.count(fmt.Sprintf("/rl%d", i)) < 1 {
				return false
			}
		}
		return true
	}) {
		t.Fatal("the rate-limited endpoints did not get their first events")
	}
	time.Sleep(time.Second) // the drains of the rate-limited backlogs start
	body := postOK(t, h.AdminURL()+"/api/v1/endpoints/ok/test")
	id := body[strings.Index(body, "test_"):]
	id = id[:strings.IndexByte(id, '"')]
	if !eventually(30*time.Second, func() bool { _, ok := st.at("/ok", id); return ok }) {
		t.Fatal("the healthy endpoint's test event was not delivered")
	}
	got, _ := st.at("/ok", id)
	for i := range limited {
		path := fmt.Sprintf("/rl%d", i)
		if st.count(path) > 1 {
			t.Fatalf("%s got its second event (not before 10 s at 0.1 rps) before the healthy endpoint's test event arrived at %s", path, got.Format(time.StampMilli))
		}
	}
}

// With a task anywhere in HOOKJET_TASKS, drains of endpoints that had one
// never ended: dropIfEmpty read the whole stream's count. Their consumers
// now go once their endpoint has nothing left.
func TestDrainConsumersEndWhenTheirEndpointIsEmpty(t *testing.T) {
	st := newArrivals()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st.record(r.URL.Path, r.Header.Get("webhook-id"))
	}))
	t.Cleanup(srv.Close)
	h := hookjettest.Start(t, hookjettest.WithTimeout(60*time.Second), hookjettest.WithConfig(func(c *config.Config) {
		c.Endpoints = append(c.Endpoints, endpointOf(c, "off", srv.URL+"/off", []string{"off"}, nil))
		for i := range 5 {
			c.Endpoints = append(c.Endpoints, endpointOf(c, fmt.Sprintf("h%d", i), srv.URL+fmt.Sprintf("/h%d", i), []string{"none"}, nil))
		}
	}))
	postOK(t, h.AdminURL()+"/api/v1/endpoints/off/disable")
	time.Sleep(300 * time.Millisecond)
	h.Publish("off", "parked-1", []byte(`{}`)) // one parked task stays in HOOKJET_TASKS
	for i := range 5 {
		postOK(t, h.AdminURL()+fmt.Sprintf("/api/v1/endpoints/h%d/test", i))
	}
	if !eventually(20*time.Second, func() bool {
		n := 0
		for i := range 5 {
			n += st.count(fmt.Sprintf("/h%d", i))
		}
		return n == 5
	}) {
		t.Fatal("test events not delivered")
	}
	js := jsOf(t, h)
	ctx := context.Background()
	drains := func() []string {
		stm, err := js.Stream(ctx, "HOOKJET_TASKS")
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		names := stm.ConsumerNames(ctx)
		for n := range names.Name() {
			if strings.HasPrefix(n, "drain-h") {
				out = append(out, n)
			}
		}
		return out
	}
	// Well before the server's one-minute inactivity threshold.
	if !eventually(20*time.Second, func() bool { return len(drains()) == 0 }) {
		t.Fatalf("drain consumers of emptied endpoints remain: %v", drains())
	}
}

// HOOKJET_TASKS used Discard: Old under streams.max_bytes: disabled
// endpoints' tasks pushed out another endpoint's parked task, which was
// then neither delivered nor dead-lettered. Now streams.tasks_max_bytes is
// enforced by hookjet: what would pass it is dead-lettered as overflow, and
// every delivery is accounted for.
func TestFullTaskStreamDeadLettersOverflowAndDropsNothing(t *testing.T) {
	st := newArrivals()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st.record(r.URL.Path, r.Header.Get("webhook-id"))
	}))
	t.Cleanup(srv.Close)
	const tasksMax = 1 << 20
	h := hookjettest.Start(t, hookjettest.WithTimeout(60*time.Second), hookjettest.WithConfig(func(c *config.Config) {
		c.Streams.TasksMaxBytes = tasksMax
		c.Security.MaxPayloadBytes = 16 << 10
		c.Endpoints = append(c.Endpoints, endpointOf(c, "victim", srv.URL+"/victim", []string{"v"}, nil))
		for i := range 3 {
			c.Endpoints = append(c.Endpoints, endpointOf(c, fmt.Sprintf("dead%d", i), srv.URL+fmt.Sprintf("/dead%d", i), []string{"bulk"}, nil))
		}
	}))
	for _, id := range []string{"victim", "dead0", "dead1", "dead2"} {
		postOK(t, h.AdminURL()+"/api/v1/endpoints/"+id+"/disable")
	}
	time.Sleep(300 * time.Millisecond)
	h.Publish("v", "victim-event", []byte(`{"important":true}`))
	js := jsOf(t, h)
	ctx := context.Background()
	tasks, err := js.Stream(ctx, "HOOKJET_TASKS")
	if err != nil {
		t.Fatal(err)
	}
	count := func(subj string) uint64 { return subjectCount(t, tasks, subj) }
	if !eventually(5*time.Second, func() bool { return count("hookjet.tasks.victim") == 1 }) {
		t.Fatal("the victim's task was not parked")
	}
	const bulk = 40 // 3 x 40 x 12 KiB: past 1 MiB
	payload := []byte(`{"pad":"` + strings.Repeat("x", 12<<10) + `"}`)
	var most uint64
	for i := range bulk {
		h.Publish("bulk", fmt.Sprintf("bulk-%d", i), payload)
		if info, err := tasks.Info(ctx); err == nil {
			most = max(most, info.State.Bytes)
		}
	}
	// Every bulk delivery is a task or a dead letter (overflow).
	for i := range 3 {
		id := fmt.Sprintf("dead%d", i)
		if !eventually(15*time.Second, func() bool { return int(count("hookjet.tasks."+id))+len(h.DeadLetters(id)) == bulk }) {
			t.Fatalf("%s: %d tasks + %d dead letters, want %d", id, count("hookjet.tasks."+id), len(h.DeadLetters(id)), bulk)
		}
		for _, dl := range h.DeadLetters(id) {
			if dl.Reason != "overflow" {
				t.Fatalf("%s: dead letter %s with reason %q, want overflow", id, dl.EventID, dl.Reason)
			}
		}
	}
	if info, err := tasks.Info(ctx); err == nil {
		most = max(most, info.State.Bytes)
	}
	if most > tasksMax {
		t.Fatalf("HOOKJET_TASKS held %d bytes, above streams.tasks_max_bytes %d", most, tasksMax)
	}
	if len(h.DeadLetters("dead0")) == 0 {
		t.Fatal("nothing overflowed: the test proves nothing")
	}
	if count("hookjet.tasks.victim") != 1 {
		t.Fatal("the victim's parked task is gone")
	}
	postOK(t, h.AdminURL()+"/api/v1/endpoints/victim/enable")
	if !eventually(15*time.Second, func() bool { _, ok := st.at("/victim", "victim-event"); return ok }) {
		t.Fatal("the victim's task was not delivered once enabled")
	}
}

// A per-endpoint max_backlog bounds one endpoint's waiting deliveries.
func TestMaxBacklogDeadLettersOverflow(t *testing.T) {
	h := hookjettest.Start(t, hookjettest.WithTimeout(60*time.Second), hookjettest.WithConfig(func(c *config.Config) {
		c.Endpoints = append(c.Endpoints, endpointOf(c, "off", "http://127.0.0.1:1/off", []string{"b"}, func(s *config.Settings) { s.MaxBacklog = 5 }))
	}))
	postOK(t, h.AdminURL()+"/api/v1/endpoints/off/disable")
	time.Sleep(300 * time.Millisecond)
	for i := range 8 {
		h.Publish("b", fmt.Sprintf("b-%d", i), []byte(`{}`))
	}
	if !eventually(15*time.Second, func() bool { return len(h.DeadLetters("off")) == 3 }) {
		t.Fatalf("dead letters: %d, want 3 (8 events, max_backlog 5)", len(h.DeadLetters("off")))
	}
	for _, dl := range h.DeadLetters("off") {
		if dl.Reason != "overflow" {
			t.Fatalf("reason %q, want overflow", dl.Reason)
		}
	}
}

// A small event log that receives several times its max_bytes never
// refuses a producer: delivered events are trimmed below the ack floor.
func TestFullEventLogIsTrimmedNotRefused(t *testing.T) {
	st := newArrivals()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st.record(r.URL.Path, r.Header.Get("webhook-id"))
	}))
	t.Cleanup(srv.Close)
	const logMax = 2 << 20
	h := hookjettest.Start(t, hookjettest.WithTimeout(90*time.Second), hookjettest.WithConfig(func(c *config.Config) {
		c.Streams.MaxBytes = logMax
		c.Security.MaxPayloadBytes = 16 << 10
		c.Endpoints = append(c.Endpoints, endpointOf(c, "ok", srv.URL+"/ok", []string{">"}, nil))
	}))
	js := jsOf(t, h)
	ctx := context.Background()
	payload := []byte(`{"pad":"` + strings.Repeat("x", 8<<10) + `"}`)
	const n = 1000 // ~8 MiB: four times the log
	for i := range n {
		id := fmt.Sprintf("big-%d", i)
		m := nats.NewMsg("hookjet.events.big")
		m.Header.Set("Nats-Msg-Id", id)
		m.Data = payload
		for try := 0; ; try++ {
			_, err := js.PublishMsg(ctx, m)
			if err == nil {
				break
			}
			// Refused only while undelivered events fill the log.
			if try > 100 {
				t.Fatalf("publish %s refused for 10 s: %v", id, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	if !eventually(30*time.Second, func() bool { return st.distinct("/ok") == n }) {
		t.Fatalf("delivered %d of %d", st.distinct("/ok"), n)
	}
	stm, err := js.Stream(ctx, "HOOKJET_EVENTS")
	if err != nil {
		t.Fatal(err)
	}
	if b := stm.CachedInfo().State.Bytes; b > logMax {
		t.Fatalf("event log at %d bytes, above max_bytes %d", b, logMax)
	}
	if first := stm.CachedInfo().State.FirstSeq; first <= 1 {
		t.Fatalf("nothing was trimmed (first seq %d)", first)
	}
}

// A task stored for an endpoint that was then deleted through the API (a
// retry in flight in another process while the delete went through) never
// reaches a new endpoint created with the same id.
func TestOrphanedTaskSkipsANewEndpointWithTheSameID(t *testing.T) {
	st := newArrivals()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st.record(r.URL.Path, r.Header.Get("webhook-id"))
	}))
	t.Cleanup(srv.Close)
	h := hookjettest.Start(t, hookjettest.WithTimeout(60*time.Second))
	create := func() {
		body := `{"id":"x","url":"` + srv.URL + `/x","events":["none"]}`
		resp, err := http.Post(h.AdminURL()+"/api/v1/endpoints", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("create: %d", resp.StatusCode)
		}
	}
	create()
	time.Sleep(1100 * time.Millisecond) // created_at has a new value when made again
	req, _ := http.NewRequest(http.MethodDelete, h.AdminURL()+"/api/v1/endpoints/x", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	create()
	js := jsOf(t, h)
	task := func(id, created string) {
		m := nats.NewMsg("hookjet.tasks.x")
		m.Header.Set("Nats-Msg-Id", "task-x-"+id)
		m.Header.Set("Hookjet-Event-Id", id)
		m.Header.Set("Hookjet-Event-Type", "none")
		m.Header.Set("Hookjet-Endpoint", "x")
		m.Header.Set("Hookjet-Event-Key", "k"+id)
		m.Header.Set("Hookjet-Published", time.Now().UTC().Format(time.RFC3339Nano))
		if created != "" {
			m.Header.Set("Hookjet-Endpoint-Created", created)
		}
		m.Data = []byte(`{}`)
		if _, err := js.PublishMsg(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
	task("orphan", "1") // stored for an earlier endpoint x
	task("current", "")
	if !eventually(15*time.Second, func() bool { _, ok := st.at("/x", "current"); return ok }) {
		t.Fatal("the current task was not delivered")
	}
	time.Sleep(500 * time.Millisecond)
	if _, ok := st.at("/x", "orphan"); ok {
		t.Fatal("the new endpoint received the deleted endpoint's task")
	}
}

// A fan-out delivery in flight for long gets a guard (its retry stored
// ahead of time) and no longer keeps its event unacked, so a crash resends
// only what was in flight. The guard goes once the request ends: deleted
// after a success, replaced by the real retry after a failure.
func TestSlowDeliveryIsGuardedAndItsEventAcked(t *testing.T) {
	st := newArrivals()
	var g *gate
	var status atomic.Int32
	status.Store(http.StatusOK)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.wait(r)
		st.record(r.URL.Path, r.Header.Get("webhook-id"))
		w.WriteHeader(int(status.Load()))
	}))
	t.Cleanup(srv.Close)
	g = newGate(t)
	h := hookjettest.Start(t, hookjettest.WithTimeout(60*time.Second), hookjettest.WithConfig(func(c *config.Config) {
		c.Endpoints = append(c.Endpoints, endpointOf(c, "slow", srv.URL+"/slow", []string{">"}, func(s *config.Settings) { s.Timeout = 40 * time.Second }))
	}))
	js := jsOf(t, h)
	ctx := context.Background()
	tasks, err := js.Stream(ctx, "HOOKJET_TASKS")
	if err != nil {
		t.Fatal(err)
	}
	scheduled := func() uint64 {
		info, err := tasks.Info(ctx, natsjs.WithSubjectFilter("hookjet.sched.slow.*"))
		if err != nil {
			t.Fatal(err)
		}
		var n uint64
		for _, c := range info.State.Subjects {
			n += c
		}
		return n
	}
	acked := func() bool {
		c, err := js.Consumer(ctx, "HOOKJET_EVENTS", "hookjet-fanout")
		if err != nil {
			return false
		}
		info := c.CachedInfo()
		return info.NumAckPending == 0 && info.AckFloor.Stream >= 1
	}
	h.Publish("a", "held", []byte(`{}`))
	if !eventually(10*time.Second, func() bool { return acked() && scheduled() == 1 }) {
		t.Fatalf("while the request is held: event acked %v, guards %d; want acked and 1", acked(), scheduled())
	}
	if g.done.Load() != 0 {
		t.Fatal("the request ended early: the test proves nothing")
	}
	status.Store(http.StatusServiceUnavailable)
	g.open() // the request fails: its retry replaces the guard
	if !eventually(10*time.Second, func() bool { return st.count("/slow") >= 1 }) {
		t.Fatal("the request never ended")
	}
	time.Sleep(500 * time.Millisecond)
	if n := scheduled(); n > 1 {
		t.Fatalf("%d messages wait for the delivery, want the retry alone", n)
	}
	status.Store(http.StatusOK)
	if !eventually(20*time.Second, func() bool { return st.count("/slow") >= 2 && scheduled() == 0 }) {
		t.Fatalf("after the retry: %d requests, %d scheduled; want 2 and none", st.count("/slow"), scheduled())
	}
}

// One endpoint's waiting deliveries take at most half of
// streams.tasks_max_bytes: a dead endpoint that matches everything never
// leaves the others nowhere to park.
func TestOneEndpointTakesAtMostHalfTheTaskStream(t *testing.T) {
	const tasksMax = 1 << 20
	h := hookjettest.Start(t, hookjettest.WithTimeout(60*time.Second), hookjettest.WithConfig(func(c *config.Config) {
		c.Streams.TasksMaxBytes = tasksMax
		c.Security.MaxPayloadBytes = 16 << 10
		c.Endpoints = append(c.Endpoints,
			endpointOf(c, "hog", "http://127.0.0.1:1/hog", []string{"bulk"}, nil),
			endpointOf(c, "other", "http://127.0.0.1:1/other", []string{"small"}, nil))
	}))
	for _, id := range []string{"hog", "other"} {
		postOK(t, h.AdminURL()+"/api/v1/endpoints/"+id+"/disable")
	}
	time.Sleep(300 * time.Millisecond)
	payload := []byte(`{"pad":"` + strings.Repeat("x", 12<<10) + `"}`)
	const bulk = 100 // 1.3 MB: more than the whole stream
	for i := range bulk {
		h.Publish("bulk", fmt.Sprintf("bulk-%d", i), payload)
	}
	js := jsOf(t, h)
	ctx := context.Background()
	tasks, err := js.Stream(ctx, "HOOKJET_TASKS")
	if err != nil {
		t.Fatal(err)
	}
	count := func(subj string) uint64 { return subjectCount(t, tasks, subj) }
	if !eventually(15*time.Second, func() bool { return int(count("hookjet.tasks.hog"))+len(h.DeadLetters("hog")) == bulk }) {
		t.Fatalf("hog: %d tasks + %d dead letters, want %d", count("hookjet.tasks.hog"), len(h.DeadLetters("hog")), bulk)
	}
	if info, err := tasks.Info(ctx); err != nil || info.State.Bytes > tasksMax/2+(16<<10) {
		t.Fatalf("the hog's tasks take %d bytes, more than half of %d (err %v)", info.State.Bytes, tasksMax, err)
	}
	for i := range 10 {
		h.Publish("small", fmt.Sprintf("small-%d", i), payload)
	}
	if !eventually(15*time.Second, func() bool { return count("hookjet.tasks.other") == 10 }) {
		t.Fatalf("other: %d of 10 parked, %d dead letters", count("hookjet.tasks.other"), len(h.DeadLetters("other")))
	}
}
