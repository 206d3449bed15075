package drain

import (
	"context"
	"sync"
	"testing"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/config"
)

// fakeEngine is an engine of fakeEndpoints, none of which takes a
// delivery: the due map's decisions can be watched without NATS.
type fakeEngine struct {
	mu  sync.Mutex
	eps map[string]*fakeEndpoint
}

func (f *fakeEngine) Endpoint(id string) Endpoint {
	f.mu.Lock()
	defer f.mu.Unlock()
	if e, ok := f.eps[id]; ok {
		return e
	}
	return nil
}

func (f *fakeEngine) LongestWait() time.Duration { return 0 }

type fakeEndpoint struct {
	ep        config.Endpoint
	disabled  bool
	notBefore time.Time
	admitAt   time.Time // AdmitNow's answer: look again then
	admits    int
}

func (e *fakeEndpoint) Gate(time.Time) (bool, time.Time) { return e.disabled, e.notBefore }
func (e *fakeEndpoint) Config() *config.Endpoint         { return &e.ep }
func (e *fakeEndpoint) Current() Endpoint                { return e }
func (e *fakeEndpoint) AdmitNow(context.Context, time.Duration) (Admission, time.Time) {
	e.admits++
	return nil, e.admitAt
}
func (e *fakeEndpoint) Admit() Admission { return nil }
func (e *fakeEndpoint) Offer(context.Context, natsjs.Msg, *natsjs.MsgMetadata, Admission, func(bool)) {
	panic("no task is fetched without an admission")
}
func (e *fakeEndpoint) Expire(*natsjs.RawStreamMsg) (bool, bool) { return true, false }
func (e *fakeEndpoint) Consumed(*natsjs.RawStreamMsg)            {}
func (e *fakeEndpoint) Found(uint64)                             {}

func newTestDrainer(now time.Time, eps map[string]*fakeEndpoint) *Drainer {
	return New(&fakeEngine{eps: eps}, nil, nil, func() time.Time { return now })
}

func (r *Drainer) dueAt(id string) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.due[id]
	return t, ok
}

