package jetstream

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/api"
	"github.com/hookjet/hookjet/attempt"
	"github.com/hookjet/hookjet/config"
)

// The delivery log: one message per record on its endpoint's subject,
//
//	hookjet.log.<endpoint>
//
// so the NATS servers hold one subject entry per endpoint, not per record.
// nats-server keeps an in-memory entry per distinct subject of a stream for
// as long as a message on it is retained, on every replica: with a subject
// per record (the layouts before this one, below) that was about 180 bytes
// of server heap per record, several GB at the default log.max_bytes; with
// a subject per endpoint it is a few bytes (JETSTREAM.md, "Memory per
// stored message"). The lookups the subject index used to answer (an
// event's records, an endpoint's newest records) are answered by each
// process's own index of the stream, [LogIndex] (package logindex explains
// its layout), and the records are read by sequence. Every record is a
// message of its own, so a redelivery, replay or test never takes the
// place of an earlier record.
//
// Records written by earlier versions keep their subjects,
// hookjet.log.<endpoint>.<event-token>.<n>[.<delivery>] (<event-token>: the
// event id in unpadded base64url; <n>: the attempt number, or p<n>, d<n>,
// x<n> for a parked, dead-lettered or expired, discarded record). The index
// reads every record's event_id and endpoint from its body, whatever its
// subject, so they are found as the new ones are until log.max_age drops
// them.
const (
	LogStream = "HOOKJET_LOG"
	LogPrefix = "hookjet.log."
)

// EventToken encodes an event id into one subject token, as the older
// layouts' subjects did.
func EventToken(id string) string { return base64.RawURLEncoding.EncodeToString([]byte(id)) }

// LogSubjectOf is the subject of endpoint's records.
func LogSubjectOf(endpoint string) string { return LogPrefix + endpoint }

// LogSubject is the subject of record r.
func LogSubject(r *attempt.Record) string { return LogSubjectOf(r.Endpoint) }

// logStreamConfig is HOOKJET_LOG: limits retention with Discard: Old, so a
// full log drops its oldest records and never refuses one. On one replica
// its writes are flushed asynchronously (PersistMode async) even when the
// server syncs every write: a record is not delivery state, and the last
// moments of records may be lost to a power cut (never a delivery).
// Replicated streams cannot use that mode; their Raft log relaxes syncing.
func logStreamConfig(cfg *config.Config) natsjs.StreamConfig {
	sc := natsjs.StreamConfig{
		Name:        LogStream,
		Description: "hookjet delivery log: one record per attempt, dead letter, parking and expiry",
		Subjects:    []string{LogPrefix + ">"},
		Retention:   natsjs.LimitsPolicy,
		Storage:     natsjs.FileStorage,
		Replicas:    cfg.Streams.Replicas,
		MaxAge:      cfg.Log.MaxAge,
		MaxBytes:    cfg.Log.MaxBytes,
		MaxMsgSize:  maxRecordBytes,
		Discard:     natsjs.DiscardOld,
		AllowDirect: true,
	}
	if sc.Replicas <= 1 {
		sc.PersistMode = natsjs.AsyncPersistMode
	}
	return sc
}

// maxRecordBytes bounds one stored record: the response excerpt is at most
// 64 KiB, errors and ids are short.
const maxRecordBytes = 128 << 10

// EnsureLog creates or updates HOOKJET_LOG when the delivery log is on
// (log.enabled). Like EnsureStreams it retries until ctx ends.
func EnsureLog(ctx context.Context, js natsjs.JetStream, cfg *config.Config, log *slog.Logger) error {
	if !cfg.Log.Enabled {
		return nil
	}
	sc := logStreamConfig(cfg)
	return retry(ctx, log, "stream "+sc.Name, func(ctx context.Context) error {
		st, err := js.Stream(ctx, sc.Name)
		if err != nil {
			_, err = js.CreateStream(ctx, sc)
			err = noRoom(cfg, err)
			if err == nil || !strings.Contains(err.Error(), "already in use") {
				return err
			}
			st, err = js.Stream(ctx, sc.Name)
			if err != nil {
				return err
			}
		}
		cur := st.CachedInfo().Config
		if err := logReplicasChange(cur, sc.Replicas); err != nil {
			return err
		}
		// NATS cannot change a stream's persist mode: a log created on
		// three replicas keeps flushing synchronously on one.
		sc.PersistMode = cur.PersistMode
		if streamUpToDate(cur, sc) && cur.AllowDirect {
			return nil
		}
		_, err = js.UpdateStream(ctx, sc)
		return noRoom(cfg, err)
	})
}

