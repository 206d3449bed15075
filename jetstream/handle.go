package jetstream

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/breaker"
	"github.com/hookjet/hookjet/deliver"
)

// msgLog logs about one message, adding its endpoint and event only when a
// record is actually written: the success path logs nothing and allocates
// nothing for logging.
type msgLog struct {
	l        *slog.Logger
	endpoint string
	ev       *event
}

func (m msgLog) log(level slog.Level, msg string, args ...any) {
	ctx := context.Background()
	if !m.l.Enabled(ctx, level) {
		return
	}
	attrs := append([]any{"endpoint", m.endpoint, "event_id", m.ev.id, "event_type", m.ev.typ, "seq", m.ev.seq}, args...)
	m.l.Log(ctx, level, msg, attrs...)
}

func (m msgLog) Debug(msg string, args ...any) { m.log(slog.LevelDebug, msg, args...) }
func (m msgLog) Info(msg string, args ...any)  { m.log(slog.LevelInfo, msg, args...) }
func (m msgLog) Warn(msg string, args ...any)  { m.log(slog.LevelWarn, msg, args...) }

// event is what hookjet reads off a stream message.
type event struct {
	id, typ string
	seq     uint64
	key     string // seq, or "r"+seq for a replay: unique across both streams
	replay  bool
	at      time.Time
}

func (d *Dispatcher) eventOf(msg natsjs.Msg, meta *natsjs.MsgMetadata) event {
	h := msg.Headers()
	ev := event{seq: meta.Sequence.Stream, at: meta.Timestamp}
	ev.key = strconv.FormatUint(ev.seq, 10)
	subj := msg.Subject()
	if len(subj) > len(ReplayPrefix) && subj[:len(ReplayPrefix)] == ReplayPrefix {
		ev.replay = true
		ev.key = "r" + ev.key
		ev.id = h.Get(HdrEventID)
		ev.typ = h.Get(HdrEventType)
	} else {
		ev.typ = subj[min(len(EventsPrefix), len(subj)):]
		ev.id = h.Get(HdrMsgID)
	}
	if ev.id == "" {
		ev.id = "seq_" + strconv.FormatUint(ev.seq, 10)
		if !ev.replay && meta.NumDelivered == 1 {
			d.o.Metrics.MissingID.Inc()
		}
	}
	return ev
}

