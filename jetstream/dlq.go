package jetstream

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/tracing"
)

// DLQEntry is one dead letter as the admin API lists it. The payload is not
// part of it; `nats stream get HOOKJET_DLQ <seq>` shows it.
type DLQEntry struct {
	Seq          uint64 `json:"seq"`
	EventID      string `json:"event_id"`
	EventType    string `json:"event_type"`
	Endpoint     string `json:"endpoint"`
	Reason       string `json:"reason"`
	Attempts     int    `json:"attempts"`
	LastStatus   string `json:"last_status"`
	LastError    string `json:"last_error"`
	FirstAttempt string `json:"first_attempt"`
	LastAttempt  string `json:"last_attempt"`
	StoredAt     string `json:"stored_at"`
	Bytes        int    `json:"bytes"`
}

// DLQFilter selects dead letters. Zero fields match everything.
type DLQFilter struct {
	Endpoint string
	Since    time.Time // stored at or after
	Until    time.Time // stored before
	IDs      []string  // event ids
	Limit    int       // 0: no limit
}

// DLQStat summarises one endpoint's dead letters.
type DLQStat struct {
	Endpoint         string  `json:"endpoint"`
	Count            int     `json:"count"`
	MostCommonReason string  `json:"most_common_reason"`
	MostCommonError  string  `json:"most_common_error"`
	MostCommonStatus string  `json:"most_common_status"`
	First            string  `json:"first"`
	Last             string  `json:"last"`
	AverageAttempts  float64 `json:"average_attempts"`
}

// ReplayRequest selects dead letters to send again.
type ReplayRequest struct {
	Endpoint string   `json:"endpoint"`
	Since    string   `json:"since"`
	Until    string   `json:"until"`
	IDs      []string `json:"ids"`
	DryRun   bool     `json:"dry_run"`
}

// ReplayResult reports a replay.
type ReplayResult struct {
	Matched  int      `json:"matched"`
	Replayed int      `json:"replayed"`
	Skipped  int      `json:"skipped,omitempty"`
	Errors   []string `json:"errors,omitempty"`
}

// ParseTime accepts RFC 3339 or a duration meaning "that long ago".
func ParseTime(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("%w: %q is neither an RFC 3339 time nor a duration such as 2h", ErrBadRequest, s)
}

type dlqMsg struct {
	entry DLQEntry
	msg   natsjs.Msg
}

// scanDLQ calls fn for each dead letter matching f, oldest first, until fn
// returns false. It reads with an ordered consumer, so it never disturbs
// anything and needs no cleanup.
func (d *Dispatcher) scanDLQ(ctx context.Context, f DLQFilter, fn func(dlqMsg) bool) error {
	cfg := natsjs.OrderedConsumerConfig{DeliverPolicy: natsjs.DeliverAllPolicy}
	if f.Endpoint != "" {
		cfg.FilterSubjects = []string{DLQPrefix + f.Endpoint}
	}
	if !f.Since.IsZero() {
		cfg.DeliverPolicy = natsjs.DeliverByStartTimePolicy
		since := f.Since
		cfg.OptStartTime = &since
	}
	st, err := d.o.JS.Stream(ctx, DLQStream)
	if err != nil {
		return fmt.Errorf("stream %s: %w", DLQStream, err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		return fmt.Errorf("stream info %s: %w", DLQStream, err)
	}
	if info.State.Msgs == 0 {
		return nil
	}
	last := info.State.LastSeq
	cons, err := d.o.JS.OrderedConsumer(ctx, DLQStream, cfg)
	if err != nil {
		return fmt.Errorf("read %s: %w", DLQStream, err)
	}
	ids := make(map[string]bool, len(f.IDs))
	for _, id := range f.IDs {
		ids[id] = true
	}
	// Each batch is read to its end even after fn has had enough, so that no
	// fetch is left waiting behind us.
	for done := false; !done; {
		batch, err := cons.FetchNoWait(256)
		if err != nil {
			return fmt.Errorf("read %s: %w", DLQStream, err)
		}
		n := 0
		for m := range batch.Messages() {
			n++
			if done {
				continue
			}
			meta, err := m.Metadata()
			if err != nil {
				continue
			}
			if !f.Until.IsZero() && !meta.Timestamp.Before(f.Until) {
				done = true
				continue
			}
			e := entryOf(m, meta)
			if (len(ids) == 0 || ids[e.EventID]) && !fn(dlqMsg{entry: e, msg: m}) {
				done = true
			}
			if meta.Sequence.Stream >= last || meta.NumPending == 0 {
				done = true
			}
		}
		if err := batch.Error(); err != nil && !errors.Is(err, natsjs.ErrNoMessages) && !errors.Is(err, nats.ErrTimeout) {
			return fmt.Errorf("read %s: %w", DLQStream, err)
		}
		if n == 0 {
			done = true
		}
	}
	return nil
}

func entryOf(m natsjs.Msg, meta *natsjs.MsgMetadata) DLQEntry {
	h := m.Headers()
	attempts, _ := strconv.Atoi(h.Get(HdrAttempts))
	return DLQEntry{
		Seq:          meta.Sequence.Stream,
		EventID:      h.Get(HdrEventID),
		EventType:    h.Get(HdrEventType),
		Endpoint:     h.Get(HdrEndpoint),
		Reason:       h.Get(HdrReason),
		Attempts:     attempts,
		LastStatus:   h.Get(HdrLastStatus),
		LastError:    h.Get(HdrLastError),
		FirstAttempt: h.Get(HdrFirstTry),
		LastAttempt:  h.Get(HdrLastTry),
		StoredAt:     meta.Timestamp.UTC().Format(time.RFC3339),
		Bytes:        len(m.Data()),
	}
}

// DeadLetters lists dead letters matching f, oldest first.
func (d *Dispatcher) DeadLetters(ctx context.Context, f DLQFilter) ([]DLQEntry, error) {
	out := []DLQEntry{}
	err := d.scanDLQ(ctx, f, func(m dlqMsg) bool {
		out = append(out, m.entry)
		return f.Limit <= 0 || len(out) < f.Limit
	})
	return out, err
}

// DeadLetterStats summarises the dead letters per endpoint.
func (d *Dispatcher) DeadLetterStats(ctx context.Context) ([]DLQStat, error) {
	type acc struct {
		DLQStat
		attempts                int
		reasons, errs, statuses map[string]int
	}
	by := map[string]*acc{}
	err := d.scanDLQ(ctx, DLQFilter{}, func(m dlqMsg) bool {
		e := m.entry
		a := by[e.Endpoint]
		if a == nil {
			a = &acc{DLQStat: DLQStat{Endpoint: e.Endpoint, First: e.StoredAt}, reasons: map[string]int{}, errs: map[string]int{}, statuses: map[string]int{}}
			by[e.Endpoint] = a
		}
		a.Count++
		a.Last = e.StoredAt
		a.attempts += e.Attempts
		a.reasons[e.Reason]++
		a.errs[e.LastError]++
		a.statuses[e.LastStatus]++
		return true
	})
	if err != nil {
		return nil, err
	}
	out := make([]DLQStat, 0, len(by))
	for _, a := range by {
		a.MostCommonReason = mostCommon(a.reasons)
		a.MostCommonError = mostCommon(a.errs)
		a.MostCommonStatus = mostCommon(a.statuses)
		a.AverageAttempts = float64(a.attempts) / float64(a.Count)
		out = append(out, a.DLQStat)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Endpoint < out[j].Endpoint })
	return out, nil
}

