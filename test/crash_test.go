package test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/cli"
	"github.com/hookjet/hookjet/dedupe"
	hjs "github.com/hookjet/hookjet/jetstream"
	"github.com/hookjet/hookjet/state"
)

// `hookjet serve` (embedded NATS) is killed with SIGKILL while it delivers a
// backlog and started again on the same data_dir. Every accepted event still
// arrives; no event the ledger had recorded as delivered before the kill is
// sent again; and the duplicates are no more than what could be in flight at
// the moment of the kill.
func TestCrashSIGKILLUnderLoad(t *testing.T) {
	const (
		n = 2000
		// maxInFlight is defaults.max_in_flight, which writeConfig leaves at
		// its default (16); the config has one endpoint.
		maxInFlight = 16
		endpoints   = 1
		// A message holds its endpoint's in-flight slot from the request
		// until its 2xx is in the ledger and acked, so at most maxInFlight
		// per endpoint can have reached the receiver without being recorded:
		// only those can be sent again after the restart. Messages in the
		// client's pull buffer were never sent.
		maxDuplicates = maxInFlight * endpoints
	)
	start := time.Now()
	r := newReceiver(t, []string{secretA, secretB}, func(w http.ResponseWriter, _ delivery) {
		time.Sleep(5 * time.Millisecond)
		w.WriteHeader(http.StatusOK)
	})
	dir, cfgPath, natsAddr, adminAddr := binaryConfig(t, r.URL)
	p := startBinary(t, cfgPath, adminAddr)

	nc, err := nats.Connect("nats://"+natsAddr, nats.NoReconnect())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := natsjs.New(nc, natsjs.WithPublishAsyncMaxPending(n), natsjs.WithPublishAsyncTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	ids := eventIDs("evt_kill", n)
	futures := make([]natsjs.PubAckFuture, n)
	const publishers = 4
	errs := make(chan error, publishers)
	for w := range publishers {
		go func() {
			for i := w; i < n; i += publishers {
				m := nats.NewMsg(hjs.EventsPrefix + "order.created")
				m.Data = fmt.Appendf(nil, `{"i":%d}`, i)
				f, err := js.PublishMsgAsync(m, natsjs.WithMsgID(ids[i]))
				if err != nil {
					errs <- fmt.Errorf("publish %s: %w", ids[i], err)
					return
				}
				futures[i] = f
			}
			errs <- nil
		}()
	}
	for range publishers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(15 * time.Second):
		t.Fatalf("PubAcks outstanding after 15s: %d", js.PublishAsyncPending())
	}
	for i, f := range futures {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			t.Fatalf("publish %s: %v", ids[i], err)
		}
	}
	nc.Close()
	whenAcked := r.distinct()

	checkFor(t, 15*time.Second, time.Millisecond, func() error {
		if got := r.distinct(); got < 500 {
			return fmt.Errorf("received %d", got)
		}
		return nil
	})
	_ = p.signal(t, syscall.SIGKILL)
	atKill := r.distinct()
	t.Logf("SIGKILL after %d events arrived (%d when every PubAck was in)", atKill, whenAcked)
	if atKill >= n {
		t.Fatalf("every event arrived before the kill: the test proves nothing")
	}
	inLedger := deliveredInLedger(t, filepath.Join(dir, "data", "state.db"), "sink", ids)

	p = startBinary(t, cfgPath, adminAddr)
	restarted := time.Now()
	waitAllDelivered(t, r, ids, 45*time.Second)
	t.Logf("all %d events arrived %s after the restart", n, time.Since(restarted).Round(time.Millisecond))
	// Wait until nothing can arrive any more (messages the dead process held
	// come back after AckWait and are then suppressed by the ledger), then
	// count.
	nc2, js2 := connectJS(t, "nats://"+natsAddr)
	waitSettled(t, js2, "sink", 45*time.Second)
	nc2.Close()

	var dups int
	for _, id := range ids {
		extra := r.requestsFor(id) - 1
		dups += extra
		if extra > 0 && inLedger[id] {
			t.Errorf("%s was in the ledger as delivered before the kill, yet sent %d more times", id, extra)
		}
	}
	t.Logf("%d requests for %d events: %d duplicates (bound %d); at the kill %d events had arrived and %d were in the ledger; took %s",
		r.count(), n, dups, maxDuplicates, atKill, len(inLedger), time.Since(start).Round(time.Millisecond))
	if dups > maxDuplicates {
		t.Errorf("%d duplicate deliveries after SIGKILL, more than the %d that can be in flight (max_in_flight %d x %d endpoint); "+
			"%d events had been answered 2xx but were not yet in the ledger", dups, maxDuplicates, maxInFlight, endpoints, atKill-len(inLedger))
	}
	if err := p.signal(t, syscall.SIGTERM); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}
}

