package jetstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/api"
	"github.com/hookjet/hookjet/attempt"
)

// LogReader answers the delivery log's questions with the stream's direct
// get API (server/jetstream_api.go JSApiMsgGetRequest), so every lookup
// goes through the server's subject index and time index:
//
//   - an event's records: one multi-last get of hookjet.log.*.<token>.>,
//     which visits only the blocks that hold them (a record per subject);
//   - an endpoint's records, newest first: the cursor is a stream sequence;
//     a page reads the endpoint's records forward inside windows that step
//     backwards from the cursor, each sized from the density seen so far,
//     so a page costs about its own records, never the endpoint's history;
//   - since/until become sequences through the time index (start_time).
//
// Batch gets with a subject filter are avoided on purpose: the server
// counts the filter's pending messages to the end of the stream for each.
type LogReader struct {
	nc *nats.Conn
	js natsjs.JetStream
}

// NewLogReader reads HOOKJET_LOG through nc.
func NewLogReader(nc *nats.Conn, js natsjs.JetStream) *LogReader { return &LogReader{nc: nc, js: js} }

// LogQuery selects records for [LogReader.Page] and [LogReader.Export]: the
// admin API's query ([api.LogQuery]).
type LogQuery = api.LogQuery

// Paging bounds.
const (
	// pageScanBudget bounds the records one page examines; a selective
	// Match filter then returns a short page with a cursor to go on.
	pageScanBudget = 50000
	// pageSeqBudget bounds the span of sequences one page reaches back
	// over: an endpoint with no record there (a sparse, idle or unknown
	// one) gets a short page and a cursor instead of a scan of the log.
	pageSeqBudget = 1 << 21
	maxWindow     = 1 << 24
	multiLastMax  = 1024
)

// msgGetRequest is the client's half of JSApiMsgGetRequest.
type msgGetRequest struct {
	Seq          uint64     `json:"seq,omitempty"`
	NextFor      string     `json:"next_by_subj,omitempty"`
	Batch        int        `json:"batch,omitempty"`
	StartTime    *time.Time `json:"start_time,omitempty"`
	MultiLastFor []string   `json:"multi_last,omitempty"`
	NoHeaders    bool       `json:"no_hdr,omitempty"`
}

const directGetPrefix = "$JS.API.DIRECT.GET."

// errNoMsg is a direct get's 404.
var errNoMsg = errors.New("no message")

// get makes a single-message direct get.
func (r *LogReader) get(ctx context.Context, req msgGetRequest) (*nats.Msg, error) {
	data, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	m, err := r.nc.RequestWithContext(ctx, directGetPrefix+LogStream, data)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", LogStream, err)
	}
	if err := statusErr(m); err != nil {
		return nil, err
	}
	return m, nil
}

// getBatch makes a batch or multi-last direct get and returns its messages.
func (r *LogReader) getBatch(ctx context.Context, req msgGetRequest) ([]*nats.Msg, error) {
	data, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	inbox := r.nc.NewRespInbox()
	sub, err := r.nc.SubscribeSync(inbox)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", LogStream, err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := r.nc.PublishRequest(directGetPrefix+LogStream, inbox, data); err != nil {
		return nil, fmt.Errorf("read %s: %w", LogStream, err)
	}
	var out []*nats.Msg
	for {
		m, err := sub.NextMsgWithContext(ctx)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", LogStream, err)
		}
		if len(m.Data) == 0 && m.Header.Get("Status") != "" {
			if err := statusErr(m); err != nil && !errors.Is(err, errNoMsg) {
				return nil, err
			}
			return out, nil // 204 end of batch, or 404 nothing
		}
		out = append(out, m)
	}
}

func withDefaultTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, 10*time.Second)
}

// statusErr turns a direct get's status header into an error.
func statusErr(m *nats.Msg) error {
	switch m.Header.Get("Status") {
	case "", "204":
		return nil
	case "404":
		return errNoMsg
	case "408":
		return fmt.Errorf("read %s: timeout", LogStream)
	case "413":
		return fmt.Errorf("read %s: too many records to return at once", LogStream)
	default:
		return fmt.Errorf("read %s: %s %s", LogStream, m.Header.Get("Status"), m.Header.Get("Description"))
	}
}