func mostCommon(m map[string]int) string {
	best, n := "", 0
	for k, c := range m {
		if c > n || (c == n && k < best) {
			best, n = k, c
		}
	}
	return best
}

// Replay sends matching dead letters back to their endpoint (and only that
// endpoint) as tasks on hookjet.tasks.<endpoint>. Each keeps its event id, so
// its webhook-id, and starts with fresh attempts and a fresh retry.max_age.
// A dead letter is removed from HOOKJET_DLQ only after its task is stored.
// Matches are read and sent in batches, so memory does not grow with the
// number of dead letters.
func (d *Dispatcher) Replay(ctx context.Context, r ReplayRequest) (ReplayResult, error) {
	now := d.now()
	since, err := ParseTime(r.Since, now)
	if err != nil {
		return ReplayResult{}, fmt.Errorf("since: %w", err)
	}
	until, err := ParseTime(r.Until, now)
	if err != nil {
		return ReplayResult{}, fmt.Errorf("until: %w", err)
	}
	if r.Endpoint == "" && len(r.IDs) == 0 && r.Since == "" && r.Until == "" {
		return ReplayResult{}, fmt.Errorf("%w: name an endpoint, ids or a time range (replaying everything must be asked for with since)", ErrBadRequest)
	}
	if r.Endpoint != "" && d.endpoint(r.Endpoint) == nil {
		return ReplayResult{}, fmt.Errorf("%w: %q", ErrUnknownEndpoint, r.Endpoint)
	}
	st, err := d.o.JS.Stream(ctx, DLQStream)
	if err != nil {
		return ReplayResult{}, fmt.Errorf("stream %s: %w", DLQStream, err)
	}
	var res ReplayResult
	var sendErr error
	err = d.scanDLQ(ctx, DLQFilter{Endpoint: r.Endpoint, Since: since, Until: until, IDs: r.IDs}, func(m dlqMsg) bool {
		res.Matched++
		if r.DryRun {
			return true
		}
		e := m.entry
		if d.endpoint(e.Endpoint) == nil {
			res.Skipped++
			res.Errors = append(res.Errors, fmt.Sprintf("seq %d: endpoint %q is not configured", e.Seq, e.Endpoint))
			return true
		}
		ev := event{id: e.EventID, typ: e.EventType, key: "r" + strconv.FormatUint(e.Seq, 10), at: d.now()}
		out := taskMsg(e.Endpoint, &ev, attemptState{}, m.msg.Data(), m.msg.Headers(), time.Time{})
		// tracing (issue 16): a replay span, child of the dead letter's traceparent; the replay carries its own.
		span := d.o.Tracer.StartReplay(ctx, tracing.Header(m.msg.Headers()), tracing.Replay{Endpoint: e.Endpoint, EventType: e.EventType, EventID: e.EventID, Seq: e.Seq})
		span.Inject(tracing.Header(out.Header))
		sendErr = d.publish(out)
		span.End(sendErr) // tracing (issue 16)
		if sendErr != nil {
			sendErr = fmt.Errorf("replay seq %d: %w", e.Seq, sendErr)
			return false
		}
		d.o.Metrics.Published.Inc()
		d.drains.note(e.Endpoint, time.Time{})
		if err := st.DeleteMsg(ctx, e.Seq); err != nil && !errors.Is(err, natsjs.ErrMsgNotFound) {
			sendErr = fmt.Errorf("remove replayed dead letter %d: %w", e.Seq, err)
			return false
		}
		res.Replayed++
		return true
	})
	if err == nil {
		err = sendErr
	}
	if err != nil {
		return res, err
	}
	d.log.Info("replayed dead letters", "matched", res.Matched, "replayed", res.Replayed, "skipped", res.Skipped)
	return res, nil
}