// deliveredInLedger opens the ledger of a stopped process and returns which
// of ids it holds as delivered to endpoint.
func deliveredInLedger(t *testing.T, path, endpoint string, ids []string) map[string]bool {
	t.Helper()
	db, err := state.Open(path, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	l, err := dedupe.NewLedger(db, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, id := range ids {
		ok, err := l.Delivered(endpoint, id)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			out[id] = true
		}
	}
	return out
}

// hookjet "crashes" after a dead letter's copy is stored in HOOKJET_DLQ and
// before the event is settled. After a
// restart on the same data the message is handled again, and HOOKJET_DLQ still
// holds exactly one copy: the copy's deterministic Nats-Msg-Id makes the second
// store a duplicate.
//
// The crash: hookjet runs on a NATS server owned by the test. The first
// OnDeadLetter call shuts that server down before returning, so hookjet's
// attempt-state write and its Term cannot reach JetStream (the Term waits in
// the client's reconnect buffer and is dropped when hookjet is shut down
// before the server comes back).
func TestDeadLetterCrashBetweenCopyAndRemoval(t *testing.T) {
	start := time.Now()
	ns := startNATSNode(t, "ext", standaloneNATS(t))
	r := newReceiver(t, []string{secretA, secretB}, func(w http.ResponseWriter, _ delivery) {
		w.WriteHeader(http.StatusUnprocessableEntity)
	})
	cfg := testConfig(t, t.TempDir(), "", endpointYAML{ID: "strict", URL: r.URL})
	cfg.NATS.URL = ns.url()

	var calls atomic.Int32
	crashed := make(chan struct{})
	h := startHookjet(t, cfg, cli.Options{OnDeadLetter: func(endpoint, eventID string) {
		if calls.Add(1) == 1 {
			ns.shutdown()
			close(crashed)
		}
	}})
	h.publish("order.created", "evt_dead", []byte(`{"bad":true}`))
	select {
	case <-crashed:
	case <-time.After(10 * time.Second):
		t.Fatal("the dead letter was never stored")
	}
	h.stop()
	if got := r.count(); got != 1 {
		t.Fatalf("requests before the crash: %d", got)
	}

	ns.start()
	h = startHookjet(t, cfg, cli.Options{OnDeadLetter: func(string, string) { calls.Add(1) }})
	// The message comes back once its AckWait (30s at least) has passed.
	checkFor(t, 45*time.Second, 50*time.Millisecond, func() error {
		if c := calls.Load(); c < 2 {
			return fmt.Errorf("dead-letter calls %d, requests %d", c, r.count())
		}
		return nil
	})
	waitSettled(t, h.js, "strict", 10*time.Second)

	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	// HOOKJET_EVENTS is the event log: it keeps the event (for redelivery;
	// beside it, once the minute is over, hookjet's own
	// hookjet.dead_letter, not counted here); nothing waits in
	// HOOKJET_TASKS.
	for name, want := range map[string]uint64{hjs.DLQStream: 1, hjs.EventsStream: 1, hjs.TasksStream: 0} {
		s, err := h.js.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		si, err := s.Info(ctx, natsjs.WithSubjectFilter("hookjet.>"))
		if err != nil {
			t.Fatal(err)
		}
		msgs := si.State.Msgs
		if name == hjs.EventsStream {
			msgs = 0
			for subj, n := range si.State.Subjects {
				if !strings.HasPrefix(subj, hjs.EventsPrefix+"hookjet.") {
					msgs += n
				}
			}
		}
		if msgs != want {
			t.Errorf("stream %s holds %d messages, want %d (%v)", name, msgs, want, si.State.Subjects)
		}
	}
	dl := h.dlq("?endpoint=strict")
	if len(dl) != 1 || dl[0].EventID != "evt_dead" || dl[0].Reason != "permanent" || dl[0].LastStatus != 422 {
		t.Errorf("dead letters: %+v", dl)
	}
	if got := r.count(); got > 2 {
		t.Errorf("the permanent failure was sent %d times, want at most 2", got)
	}
	t.Logf("requests %d, dead-letter calls %d, took %s", r.count(), calls.Load(), time.Since(start).Round(time.Millisecond))
}

// hookjet is killed with SIGKILL in the middle of fanning out a backlog to a
// healthy endpoint and to a dead one whose deliveries become tasks. After a
// restart every event reaches the healthy endpoint, and every event has a
// task (parked or scheduled) for the dead one: none is lost. A task stored
// before the kill and stored again for the redelivered event is
// deduplicated by its Nats-Msg-Id; only a redelivered event attempted anew
// (the breaker's open state not yet flushed at the kill) can get a second,
// so duplicates stay within the dead endpoint's max_in_flight.
func TestCrashMidFanOutLosesNoTask(t *testing.T) {
	const n, maxInFlight = 1000, 16
	// Past n/3 requests the receiver holds the rest until the kill, so the
	// kill lands mid-fan-out however fast or busy the machine is.
	var answered atomic.Int64
	held := make(chan struct{})
	var releaseOnce sync.Once
	release := func() { releaseOnce.Do(func() { close(held) }) }
	t.Cleanup(release)
	r := newReceiver(t, []string{secretA, secretB}, func(w http.ResponseWriter, _ delivery) {
		if answered.Add(1) > n/3 {
			<-held
		}
		time.Sleep(20 * time.Millisecond)
		w.WriteHeader(http.StatusOK)
	})
	_, cfgPath, natsAddr, adminAddr := binaryConfig(t, r.URL)
	f, err := os.OpenFile(cfgPath, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "  - id: dead\n    url: http://127.0.0.1:%d/\n    secrets: [%s]\n    breaker: {failure_threshold: 1, cooldown: 1h}\n    retry: {base: 1h, cap: 1h, max_age: 24h}\n", freePort(t), secretA)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	p := startBinary(t, cfgPath, adminAddr)
	nc, js := connectJS(t, "nats://"+natsAddr)
	ids := eventIDs("evt_mid", n)
	var st pubStats
	if err := publishRetrying(t.Context(), js, ids, 4, 0, &st); err != nil {
		t.Fatal(err)
	}
	nc.Close()
	checkFor(t, 15*time.Second, time.Millisecond, func() error {
		if got := r.distinct(); got < n/3 {
			return fmt.Errorf("received %d", got)
		}
		return nil
	})
	_ = p.signal(t, syscall.SIGKILL)
	atKill := r.distinct()
	if atKill >= n {
		t.Fatal("every event arrived before the kill: the test proves nothing")
	}
	release()
	startBinary(t, cfgPath, adminAddr)
	waitAllDelivered(t, r, ids, 60*time.Second)
	_, js2 := connectJS(t, "nats://"+natsAddr)
	var perEvent map[string]int
	checkFor(t, 60*time.Second, 200*time.Millisecond, func() error {
		if err := fanoutSettled(t.Context(), js2); err != nil {
			return err
		}
		if perEvent, err = tasksOf(t, js2, "dead"); err != nil {
			return err
		}
		if len(perEvent) != n {
			return fmt.Errorf("%d of %d events have a task for the dead endpoint", len(perEvent), n)
		}
		return nil
	})
	dups := 0
	for _, c := range perEvent {
		dups += c - 1
	}
	t.Logf("killed after %d of %d events arrived; %d duplicate tasks, %d duplicate requests to the healthy endpoint", atKill, n, dups, r.count()-r.distinct())
	if dups > maxInFlight {
		t.Fatalf("%d duplicate tasks, more than max_in_flight (%d)", dups, maxInFlight)
	}
}

// tasksOf counts the tasks (parked and scheduled) of endpoint per event id,
// reading HOOKJET_TASKS directly.
func tasksOf(t *testing.T, js natsjs.JetStream, endpoint string) (map[string]int, error) {
	st, err := js.Stream(t.Context(), hjs.TasksStream)
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for seq := uint64(1); ; {
		m, err := st.GetMsg(t.Context(), seq, natsjs.WithGetMsgSubject(">"))
		if errors.Is(err, natsjs.ErrMsgNotFound) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if m.Subject == hjs.TasksPrefix+endpoint || strings.HasPrefix(m.Subject, hjs.SchedPrefix+endpoint+".") {
			out[m.Header.Get(hjs.HdrEventID)]++
		}
		seq = m.Sequence + 1
	}
}
