package jetstream

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/attempt"
)

// CountsBucket is the KV bucket of the last hour's delivery counts: one key
// <unix-minute>.<process> per minute and process, holding
// {"delivered", "failed"} (attempts that succeeded, attempts that did not),
// kept for two hours. Every process writes its own keys and reads everyone's,
// so the summary's delivered_last_hour and failed_last_hour are the same
// from every process and survive restarts.
const CountsBucket = "HOOKJET_COUNTS"

// Tally timings: how often a process stores its counts, how long keys live,
// how long the start waits for the bucket's current keys.
const (
	tallyFlush = 2 * time.Second
	tallyTTL   = 2 * time.Hour
	tallyStart = 5 * time.Second
)

// minuteCount is one process's attempts in one minute.
type minuteCount struct {
	Delivered int64 `json:"delivered"`
	Failed    int64 `json:"failed"`
}

// Tally counts delivery attempts per minute for the last hour, shared
// through [CountsBucket]. Record takes the delivery log's records (and
// hands them on to next, the log writer, when there is one); LastHour sums
// every process's counts. A process's counts reach the others within
// tallyFlush; a crash loses at most that much of them. Close stores the
// last counts.
type Tally struct {
	kv   natsjs.KeyValue
	id   string
	next interface{ Record(attempt.Record) }
	log  *slog.Logger

	mu     sync.Mutex
	own    map[int64]*minuteCount
	dirty  map[int64]bool
	others map[int64]map[string]minuteCount // by minute, then process

	watch  natsjs.KeyWatcher
	stop   chan struct{}
	done   chan struct{}
	closed sync.Once
}

// NewTally creates or opens CountsBucket with replicas, reads its current
// keys and starts keeping them up to date. next (nil: none) receives every
// record after it is counted.
func NewTally(ctx context.Context, js natsjs.JetStream, replicas int, next interface{ Record(attempt.Record) }, log *slog.Logger) (*Tally, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var kv natsjs.KeyValue
	err := retry(ctx, log, "bucket "+CountsBucket, func(ctx context.Context) (err error) {
		kv, err = js.CreateOrUpdateKeyValue(ctx, natsjs.KeyValueConfig{
			Bucket: CountsBucket, Description: "hookjet: delivery attempts per minute and process, for the last hour",
			History: 1, TTL: tallyTTL, Storage: natsjs.FileStorage, Replicas: max(1, replicas),
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	var b [6]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	t := &Tally{kv: kv, id: hex.EncodeToString(b[:]), next: next, log: log,
		own: map[int64]*minuteCount{}, dirty: map[int64]bool{}, others: map[int64]map[string]minuteCount{},
		stop: make(chan struct{}), done: make(chan struct{})}
	// The watch outlives ctx (the start-up's): Close stops it.
	if t.watch, err = kv.WatchAll(context.WithoutCancel(ctx), natsjs.IgnoreDeletes()); err != nil {
		return nil, fmt.Errorf("kv %s: watch: %w", CountsBucket, err)
	}
	t.initial(ctx)
	go t.run()
	return t, nil
}

// initial applies the bucket's current keys, until the watch says it has
// sent them all or tallyStart passes.
func (t *Tally) initial(ctx context.Context) {
	deadline := time.After(tallyStart)
	for {
		select {
		case e, ok := <-t.watch.Updates():
			if !ok || e == nil {
				return
			}
			t.apply(e)
		case <-deadline:
			t.log.Warn("delivery counts: the current keys of " + CountsBucket + " did not all arrive; last-hour figures may be low for a while")
			return
		case <-ctx.Done():
			return
		}
	}
}

// Record counts r when it is an HTTP attempt, then hands it on.
func (t *Tally) Record(r attempt.Record) {
	var ok bool
	switch r.Class {
	case attempt.ClassSuccess:
		ok = true
	case attempt.ClassTransient, attempt.ClassRateLimited, attempt.ClassPermanent, attempt.ClassGone, attempt.ClassRejected, attempt.ClassAuth:
	default:
		t.forward(r)
		return // parked, dead-lettered, expired, discarded: not attempts
	}
	m := minuteOf(r.StartedAt)
	t.mu.Lock()
	c := t.own[m]
	if c == nil {
		c = &minuteCount{}
		t.own[m] = c
	}
	if ok {
		c.Delivered++
	} else {
		c.Failed++
	}
	t.dirty[m] = true
	t.mu.Unlock()
	t.forward(r)
}

func (t *Tally) forward(r attempt.Record) {
	if t.next != nil {
		t.next.Record(r)
	}
}

func minuteOf(at time.Time) int64 {
	if at.IsZero() {
		at = time.Now()
	}
	return at.Unix() / 60
}

// LastHour returns the attempts of every process over the 60 minutes up to
// now: those that delivered and those that failed.
func (t *Tally) LastHour(now time.Time) (delivered, failed int64) {
	cur := now.Unix() / 60
	t.mu.Lock()
	defer t.mu.Unlock()
	for m, c := range t.own {
		if cur-m < 60 && m <= cur {
			delivered, failed = delivered+c.Delivered, failed+c.Failed
		}
	}
	for m, procs := range t.others {
		if cur-m >= 60 || m > cur {
			continue
		}
		for _, c := range procs {
			delivered, failed = delivered+c.Delivered, failed+c.Failed
		}
	}
	return delivered, failed
}

// apply takes one key of the bucket (another process's minute).
func (t *Tally) apply(e natsjs.KeyValueEntry) {
	minute, proc, ok := strings.Cut(e.Key(), ".")
	m, err := strconv.ParseInt(minute, 10, 64)
	if !ok || err != nil || proc == t.id {
		return
	}
	var c minuteCount
	if json.Unmarshal(e.Value(), &c) != nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.others[m] == nil {
		t.others[m] = map[string]minuteCount{}
	}
	t.others[m][proc] = c
}

func (t *Tally) run() {
	defer close(t.done)
	tick := time.NewTicker(tallyFlush)
	defer tick.Stop()
	for {
		select {
		case e, ok := <-t.watch.Updates():
			if ok && e != nil {
				t.apply(e)
			}
		case <-tick.C:
			t.flush()
			t.prune(time.Now())
		case <-t.stop:
			t.flush()
			return
		}
	}
}

// flush stores this process's minutes that changed since the last flush;
// one that fails stays dirty for the next.
func (t *Tally) flush() {
	t.mu.Lock()
	puts := make(map[int64]minuteCount, len(t.dirty))
	for m := range t.dirty {
		puts[m] = *t.own[m]
	}
	clear(t.dirty)
	t.mu.Unlock()
	for m, c := range puts {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		b, _ := json.Marshal(c)
		_, err := t.kv.Put(ctx, strconv.FormatInt(m, 10)+"."+t.id, b)
		cancel()
		if err != nil {
			t.mu.Lock()
			t.dirty[m] = true
			t.mu.Unlock()
			t.log.Debug("delivery counts not stored", "bucket", CountsBucket, "err", err)
		}
	}
}

// prune forgets minutes past the hour.
func (t *Tally) prune(now time.Time) {
	cur := now.Unix() / 60
	t.mu.Lock()
	defer t.mu.Unlock()
	for m := range t.own {
		if cur-m > 61 && !t.dirty[m] {
			delete(t.own, m)
		}
	}
	for m := range t.others {
		if cur-m > 61 {
			delete(t.others, m)
		}
	}
}

// Close stores the last counts and stops the watch. Call it before the
// NATS connection closes.
func (t *Tally) Close() {
	t.closed.Do(func() {
		close(t.stop)
		<-t.done
		_ = t.watch.Stop()
	})
}
