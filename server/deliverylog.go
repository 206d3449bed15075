package server

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hookjet/hookjet/admin"
	"github.com/hookjet/hookjet/api"
	"github.com/hookjet/hookjet/attempt"
	"github.com/hookjet/hookjet/dispatch"
	"github.com/hookjet/hookjet/jetstream"
)

// logIndexFile is this process's index of HOOKJET_LOG in data_dir (package
// logindex): rebuilt from the stream when it is missing.
const logIndexFile = "log-index.db"

// startLog ensures HOOKJET_LOG and starts its writer and its index's
// follower when the delivery log is on (log.enabled), with its two
// counters.
func (s *Server) startLog(ctx context.Context) error {
	js := s.node.JetStream()
	if !s.cfg.Log.Enabled {
		return nil
	}
	if err := jetstream.EnsureLog(ctx, js, s.cfg, s.log); err != nil {
		return err
	}
	x, err := jetstream.FollowLog(js, filepath.Join(s.cfg.DataDir, logIndexFile), s.log)
	if err != nil {
		return err
	}
	w, err := jetstream.NewLogWriter(s.node.Conn(), s.log)
	if err != nil {
		x.Close()
		return err
	}
	s.logw, s.logx, s.logr = w, x, jetstream.NewLogReader(s.node.Conn(), js, x)
	s.registry.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "hookjet_log_records_total", Help: "Delivery log records stored in HOOKJET_LOG."},
			func() float64 { return float64(w.Written()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "hookjet_log_records_lost_total", Help: "Delivery log records dropped (queue full, NATS down or slow); deliveries never wait for the log."},
			func() float64 { return float64(w.Lost()) }),
	)
	return nil
}

// recorder is the dispatcher's Recorder: nil (not a nil pointer) when the
// log is off.
func (s *Server) recorder() dispatch.Recorder {
	if s.tally != nil {
		return s.tally // counts, then hands on to the log writer
	}
	if s.logw == nil {
		return nil
	}
	return s.logw
}

// startTally opens HOOKJET_COUNTS: the last hour's delivered and failed
// attempts of every process, so that the summary's figures are the same
// from every process and survive restarts. It runs after startLog: the
// tally hands each record on to the log writer.
func (s *Server) startTally(ctx context.Context) error {
	var next interface{ Record(attempt.Record) }
	if s.logw != nil {
		next = s.logw
	}
	t, err := jetstream.NewTally(ctx, s.node.JetStream(), s.cfg.Streams.Replicas, next, s.log)
	if err != nil {
		return err
	}
	s.tally = t
	return nil
}

func (s *Server) closeTally() {
	if s.tally != nil {
		s.tally.Close()
	}
}

// withTally makes b's summary report the last hour from HOOKJET_COUNTS.
func (s *Server) withTally(b admin.Backend) admin.Backend {
	if s.tally == nil {
		return b
	}
	return tallyBackend{Backend: b, tally: s.tally}
}

// tallyBackend is an admin backend whose last-hour figures are every
// process's, from HOOKJET_COUNTS.
type tallyBackend struct {
	admin.Backend
	tally *jetstream.Tally
}

// Summary is the backend's summary with the shared last-hour figures.
func (b tallyBackend) Summary(ctx context.Context) (api.Summary, error) {
	sum, err := b.Backend.Summary(ctx)
	sum.DeliveredLastHour, sum.FailedLastHour = b.tally.LastHour(time.Now())
	return sum, err
}

// closeLog stores the records still queued and stops the writer and the
// index's follower; it runs after the dispatcher has stopped and before
// NATS is closed.
func (s *Server) closeLog() {
	if s.logw != nil {
		s.logw.Close()
	}
	if s.logx != nil {
		s.logx.Close()
	}
}

// logOption serves the delivery log's routes.
func (s *Server) logOption() admin.Option {
	var l admin.DeliveryLog
	if s.logr != nil {
		l = s.logr
	}
	return admin.WithDeliveryLog(l, func(ctx context.Context, id string) (admin.EventInfo, bool, error) {
		return s.lookupEvent(ctx, id)
	})
}

// lookupEvent finds event id in HOOKJET_EVENTS: ids seq_<n> name their
// sequence; others are found through the event index (every event the
// stream holds), then the dedupe ledger, which remembers each id's
// sequence for dedupe.ttl.
func (s *Server) lookupEvent(ctx context.Context, id string) (admin.EventInfo, bool, error) {
	seq, err := s.eventSeq(ctx, id)
	if err != nil || seq == 0 {
		return admin.EventInfo{}, false, err
	}
	ev, found, err := s.node.EventAt(ctx, seq)
	if err != nil || !found {
		return admin.EventInfo{}, false, err
	}
	if ev.ID != id && !strings.HasPrefix(id, "seq_") {
		return admin.EventInfo{}, false, nil // trimmed, and the sequence is another event's
	}
	return admin.EventInfo{
		Seq: seq, Type: ev.Type, PublishedAt: ev.PublishedAt, Size: ev.Size,
		Tenant: ev.Tenant, Key: ev.Key, ContentType: ev.ContentType, Headers: ev.Header, Data: ev.Data,
	}, true, nil
}

// eventSeq is the sequence of event id in HOOKJET_EVENTS; 0 when it is
// not known.
func (s *Server) eventSeq(ctx context.Context, id string) (uint64, error) {
	if n, ok := strings.CutPrefix(id, "seq_"); ok {
		seq, _ := strconv.ParseUint(n, 10, 64)
		return seq, nil
	}
	if s.evx != nil {
		if seq, found, err := s.evx.Lookup(ctx, id); err == nil && found {
			return seq, nil
		}
	}
	seq, found, err := s.ledger.Sequence(id)
	if err != nil || !found {
		return 0, err
	}
	return seq, nil
}

// discardDeadLetters deletes the dead letters matching f (POST
// /api/v1/dlq/discard) and records each one in the delivery log as
// discarded, so that the event's delivery to that endpoint reads
// "discarded" rather than "dead_letter".
func (s *Server) discardDeadLetters(ctx context.Context, f jetstream.DLQFilter, dryRun bool) (int, int, error) {
	return jetstream.DiscardDLQ(ctx, s.node.JetStream(), f, dryRun, func(e jetstream.DLQEntry) {
		// An ordered endpoint's key held by this dead letter goes on.
		if err := s.disp.ReleaseHold(ctx, e.Endpoint, e.EventID); err != nil {
			s.log.Warn("release the ordering key held by a discarded dead letter", "endpoint", e.Endpoint, "event_id", e.EventID, "err", err)
		}
		if s.logw == nil {
			return
		}
		s.logw.Record(attempt.Record{
			EventID: e.EventID, EventType: e.EventType, Endpoint: e.Endpoint, Attempt: e.Attempts,
			StartedAt: time.Now().UTC(), Status: e.LastStatus, Class: attempt.ClassDiscarded,
			Reason: e.Reason, Error: "discarded by an operator",
		})
	})
}