// logReplicasChange refuses a change of HOOKJET_LOG (configured as cur) to
// replicas that NATS cannot make: a stream created on one replica flushes
// asynchronously, and such a stream cannot be replicated.
func logReplicasChange(cur natsjs.StreamConfig, replicas int) error {
	if cur.PersistMode != natsjs.AsyncPersistMode || replicas <= 1 {
		return nil
	}
	return &RefusedError{fmt.Errorf("streams.replicas %d: %s was created with streams.replicas 1 and flushes asynchronously (persist_mode async), which NATS cannot replicate or change; "+
		"remove it ('nats stream rm %s': its delivery-log records are lost, no delivery is) and start again to have it created with %d replicas, or keep streams.replicas 1; no stream was changed",
		replicas, LogStream, LogStream, replicas)}
}

// checkLogReplicas refuses, before any stream is changed, a streams.replicas
// that HOOKJET_LOG cannot take (see logReplicasChange).
func checkLogReplicas(ctx context.Context, js natsjs.JetStream, cfg *config.Config) error {
	if !cfg.Log.Enabled {
		return nil
	}
	st, err := js.Stream(ctx, LogStream)
	if errors.Is(err, natsjs.ErrStreamNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	return logReplicasChange(st.CachedInfo().Config, cfg.Streams.Replicas)
}

// LogWriter stores records in HOOKJET_LOG without ever making a delivery
// wait: Record queues a record (dropping it, counted, when the queue is
// full) and one goroutine publishes the queue asynchronously with a bounded
// number of publishes outstanding. Records the server did not acknowledge
// (NATS down, timeouts) are counted too. Close stops it.
type LogWriter struct {
	js      natsjs.JetStream
	q       chan *attempt.Record
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
	log     *slog.Logger
	written atomic.Uint64
	lost    atomic.Uint64
}

// Sizes of the writer's queue and of its async publishes in flight.
const (
	logQueue       = 16384
	logMaxPending  = 2048
	logPubTimeout  = 10 * time.Second
	logStallWait   = 2 * time.Second
	logCloseBudget = 5 * time.Second
)

// NewLogWriter starts a writer of nc's records into HOOKJET_LOG.
func NewLogWriter(nc *nats.Conn, log *slog.Logger) (*LogWriter, error) {
	w := &LogWriter{q: make(chan *attempt.Record, logQueue), stop: make(chan struct{}), done: make(chan struct{}), log: log}
	if w.log == nil {
		w.log = slog.New(slog.DiscardHandler)
	}
	js, err := natsjs.New(nc,
		natsjs.WithPublishAsyncMaxPending(logMaxPending),
		natsjs.WithPublishAsyncTimeout(logPubTimeout),
		natsjs.WithPublishAsyncErrHandler(func(_ natsjs.JetStream, _ *nats.Msg, _ error) { w.lost.Add(1) }),
		natsjs.WithPublishAsyncAckHandler(func(natsjs.JetStream, *nats.Msg, *natsjs.PubAck) { w.written.Add(1) }),
	)
	if err != nil {
		return nil, fmt.Errorf("delivery log: %w", err)
	}
	w.js = js
	go w.run()
	return w, nil
}

// Record queues r for the log. It never blocks.
func (w *LogWriter) Record(r attempt.Record) {
	select {
	case w.q <- &r:
	default:
		w.lost.Add(1)
	}
}

// Written is the number of records the server acknowledged.
func (w *LogWriter) Written() uint64 { return w.written.Load() }

// Lost is the number of records dropped: queue full, NATS refused or did
// not answer in time.
func (w *LogWriter) Lost() uint64 { return w.lost.Load() }

// Close stores what is queued (for at most a few seconds), waits for the
// outstanding acknowledgements, and stops the writer.
func (w *LogWriter) Close() {
	w.once.Do(func() { close(w.stop) })
	<-w.done
}

func (w *LogWriter) run() {
	defer close(w.done)
	for {
		select {
		case r := <-w.q:
			w.publish(r)
		case <-w.stop:
			w.flush()
			return
		}
	}
}

// flush publishes what is still queued and waits for the acknowledgements,
// within logCloseBudget.
func (w *LogWriter) flush() {
	deadline := time.After(logCloseBudget)
	for {
		select {
		case r := <-w.q:
			w.publish(r)
			continue
		default:
		}
		break
	}
	select {
	case <-w.js.PublishAsyncComplete():
	case <-deadline:
		w.lost.Add(uint64(w.js.PublishAsyncPending()))
	}
}

func (w *LogWriter) publish(r *attempt.Record) {
	if err := r.Validate(); err != nil || !api.ValidToken(r.Endpoint) {
		w.lost.Add(1) // it could not be found again: no subject for it
		return
	}
	r.StartedAt = r.StartedAt.UTC()
	data, err := json.Marshal(r)
	if err != nil {
		w.lost.Add(1)
		return
	}
	msg := &nats.Msg{Subject: LogSubject(r), Data: data}
	if _, err := w.js.PublishMsgAsync(msg, natsjs.WithStallWait(logStallWait)); err != nil {
		w.lost.Add(1)
		w.log.Debug("delivery log record not stored", "err", err)
	}
}