// startDue defers a held or broken endpoint to when it can take deliveries,
// forgets one that is not the process's, and a drain that cannot admit a
// delivery ends at once, its endpoint due again when the engine says.
func TestStartDueFollowsTheEngine(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	held := &fakeEndpoint{notBefore: now.Add(time.Minute)}
	disabledOpen := &fakeEndpoint{disabled: true, notBefore: now.Add(30 * time.Second)}
	full := &fakeEndpoint{admitAt: now.Add(3 * time.Second)}
	r := newTestDrainer(now, map[string]*fakeEndpoint{"held": held, "disabled-open": disabledOpen, "full": full})
	for _, id := range []string{"held", "disabled-open", "full", "gone"} {
		r.Note(id, time.Time{})
	}
	r.startDue(context.Background())
	r.wg.Wait()
	tests := []struct {
		id   string
		want time.Time
		ok   bool
	}{
		{"held", held.notBefore, true},
		{"disabled-open", disabledOpen.notBefore, true}, // the breaker's time wins over the expiry check
		{"full", full.admitAt, true},
		{"gone", time.Time{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			got, ok := r.dueAt(tt.id)
			if ok != tt.ok || !got.Equal(tt.want) {
				t.Errorf("due = %v, %v; want %v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
	if held.admits != 0 || disabledOpen.admits != 0 || full.admits != 1 {
		t.Errorf("admissions asked: held %d, disabled-open %d, full %d; want 0, 0, 1", held.admits, disabledOpen.admits, full.admits)
	}
	if n := r.inUse(); n != 0 {
		t.Errorf("drain consumers accounted for = %d, want 0: none was made", n)
	}
}

// A note of a task keeps the earliest time, and one noted while a drain
// runs has the endpoint looked at again after it.
func TestNoteKeepsTheEarliest(t *testing.T) {
	now := time.Now()
	r := newTestDrainer(now, nil)
	r.Note("a", now.Add(time.Minute))
	r.Note("a", now.Add(time.Second))
	r.Note("a", now.Add(time.Hour))
	if got, _ := r.dueAt("a"); !got.Equal(now.Add(time.Second)) {
		t.Errorf("due = %v, want %v", got, now.Add(time.Second))
	}
	r.running["a"] = true
	r.Note("a", time.Time{})
	if !r.renoted["a"] {
		t.Error("a task noted while the drain ran is not looked at again")
	}
}

// Retries stored as schedules keep their endpoint due until they come back
// as tasks or are long overdue; at most maxSchedNoted are remembered, the
// earliest.
func TestStoredRetries(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	r := newTestDrainer(now, nil)
	r.NoteRetry("a", "k1", now.Add(10*time.Second))
	r.NoteRetry("a", "k2", now.Add(20*time.Second))
	if got := r.FirstRetry("a"); !got.Equal(now.Add(10 * time.Second)) {
		t.Errorf("FirstRetry = %v, want k1's", got)
	}
	r.took("a", "k1")
	if got := r.FirstRetry("a"); !got.Equal(now.Add(20 * time.Second)) {
		t.Errorf("FirstRetry after k1 was taken = %v, want k2's", got)
	}
	tests := []struct {
		name string
		at   time.Time
		want time.Time
	}{
		{"ahead: its due time", now, now.Add(20 * time.Second)},
		{"due: polled", now.Add(20 * time.Second), now.Add(20*time.Second + schedPoll)},
		{"overdue: still looked for", now.Add(20*time.Second + schedLate), now.Add(20*time.Second + schedLate + schedPoll)},
		{"long overdue: forgotten", now.Add(21*time.Second + schedLate), time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r.mu.Lock()
			got := r.nextRetry("a", tt.at)
			r.mu.Unlock()
			if !got.Equal(tt.want) {
				t.Errorf("nextRetry = %v, want %v", got, tt.want)
			}
		})
	}
	if _, ok := r.sched["a"]; ok {
		t.Error("an endpoint with no retry left is still remembered")
	}

	for i := range maxSchedNoted {
		r.NoteRetry("b", string(rune('A'+i%26))+string(rune('a'+i/26)), now.Add(time.Duration(i+2)*time.Second))
	}
	r.NoteRetry("b", "later", now.Add(time.Hour))
	r.NoteRetry("b", "earliest", now.Add(time.Second))
	if n := len(r.sched["b"]); n != maxSchedNoted {
		t.Errorf("retries remembered = %d, want %d", n, maxSchedNoted)
	}
	if _, ok := r.sched["b"]["later"]; ok {
		t.Error("a retry later than every remembered one displaced one")
	}
	if got := r.FirstRetry("b"); !got.Equal(now.Add(time.Second)) {
		t.Errorf("FirstRetry = %v, want the earliest noted", got)
	}
}

// The tasks another process held at start are reported until JetStream
// gives them back.
func TestTakenWait(t *testing.T) {
	now := time.Now()
	r := newTestDrainer(now, nil)
	r.taken["a"] = takenTasks{n: 3, until: now.Add(4 * time.Second)}
	if n, until := r.TakenWait("a", now); n != 3 || !until.Equal(now.Add(4*time.Second)) {
		t.Errorf("TakenWait = %d, %v; want 3 until the AckWait", n, until)
	}
	if n, _ := r.TakenWait("a", now.Add(4*time.Second)); n != 0 {
		t.Errorf("TakenWait after the AckWait = %d, want 0", n)
	}
	if _, ok := r.taken["a"]; ok {
		t.Error("tasks given back are still remembered")
	}
}

func TestExpiryCheck(t *testing.T) {
	tests := []struct{ maxAge, want time.Duration }{
		{0, time.Second},
		{2 * time.Second, time.Second},
		{time.Minute, 15 * time.Second},
		{24 * time.Hour, time.Minute},
	}
	for _, tt := range tests {
		if got := expiryCheck(tt.maxAge); got != tt.want {
			t.Errorf("expiryCheck(%v) = %v, want %v", tt.maxAge, got, tt.want)
		}
	}
}

// evictLeft deletes a consumer left standing to make room, counting it
// closing meanwhile; inUse counts each endpoint once.
func TestInUseCountsEachEndpointOnce(t *testing.T) {
	r := newTestDrainer(time.Now(), nil)
	r.running["a"] = true
	r.left["a"] = time.Now()
	r.closing["b"] = true
	r.left["c"] = time.Now()
	if n := r.inUse(); n != 3 {
		t.Errorf("inUse = %d, want 3 (a running with its consumer left, b closing, c left)", n)
	}
}