// handle delivers one message to one endpoint and settles it: ack after a 2xx
// (once the ledger holds it), a delayed nak for a retry, or a dead letter.
//
// After a 2xx the endpoint's in-flight slot stays taken until the ledger has
// committed the delivery and the ack is sent: handle then returns true and
// calls release itself. So what a crash can resend is bounded by
// max_in_flight per endpoint, answered-but-unacked deliveries included.
func (d *Dispatcher) handle(w *worker, msg natsjs.Msg, release func()) (releases bool) {
	id := w.ep.ID
	m := d.o.Metrics
	meta, err := msg.Metadata()
	if err != nil {
		d.o.Breakers.Release(id)
		d.log.Error("message without metadata", "endpoint", id, "err", err)
		return false
	}
	ev := d.eventOf(msg, meta)
	log := msgLog{l: d.log, endpoint: id, ev: &ev}

	if !ev.replay {
		_, dup, err := d.o.Ledger.FirstSeen(ev.id, ev.seq)
		if err != nil {
			log.Warn("ledger lookup", "err", err)
		} else if !dup && d.shared != nil {
			// Another process may have accepted this id: ask the shared record.
			// If it cannot answer, deliver: a possible duplicate beats a stall.
			if dup, err = d.shared.duplicate(d.sendCtx, ev.id, ev.seq); err != nil {
				log.Warn("shared dedupe lookup failed; delivering", "err", err)
			}
		}
		if dup {
			d.o.Breakers.Release(id)
			m.Duplicates.WithLabelValues("ledger").Inc()
			log.Debug("duplicate event id; not delivered again")
			d.ack(log, msg)
			return false
		}
	}
	// Checked on every delivery, not only redeliveries: a server that lost
	// consumer state in a crash redelivers with a count of 1.
	if done, err := d.o.Ledger.Delivered(id, ev.id); err == nil && done {
		d.o.Breakers.Release(id)
		m.Duplicates.WithLabelValues("delivered").Inc()
		d.ack(log, msg)
		return false
	}
	var st attemptState
	if meta.NumDelivered > 1 {
		st, err = d.loadAttempts(d.sendCtx, id, ev.key)
		if err != nil {
			d.o.Breakers.Release(id)
			d.infraDefer(log, w, msg, err)
			return false
		}
		if st.DeadLettered != "" {
			d.o.Breakers.Release(id)
			d.term(log, msg, st.DeadLettered)
			return false
		}
	}
	if max := d.maxPayload; max > 0 && len(msg.Data()) > max {
		d.o.Breakers.Release(id)
		st.Error = fmt.Sprintf("payload of %d bytes exceeds security.max_payload_bytes (%d)", len(msg.Data()), max)
		d.deadLetter(log, w, msg, ev, st, "rejected")
		return false
	}
	if age := d.now().Sub(ev.at); age > w.ep.Retry.MaxAge {
		d.o.Breakers.Release(id)
		if st.Error == "" {
			st.Error = fmt.Sprintf("not delivered within retry.max_age (%s)", w.ep.Retry.MaxAge)
		}
		d.deadLetter(log, w, msg, ev, st, "expired")
		return false
	}

	h := msg.Headers()
	req := deliver.Request{
		URL:                w.ep.URL,
		ID:                 ev.id,
		Body:               msg.Data(),
		ContentType:        h.Get(HdrContentType),
		Header:             w.header,
		Signer:             w.signer,
		Timeout:            w.ep.Timeout,
		InsecureSkipVerify: w.ep.InsecureSkipVerify,
	}
	res := d.o.Client.Do(d.sendCtx, &req)
	if d.sendCtx.Err() != nil {
		// Shutdown cancelled the request: not the endpoint's fault.
		d.o.Breakers.Release(id)
		if err := msg.Nak(); err != nil {
			log.Debug("nak", "err", err)
		}
		return false
	}
	st.Attempts++
	if st.First.IsZero() {
		st.First = res.Sent
	}
	st.Last = res.Sent
	st.Status = res.Status
	first := st.Attempts == 1
	switch res.Class {
	case deliver.Success:
		w.okAttempts.Inc()
		if first {
			w.okFirst.Inc()
		}
	default:
		m.Attempts.WithLabelValues(id, res.Class.String()).Inc()
		if first {
			m.FirstAttempts.WithLabelValues(id, res.Class.String()).Inc()
		}
	}
	if res.Class != deliver.Rejected {
		w.duration.Observe(res.Latency.Seconds())
	}

	switch res.Class {
	case deliver.Success:
		d.o.Breakers.Record(id, breaker.Success, res.Latency, first)
		d.hour.add(d.now(), true)
		retried := st.Attempts > 1
		d.o.Ledger.MarkDelivered(id, ev.id, func(err error) {
			if err != nil {
				log.Warn("ledger write failed; acking anyway", "err", err)
			}
			d.ack(log, msg)
			release()
			if retried {
				d.forgetAttempts(id, ev.key)
			}
		})
		return true
	case deliver.Transient:
		d.o.Breakers.Record(id, breaker.Failure, res.Latency, first)
	case deliver.Rejected:
		d.o.Breakers.Release(id)
	default:
		d.o.Breakers.Record(id, breaker.Neutral, res.Latency, first)
	}
	d.hour.add(d.now(), false)
	st.Error = res.Reason()

	switch res.Class {
	case deliver.Transient:
		d.retry(log, w, msg, ev, st, deliver.Backoff(w.ep.Retry.Base, w.ep.Retry.Cap, st.Attempts-1, nil))
	case deliver.RateLimited:
		wait := deliver.RateLimitWait(res.RetryAfter, w.ep.Retry.Cap, nil)
		d.slowDown(w, d.now().Add(wait), "rate_limit")
		m.Deferrals.WithLabelValues(id, "rate_limit").Inc()
		d.retry(log, w, msg, ev, st, wait)
	case deliver.Gone:
		d.deadLetter(log, w, msg, ev, st, "gone")
		d.disable(id, "gone: the endpoint answered 410")
	case deliver.Rejected:
		d.deadLetter(log, w, msg, ev, st, "rejected")
	default:
		d.deadLetter(log, w, msg, ev, st, "permanent")
	}
	return false
}

