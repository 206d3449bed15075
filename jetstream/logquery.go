package jetstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/api"
	"github.com/hookjet/hookjet/attempt"
)

// LogReader answers the delivery log's questions. The records share one
// subject per endpoint (see LogSubject), so the server's subject index no
// longer finds an event's records; this process's index of the stream
// ([LogIndex], package logindex) gives their sequences, and the messages
// are read with the stream's direct get API by sequence
// (server/jetstream_api.go JSApiMsgGetRequest), which loads one block:
//
//   - an event's records: the index's sequences for the event, read 16 at
//     a time;
//   - an endpoint's records, newest first: the cursor is a stream sequence;
//     the index walks the endpoint's sequences backwards from it, so a page
//     costs about its own records, never the endpoint's history;
//   - every endpoint's records: batch gets by sequence, backwards from the
//     cursor;
//   - since/until become sequences through the time index (start_time).
//
// Each lookup first waits (a little) for the index to reach the stream's
// last sequence, so a record stored before the question is in the answer,
// whichever process stored it. Batch gets with a subject filter are
// avoided on purpose: the server counts the filter's pending messages to
// the end of the stream for each.
type LogReader struct {
	nc  *nats.Conn
	js  natsjs.JetStream
	idx *LogIndex
}

// NewLogReader reads HOOKJET_LOG through nc, finding records through idx.
func NewLogReader(nc *nats.Conn, js natsjs.JetStream, idx *LogIndex) *LogReader {
	return &LogReader{nc: nc, js: js, idx: idx}
}

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
// first: every delivery's, redeliveries, replays and tests included, and
// records of the older layouts (a subject per record).
//
// The index gives the records' sequences (after catching up with the
// stream's last sequence), and each is read with a direct get by sequence;
// a record of another event (a hash collision of the index) is left out.
func (r *LogReader) EventRecords(ctx context.Context, id string) ([]attempt.Record, error) {
	if r.idx == nil {
		return nil, errNoIndex
	}
	state, err := r.state(ctx)
	if err != nil || state.Msgs == 0 {
		return nil, err
	}
	r.idx.catchUp(ctx, state.LastSeq)
	seqs, err := r.idx.idx.EventSeqs(id)
	if err != nil {
		return nil, fmt.Errorf("delivery log index: %w", err)
	}
	recs, err := r.records(ctx, seqs)
	if err != nil {
		return nil, err
	}
	out := recs[:0]
	for _, rec := range recs {
		if rec.EventID == id {
			out = append(out, rec)
		}
	}
	return out, nil
}

// fetchParallel is the number of direct gets one lookup keeps in flight.
const fetchParallel = 16

// spanMax bounds the span of sequences records reads with batch gets
// (every record in it, then keeps those asked for) rather than one get per
// record: dense sequences (an event's retries, a busy endpoint's page) cost
// one or a few round trips instead of one per record.
const spanMax = 4000

// records reads the records at seqs (those the stream still holds), in
// the order of seqs.
func (r *LogReader) records(ctx context.Context, seqs []uint64) ([]attempt.Record, error) {
	if len(seqs) == 0 {
		return nil, nil
	}
	lo, hi := slices.Min(seqs), slices.Max(seqs)
	if span := hi - lo + 1; span <= spanMax && span <= uint64(max(4*len(seqs), 64)) {
		recs, _, err := r.window(ctx, lo, hi)
		if err != nil {
			return nil, err
		}
		at := make(map[uint64]int, len(recs))
		for i := range recs {
			at[recs[i].Seq] = i
		}
		out := make([]attempt.Record, 0, len(seqs))
		for _, s := range seqs {
			if i, ok := at[s]; ok {
				out = append(out, recs[i])
			}
		}
		return out, nil
	}
	return r.each(ctx, seqs)
}