// recordOf decodes a stored record and its sequence.
func recordOf(m *nats.Msg) (attempt.Record, uint64, error) {
	seq, _ := strconv.ParseUint(m.Header.Get("Nats-Sequence"), 10, 64)
	var rec attempt.Record
	if err := json.Unmarshal(m.Data, &rec); err != nil {
		return rec, seq, fmt.Errorf("record %d: %w", seq, err)
	}
	rec.Seq = seq
	return rec, seq, nil
}

// EventRecords returns every record of event id still in the log, oldest
// first: every delivery's, redeliveries, replays and tests included.
//
// One multi-last get of hookjet.log.*.<token>.> finds them, each record
// being the only one on its subject (see LogSubject). Records written
// before [attempt.Record.Delivery] existed shared their subject with a
// redelivery's or replay's records of the same attempt number; for each
// such subject (its last record has no delivery) every message on it is
// read as well, one batch get per subject from the subject's first
// message, which the subject index finds. That costs nothing once such
// records have aged out (log.max_age).
func (r *LogReader) EventRecords(ctx context.Context, id string) ([]attempt.Record, error) {
	msgs, err := r.getBatch(ctx, msgGetRequest{MultiLastFor: []string{LogPrefix + "*." + EventToken(id) + ".>"}, Batch: multiLastMax})
	if err != nil {
		return nil, err
	}
	out := make([]attempt.Record, 0, len(msgs))
	var older []string
	for _, m := range msgs {
		rec, _, err := recordOf(m)
		if err != nil {
			continue
		}
		out = append(out, rec)
		if subj := m.Header.Get("Nats-Subject"); rec.Delivery == "" && strings.Count(subj, ".") == olderLayoutDots {
			older = append(older, subj)
		}
	}
	if len(older) > 0 {
		more, err := r.subjects(ctx, older)
		if err != nil {
			return nil, err
		}
		out = append(out, more...)
	}
	slices.SortFunc(out, func(a, b attempt.Record) int { return cmpSeq(a.Seq, b.Seq) })
	return slices.CompactFunc(out, func(a, b attempt.Record) bool { return a.Seq == b.Seq }), nil
}

// olderLayoutDots is the number of dots in a subject of the first
// delivery's layout, hookjet.log.<endpoint>.<event-token>.<n>.
const olderLayoutDots = 4

