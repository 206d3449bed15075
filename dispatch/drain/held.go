package drain

import (
	"context"
	"strings"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/jetstream"
)

// heldTask is a task this process took and has not settled.
type heldTask struct {
	msg   natsjs.Msg
	since time.Time
}

// takenTasks are an endpoint's tasks that a process had taken, and not
// settled, when this one started.
type takenTasks struct {
	n     int
	until time.Time
}

// hold notes that msg is being worked on, until release.
func (r *Drainer) hold(msg natsjs.Msg) *heldTask {
	h := &heldTask{msg: msg, since: r.now()}
	r.mu.Lock()
	r.held[h] = struct{}{}
	r.mu.Unlock()
	return h
}

func (r *Drainer) release(h *heldTask) {
	r.mu.Lock()
	delete(r.held, h)
	r.mu.Unlock()
}

// KeepAlive tells JetStream, every jetstream.DrainHeartbeat until ctx ends,
// that the tasks this process holds are still being worked on. The
// dispatcher runs it on the send context, so it goes on through a
// shutdown's grace period.
func (r *Drainer) KeepAlive(ctx context.Context) {
	t := time.NewTicker(jetstream.DrainHeartbeat)
	defer t.Stop()
	var due []natsjs.Msg
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		cutoff := r.now().Add(-jetstream.DrainHeartbeat / 2)
		due = due[:0]
		r.mu.Lock()
		for h := range r.held {
			if h.since.Before(cutoff) {
				due = append(due, h.msg)
			}
		}
		r.mu.Unlock()
		for _, m := range due {
			if err := m.InProgress(); err != nil {
				r.log.Debug("keep a task alive", "err", err)
			}
		}
	}
}

// NoteTaken records, at start, the tasks that drain consumers have handed
// to a process and not had settled: a crashed process's come back within
// their AckWait. It returns how many, for how many endpoints, and the
// longest AckWait among them.
func (r *Drainer) NoteTaken(ctx context.Context) (tasks, endpoints int, wait time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	st, err := r.js.Stream(ctx, jetstream.TasksStream)
	if err != nil {
		return 0, 0, 0
	}
	now := r.now()
	l := st.ListConsumers(ctx)
	r.mu.Lock()
	defer r.mu.Unlock()
	for ci := range l.Info() {
		id, ok := strings.CutPrefix(ci.Name, jetstream.DrainPrefix)
		if !ok || ci.NumAckPending == 0 {
			continue
		}
		r.taken[id] = takenTasks{n: ci.NumAckPending, until: now.Add(ci.Config.AckWait)}
		tasks += ci.NumAckPending
		endpoints++
		wait = max(wait, ci.Config.AckWait)
	}
	if err := l.Err(); err != nil {
		r.log.Debug("list drain consumers", "err", err)
	}
	return tasks, endpoints, wait
}

// TakenWait is how many of id's tasks wait for JetStream to give them
// back from a process that took them before this one started, and until
// when at the latest; zero once that time has passed.
func (r *Drainer) TakenWait(id string, now time.Time) (int, time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.taken[id]
	if !ok {
		return 0, time.Time{}
	}
	if !now.Before(t.until) {
		delete(r.taken, id)
		return 0, time.Time{}
	}
	return t.n, t.until
}