// each reads the records at seqs with one direct get each, fetchParallel
// at a time, in the order of seqs.
func (r *LogReader) each(ctx context.Context, seqs []uint64) ([]attempt.Record, error) {
	got := make([]attempt.Record, len(seqs))
	ok := make([]bool, len(seqs))
	errs := make([]error, len(seqs))
	sem := make(chan struct{}, fetchParallel)
	var wg sync.WaitGroup
	for i, seq := range seqs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			m, err := r.get(ctx, msgGetRequest{Seq: seq})
			if errors.Is(err, errNoMsg) {
				return // dropped by log.max_age or log.max_bytes
			}
			if err != nil {
				errs[i] = err
				return
			}
			if rec, s, err := recordOf(m); err == nil && s == seq {
				got[i], ok[i] = rec, true
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	out := make([]attempt.Record, 0, len(seqs))
	for i := range got {
		if ok[i] {
			out = append(out, got[i])
		}
	}
	return out, nil
}

// state is HOOKJET_LOG's state now.
func (r *LogReader) state(ctx context.Context) (natsjs.StreamState, error) {
	st, err := r.js.Stream(ctx, LogStream)
	if err != nil {
		return natsjs.StreamState{}, fmt.Errorf("stream %s: %w", LogStream, err)
	}
	return st.CachedInfo().State, nil
}

// bounds returns the sequences q covers, first..last inclusive; ok is
// false when it covers none.
func (r *LogReader) bounds(ctx context.Context, q LogQuery) (first, last uint64, ok bool, err error) {
	state, err := r.state(ctx)
	if err != nil {
		return 0, 0, false, err
	}
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
	if q.Endpoint != "" {
		return r.endpointPage(ctx, q, limit, first, hi)
	}
	var out []attempt.Record
	window := uint64(4 * limit)
	var scanned, matched uint64
	for hi >= first && len(out) < limit {
		lo := first
		if hi-first+1 > window {
			lo = hi - window + 1
		}
		recs, n, err := r.window(ctx, lo, hi)
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
			return out, hi + 1, nil // selective filter: go on from here
		}
		window = nextWindow(window, scanned, matched, uint64(limit-len(out)))
	}
	return out, 0, nil
}

// endpointPage is Page for one endpoint: the index gives its records'
// sequences within first..hi, newest first, and each is read by sequence;
// a selective Match reads on in steps until the page is full or
// pageScanBudget records were examined.
func (r *LogReader) endpointPage(ctx context.Context, q LogQuery, limit int, first, hi uint64) ([]attempt.Record, uint64, error) {
	if r.idx == nil {
		return nil, 0, errNoIndex
	}
	r.idx.catchUp(ctx, hi)
	var out []attempt.Record
	examined := 0
	for len(out) < limit {
		want := limit - len(out)
		if q.Match != nil {
			want = min(max(2*want, 100), 1000)
		}
		seqs, err := r.idx.idx.EndpointSeqs(q.Endpoint, first, hi, want)
		if err != nil {
			return nil, 0, fmt.Errorf("delivery log index: %w", err)
		}
		recs, err := r.records(ctx, seqs)
		if err != nil {
			return nil, 0, err
		}
		for i := range recs {
			if recs[i].Endpoint == q.Endpoint && (q.Match == nil || q.Match(&recs[i])) {
				out = append(out, recs[i])
				if len(out) == limit {
					return out, recs[i].Seq, nil
				}
			}
		}
		examined += len(seqs)
		if len(seqs) < want || seqs[len(seqs)-1] <= first {
			return out, 0, nil
		}
		hi = seqs[len(seqs)-1] - 1
		if examined > pageScanBudget {
			return out, hi + 1, nil // selective filter: go on from here
		}
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

// window reads every record with sequences lo..hi, oldest first; n counts
// those read (before Match). Batch gets without a subject filter cost the
// server nothing but the blocks read.
func (r *LogReader) window(ctx context.Context, lo, hi uint64) ([]attempt.Record, int, error) {
	var out []attempt.Record
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
		cfg.FilterSubjects = []string{LogSubjectOf(q.Endpoint), LogSubjectOf(q.Endpoint) + ".>"} // and the older layouts' subjects
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