// subjects reads every message on each of subjs (literal subjects), at
// most 8 subjects at a time.
func (r *LogReader) subjects(ctx context.Context, subjs []string) ([]attempt.Record, error) {
	parts := make([][]attempt.Record, len(subjs))
	errs := make([]error, len(subjs))
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i, subj := range subjs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			msgs, err := r.getBatch(ctx, msgGetRequest{NextFor: subj, Batch: multiLastMax})
			if err != nil {
				errs[i] = err
				return
			}
			for _, m := range msgs {
				if rec, _, err := recordOf(m); err == nil {
					parts[i] = append(parts[i], rec)
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return slices.Concat(parts...), nil
}

func cmpSeq(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// bounds returns the sequences q covers, first..last inclusive; ok is
// false when it covers none.
func (r *LogReader) bounds(ctx context.Context, q LogQuery) (first, last uint64, ok bool, err error) {
	st, err := r.js.Stream(ctx, LogStream)
	if err != nil {
		return 0, 0, false, fmt.Errorf("stream %s: %w", LogStream, err)
	}
	state := st.CachedInfo().State
	if state.Msgs == 0 {
		return 0, 0, false, nil
	}
	first, last = state.FirstSeq, state.LastSeq
	if q.Before > 0 {
		if q.Before <= first {
			return 0, 0, false, nil
		}
		last = min(last, q.Before-1)
	}
	if !q.Since.IsZero() {
		seq, found, err := r.seqAt(ctx, q.Since)
		if err != nil || !found {
			return 0, 0, false, err
		}
		first = max(first, seq)
	}
	if !q.Until.IsZero() {
		seq, found, err := r.seqAt(ctx, q.Until)
		if err != nil {
			return 0, 0, false, err
		}
		if found {
			if seq == 0 {
				return 0, 0, false, nil
			}
			last = min(last, seq-1)
		}
	}
	return first, last, first <= last, nil
}

// seqAt is the sequence of the first record stored at or after t; found is
// false when there is none.
func (r *LogReader) seqAt(ctx context.Context, t time.Time) (uint64, bool, error) {
	t = t.UTC()
	m, err := r.get(ctx, msgGetRequest{StartTime: &t, NoHeaders: false})
	if errors.Is(err, errNoMsg) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	seq, _ := strconv.ParseUint(m.Header.Get("Nats-Sequence"), 10, 64)
	return seq, true, nil
}

// Page returns up to q.Limit records matching q, newest first, and the
// cursor of the next page (0 when there is none).
func (r *LogReader) Page(ctx context.Context, q LogQuery) ([]attempt.Record, uint64, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = 100
	}
	first, hi, ok, err := r.bounds(ctx, q)
	if err != nil || !ok {
		return nil, 0, err
	}
	var out []attempt.Record
	window := uint64(4 * limit)
	var scanned, matched uint64
	for hi >= first && len(out) < limit {
		lo := first
		if hi-first+1 > window {
			lo = hi - window + 1
		}
		recs, n, err := r.window(ctx, q.Endpoint, lo, hi)
		if err != nil {
			return nil, 0, err
		}
		scanned += hi - lo + 1
		matched += uint64(n)
		for i := len(recs) - 1; i >= 0 && len(out) < limit; i-- {
			if q.Match == nil || q.Match(&recs[i]) {
				out = append(out, recs[i])
			}
		}
		if len(out) == limit {
			return out, out[len(out)-1].Seq, nil
		}
		if lo == first {
			break
		}
		hi = lo - 1
		if matched > pageScanBudget || scanned > pageSeqBudget {
			return out, hi + 1, nil // selective filter or sparse endpoint: go on from here
		}
		window = nextWindow(window, scanned, matched, uint64(limit-len(out)))
	}
	return out, 0, nil
}

// nextWindow sizes the next window from the density of the endpoint's
// records so far: about 1.5 times what should hold the records still
// needed, at least double the last window.
func nextWindow(window, scanned, matched, need uint64) uint64 {
	w := 2 * window
	if matched > 0 {
		w = max(w, scanned*need*3/(2*matched))
	} else {
		w = 8 * window
	}
	return min(w, maxWindow)
}

// window reads the records of endpoint (every record when empty) with
// sequences lo..hi, oldest first. n counts those read (before Match).
func (r *LogReader) window(ctx context.Context, endpoint string, lo, hi uint64) ([]attempt.Record, int, error) {
	var out []attempt.Record
	if endpoint == "" {
		for seq := lo; seq <= hi; {
			batch := int(min(hi-seq+1, 1000))
			msgs, err := r.getBatch(ctx, msgGetRequest{Seq: seq, Batch: batch})
			if err != nil {
				return nil, 0, err
			}
			if len(msgs) == 0 {
				break
			}
			for _, m := range msgs {
				rec, s, err := recordOf(m)
				seq = s + 1
				if s > hi {
					break
				}
				if err == nil {
					out = append(out, rec)
				}
			}
		}
		return out, len(out), nil
	}
	return r.filtered(ctx, LogPrefix+endpoint+".>", lo, hi)
}

// windowChunk is the least span one parallel reader of a window takes.
const windowChunk = 64

// filtered reads the records on filter with sequences lo..hi, oldest first.
// Each get returns the next record at or after a sequence, so a window is
// split into chunks read side by side (at most 8 gets in flight), and a page
// costs about one round trip per record divided by the chunks.
func (r *LogReader) filtered(ctx context.Context, filter string, lo, hi uint64) ([]attempt.Record, int, error) {
	span := hi - lo + 1
	k := int(min(8, (span+windowChunk-1)/windowChunk))
	parts := make([][]attempt.Record, k)
	errs := make([]error, k)
	var wg sync.WaitGroup
	for i := range k {
		from := lo + span*uint64(i)/uint64(k)
		to := lo + span*uint64(i+1)/uint64(k) - 1
		wg.Add(1)
		go func() {
			defer wg.Done()
			parts[i], errs[i] = r.scan(ctx, filter, from, to)
		}()
	}
	wg.Wait()
	var out []attempt.Record
	for i := range k {
		if errs[i] != nil {
			return nil, 0, errs[i]
		}
		out = append(out, parts[i]...)
	}
	return out, len(out), nil
}

// scan reads the records on filter with sequences lo..hi one get at a time.
func (r *LogReader) scan(ctx context.Context, filter string, lo, hi uint64) ([]attempt.Record, error) {
	var out []attempt.Record
	for seq := lo; seq <= hi; {
		m, err := r.get(ctx, msgGetRequest{Seq: seq, NextFor: filter})
		if errors.Is(err, errNoMsg) {
			break
		}
		if err != nil {
			return nil, err
		}
		rec, s, err := recordOf(m)
		if s > hi || s == 0 {
			break
		}
		seq = s + 1
		if err == nil {
			out = append(out, rec)
		}
	}
	return out, nil
}

// Export calls fn for every record matching q (Before and Limit aside),
// oldest first, until fn returns an error. It reads with an ordered
// consumer, the fastest way forward through a stream.
func (r *LogReader) Export(ctx context.Context, q LogQuery, fn func(*attempt.Record) error) error {
	first, last, ok, err := r.bounds(ctx, LogQuery{Since: q.Since, Until: q.Until})
	if err != nil || !ok {
		return err
	}
	cfg := natsjs.OrderedConsumerConfig{DeliverPolicy: natsjs.DeliverByStartSequencePolicy, OptStartSeq: first, InactiveThreshold: ReadInactive}
	if q.Endpoint != "" {
		cfg.FilterSubjects = []string{LogPrefix + q.Endpoint + ".>"}
	}
	cons, err := r.js.OrderedConsumer(ctx, LogStream, cfg)
	if err != nil {
		return fmt.Errorf("read %s: %w", LogStream, err)
	}
	x := exporter{last: last, match: q.Match, fn: fn, want: 1000}
	for empty := 0; ; {
		var batch natsjs.MessageBatch
		if x.seen == 0 && empty == 0 {
			batch, err = cons.FetchNoWait(x.want) // how many are pending is not known yet
		} else {
			batch, err = cons.Fetch(x.want, natsjs.FetchMaxWait(5*time.Second))
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", LogStream, err)
		}
		n, done, ferr := x.take(batch)
		if ferr != nil {
			return ferr
		}
		if err := batch.Error(); err != nil && !errors.Is(err, natsjs.ErrNoMessages) && !errors.Is(err, nats.ErrTimeout) {
			return fmt.Errorf("read %s: %w", LogStream, err)
		}
		if done {
			return nil
		}
		if n == 0 {
			x.want = 1
			if empty++; empty == 3 {
				return fmt.Errorf("read %s: no record came after sequence %d (of %d)", LogStream, x.seen, last)
			}
		}
	}
}

// exporter takes the batches of an export.
type exporter struct {
	last  uint64
	match func(*attempt.Record) bool
	fn    func(*attempt.Record) error
	seen  uint64 // the last stream sequence read
	want  int    // the next fetch's size: no more than are pending, so it never waits
}

// take hands batch's records to fn; done is true once the export's last
// sequence (or the stream's end) is reached or fn failed. Each batch is
// read to its end, so no fetch is left waiting behind.
func (x *exporter) take(batch natsjs.MessageBatch) (n int, done bool, ferr error) {
	for m := range batch.Messages() {
		n++
		if done {
			continue
		}
		meta, err := m.Metadata()
		if err != nil {
			continue
		}
		x.seen = meta.Sequence.Stream
		if x.seen > x.last {
			done = true
			continue
		}
		var rec attempt.Record
		if json.Unmarshal(m.Data(), &rec) == nil {
			rec.Seq = x.seen
			if x.match == nil || x.match(&rec) {
				if ferr = x.fn(&rec); ferr != nil {
					done = true
				}
			}
		}
		if x.seen >= x.last || meta.NumPending == 0 {
			done = true
		}
		x.want = int(min(1000, max(1, meta.NumPending)))
	}
	return n, done, ferr
}
