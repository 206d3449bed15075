package jetstream

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hookjet/hookjet/api"
	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
)

// The dead letters' vocabulary is the admin API's (package api): ScanDLQ
// and the engine fill it in.
type (
	DLQEntry  = api.DLQEntry
	DLQFilter = api.DLQFilter
	DLQStat   = api.DLQStat
)

// DLQMsg is a dead letter read by ScanDLQ: its entry and the message.
type DLQMsg struct {
	Entry DLQEntry
	Msg   natsjs.Msg
}

// ScanDLQ calls fn for each dead letter matching f, oldest first, until fn
// returns false. It reads with an ordered consumer, so it never disturbs
// anything; the server removes that consumer seconds after the scan.
func ScanDLQ(ctx context.Context, js natsjs.JetStream, f DLQFilter, fn func(DLQMsg) bool) error {
	cfg := natsjs.OrderedConsumerConfig{DeliverPolicy: natsjs.DeliverAllPolicy, InactiveThreshold: ReadInactive}
	if f.Endpoint != "" {
		cfg.FilterSubjects = []string{DLQPrefix + f.Endpoint}
	}
	if !f.Since.IsZero() {
		cfg.DeliverPolicy = natsjs.DeliverByStartTimePolicy
		since := f.Since
		cfg.OptStartTime = &since
	}
	st, err := js.Stream(ctx, DLQStream)
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
	cons, err := js.OrderedConsumer(ctx, DLQStream, cfg)
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
			if (len(ids) == 0 || ids[e.EventID]) && (f.Keep == nil || f.Keep(e)) && !fn(DLQMsg{Entry: e, Msg: m}) {
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
	status, _ := strconv.Atoi(h.Get(HdrLastStatus)) // empty: no response, 0
	e := DLQEntry{
		Seq:          meta.Sequence.Stream,
		EventID:      h.Get(HdrEventID),
		EventType:    h.Get(HdrEventType),
		Endpoint:     h.Get(HdrEndpoint),
		Reason:       h.Get(HdrReason),
		Attempts:     attempts,
		LastStatus:   status,
		LastError:    h.Get(HdrLastError),
		FirstAttempt: h.Get(HdrFirstTry),
		LastAttempt:  h.Get(HdrLastTry),
		StoredAt:     meta.Timestamp.UTC().Format(time.RFC3339),
		Bytes:        len(m.Data()),
		Tenant:       h.Get(HdrTenant),
		Incarnation:  h.Get(HdrIncarnation),
		Stored:       meta.Timestamp,
	}
	if n, err := strconv.ParseInt(e.Incarnation, 10, 64); err == nil {
		e.EndpointCreatedAt = time.Unix(0, n).UTC().Format(time.RFC3339Nano)
	}
	return e
}

// DeadLetters lists dead letters matching f, oldest first.
func DeadLetters(ctx context.Context, js natsjs.JetStream, f DLQFilter) ([]DLQEntry, error) {
	out := []DLQEntry{}
	err := ScanDLQ(ctx, js, f, func(m DLQMsg) bool {
		out = append(out, m.Entry)
		return f.Limit <= 0 || len(out) < f.Limit
	})
	return out, err
}

// DeadLetterStats summarises the dead letters per endpoint, those keep
// accepts (nil: all).
func DeadLetterStats(ctx context.Context, js natsjs.JetStream, keep func(DLQEntry) bool) ([]DLQStat, error) {
	type acc struct {
		DLQStat
		attempts      int
		reasons, errs map[string]int
		statuses      map[int]int
	}
	by := map[string]*acc{}
	err := ScanDLQ(ctx, js, DLQFilter{Keep: keep}, func(m DLQMsg) bool {
		e := m.Entry
		a := by[e.Endpoint]
		if a == nil {
			a = &acc{DLQStat: DLQStat{Endpoint: e.Endpoint, First: e.StoredAt}, reasons: map[string]int{}, errs: map[string]int{}, statuses: map[int]int{}}
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

func mostCommon[K cmp.Ordered](m map[K]int) K {
	var best K
	n := 0
	for k, c := range m {
		if c > n || (c == n && k < best) {
			best, n = k, c
		}
	}
	return best
}

// DiscardDLQ deletes the dead letters matching f from HOOKJET_DLQ (with
// dryRun only counts them), calling discarded with each one deleted. It
// returns how many matched and how many were deleted; a dead letter that
// another process removed meanwhile is matched but not counted.
func DiscardDLQ(ctx context.Context, js natsjs.JetStream, f DLQFilter, dryRun bool, discarded func(DLQEntry)) (matched, deleted int, err error) {
	st, err := js.Stream(ctx, DLQStream)
	if err != nil {
		return 0, 0, fmt.Errorf("stream %s: %w", DLQStream, err)
	}
	var delErr error
	err = ScanDLQ(ctx, js, f, func(m DLQMsg) bool {
		matched++
		if dryRun {
			return true
		}
		if err := st.DeleteMsg(ctx, m.Entry.Seq); err != nil {
			if errors.Is(err, natsjs.ErrMsgNotFound) || strings.Contains(err.Error(), "no message found") {
				return true
			}
			delErr = fmt.Errorf("discard seq %d: %w", m.Entry.Seq, err)
			return false
		}
		deleted++
		if discarded != nil {
			discarded(m.Entry)
		}
		return true
	})
	if err == nil {
		err = delErr
	}
	return matched, deleted, err
}