func (d *Dispatcher) retry(log msgLog, w *worker, msg natsjs.Msg, ev event, st attemptState, delay time.Duration) {
	if st.Attempts >= w.ep.Retry.MaxAttempts {
		d.deadLetter(log, w, msg, ev, st, "exhausted")
		return
	}
	if d.now().Add(delay).Sub(ev.at) > w.ep.Retry.MaxAge {
		d.deadLetter(log, w, msg, ev, st, "expired")
		return
	}
	if err := d.saveAttempts(d.sendCtx, w.ep.ID, ev.key, st); err != nil {
		log.Warn("attempt state not saved; the attempt count may restart", "err", err)
	}
	if err := msg.NakWithDelay(delay); err != nil {
		log.Warn("nak with delay", "err", err)
	}
	log.Info("delivery failed; retrying", "attempt", st.Attempts, "status", st.Status, "error", st.Error, "retry_in", delay.Round(time.Millisecond))
}

// infraDefer returns a message after a failure of hookjet's own (NATS, state):
// it is not charged to the message's attempts.
func (d *Dispatcher) infraDefer(log msgLog, w *worker, msg natsjs.Msg, cause error) {
	d.o.Metrics.Deferrals.WithLabelValues(w.ep.ID, "infrastructure").Inc()
	log.Warn("deferred after an internal error", "err", cause)
	if err := msg.NakWithDelay(2*time.Second + jitter(3*time.Second)); err != nil {
		log.Warn("nak with delay", "err", err)
	}
}

func (d *Dispatcher) ack(log msgLog, msg natsjs.Msg) {
	if err := msg.Ack(); err != nil {
		log.Warn("ack", "err", err)
	}
}

func (d *Dispatcher) term(log msgLog, msg natsjs.Msg, reason string) {
	if err := msg.TermWithReason(reason); err != nil {
		log.Warn("term", "err", err)
	}
}

// deadLetter copies the message to HOOKJET_DLQ and waits for the PubAck before
// removing the original. The copy's Nats-Msg-Id is derived from the endpoint
// and stream sequence, and the attempt state remembers the dead letter, so a
// crash between the two steps neither loses nor duplicates it.
func (d *Dispatcher) deadLetter(log msgLog, w *worker, msg natsjs.Msg, ev event, st attemptState, reason string) {
	id := w.ep.ID
	out := deadLetterMsg(id, ev, st, reason, msg.Data(), msg.Headers().Get(HdrContentType))
	ctx, cancel := context.WithTimeout(d.sendCtx, 5*time.Second)
	defer cancel()
	if _, err := d.o.JS.PublishMsg(ctx, out); err != nil {
		d.infraDefer(log, w, msg, fmt.Errorf("dead-letter copy: %w", err))
		return
	}
	if d.o.OnDeadLetter != nil {
		d.o.OnDeadLetter(id, ev.id)
	}
	st.DeadLettered = reason
	if st.Attempts > 0 || reason != "rejected" {
		if err := d.saveAttempts(d.sendCtx, id, ev.key, st); err != nil {
			log.Warn("attempt state not saved", "err", err)
		}
	}
	d.term(log, msg, reason)
	d.o.Metrics.DeadLetters.WithLabelValues(id, reason).Inc()
	log.Warn("dead-lettered", "reason", reason, "attempts", st.Attempts, "status", st.Status, "error", st.Error)
	d.ops("dead_letter", map[string]any{"endpoint": id, "event_id": ev.id, "event_type": ev.typ, "reason": reason, "attempts": st.Attempts})
}

// deadLetterMsg builds the DLQ copy of a message. Its Nats-Msg-Id depends
// only on the endpoint and the stream sequence, so storing it twice is
// deduplicated by HOOKJET_DLQ.
func deadLetterMsg(endpoint string, ev event, st attemptState, reason string, data []byte, contentType string) *nats.Msg {
	out := nats.NewMsg(DLQPrefix + endpoint)
	out.Data = data
	h := out.Header
	h.Set(HdrMsgID, "dlq-"+endpoint+"-"+ev.key)
	h.Set(HdrEventID, ev.id)
	h.Set(HdrEventType, ev.typ)
	h.Set(HdrEndpoint, endpoint)
	h.Set(HdrReason, reason)
	h.Set(HdrAttempts, strconv.Itoa(st.Attempts))
	h.Set(HdrLastStatus, "")
	if st.Status != 0 {
		h.Set(HdrLastStatus, strconv.Itoa(st.Status))
	}
	h.Set(HdrLastError, st.Error)
	h.Set(HdrFirstTry, rfc3339(st.First))
	h.Set(HdrLastTry, rfc3339(st.Last))
	if contentType != "" {
		h.Set(HdrContentType, contentType)
	}
	return out
}

func rfc3339(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}
