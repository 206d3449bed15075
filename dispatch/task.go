package dispatch

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/jetstream"
	"github.com/hookjet/hookjet/tracing"
)

// event is what hookjet reads off an event or task message.
type event struct {
	id, typ string
	// key names the event in ids derived from it (task and dead-letter
	// Nats-Msg-Ids, schedule subjects): its HOOKJET_EVENTS sequence, or a
	// prefixed unique token for replays, tests and redeliveries. It is a
	// single subject token.
	key string
	seq uint64    // HOOKJET_EVENTS sequence; 0 when the event never was one
	at  time.Time // when it was published: retry.max_age counts from here
	// tenant is the event's Hookjet-Tenant ("": none); badTenant, when
	// not empty, says why the header it carries is not a tenant: such an
	// event is delivered to no one (see rejectBadTenant).
	tenant, badTenant string
	// invalid, when not empty, says why the catalogue refuses the event
	// (catalog.validate enforce, catalog.strict): it is dead-lettered as
	// invalid for each endpoint it matched (see reject).
	invalid string
}

// eventTenant reads an event's Hookjet-Tenant header (in any case): its
// tenant, or why it is not one.
func eventTenant(h nats.Header) (tenant, bad string) {
	var vals []string
	for k, v := range h {
		if k == jetstream.HdrTenant || strings.EqualFold(k, jetstream.HdrTenant) {
			vals = append(vals, v...)
		}
	}
	if len(vals) == 0 {
		return "", ""
	}
	for _, v := range vals[1:] {
		if v != vals[0] {
			return "", "header " + jetstream.HdrTenant + " names more than one tenant"
		}
	}
	if err := config.CheckTenant(vals[0]); err != nil {
		return "", fmt.Sprintf("header %s %v", jetstream.HdrTenant, err)
	}
	return vals[0], ""
}

// mayReceive reports whether an endpoint of tenant epTenant may receive an
// event of tenant evTenant: an endpoint without a tenant receives every
// event; one with a tenant only that tenant's.
func mayReceive(epTenant, evTenant string) bool {
	return epTenant == "" || epTenant == evTenant
}

// attemptState is what hookjet knows about the attempts of one event for one
// endpoint. It travels in the headers of the task message that carries the
// delivery, so every process handling it sees the same count with no shared
// store.
type attemptState struct {
	Attempts int
	First    time.Time
	Last     time.Time
	Status   int
	Error    string
}

// Task message headers (HOOKJET_TASKS), besides the dead-letter ones that
// share their names and meaning (Hookjet-Attempts, Hookjet-Last-*).
const (
	hdrPublished = "Hookjet-Published" // RFC 3339 publish time of the event
	hdrEventKey  = jetstream.HdrEventKey
	hdrEventSeq  = "Hookjet-Event-Seq"
	hdrSchedule  = "Nats-Schedule"
	hdrTarget    = "Nats-Schedule-Target"
	hdrRollup    = "Nats-Rollup"
	// hdrIncarnation: see jetstream.HdrIncarnation.
	hdrIncarnation = jetstream.HdrIncarnation
	// hdrBusy marks a task parked only because its endpoint was busy
	// (bounds.go, busyCause): the cause. It never counts toward
	// max_backlog.
	hdrBusy = "Hookjet-Parked-Busy"
)

// taskFor builds dl's task (see taskMsg), marked with its endpoint's
// incarnation.
func taskFor(dl *delivery, at time.Time) *nats.Msg {
	msg := taskMsg(dl.e.id, dl.ev, dl.st, dl.data, dl.hdr, at)
	markIncarnation(msg.Header, dl.s.ep.CreatedAt)
	return msg
}

// incarnation is the Hookjet-Endpoint-Created value of an endpoint created
// at created: its Unix nanoseconds, "" for a config-file endpoint (zero).
func incarnation(created time.Time) string {
	if created.IsZero() {
		return ""
	}
	return strconv.FormatInt(created.UnixNano(), 10)
}

// markIncarnation marks a task or dead letter with the incarnation of the
// endpoint created at created (nothing for a config-file endpoint).
func markIncarnation(h nats.Header, created time.Time) {
	if v := incarnation(created); v != "" {
		h.Set(hdrIncarnation, v)
	} else {
		h.Del(hdrIncarnation)
	}
}

// staleTask reports whether a task was stored for another incarnation of
// the endpoint id than the one created at ep (zero: the config file's): an
// API endpoint deleted and created again, or an API endpoint whose id the
// config file took over. A task without the mark (a config-file endpoint's,
// or stored by a hookjet before the mark) is the endpoint's.
func staleTask(h nats.Header, ep time.Time) bool {
	v := h.Get(hdrIncarnation)
	return v != "" && v != incarnation(ep)
}

// notForEndpoint reports whether a stored delivery (a task or an ordered
// entry) with headers h, of event ev, is no longer the delivery of the
// endpoint with settings ep: stored for another incarnation of its id, or
// an event its tenant may not receive (the endpoint moved to another
// tenant since). Such a delivery is discarded, never attempted.
func notForEndpoint(h nats.Header, ev *event, ep *config.Endpoint) bool {
	return staleTask(h, ep.CreatedAt) || ev.badTenant != "" || !mayReceive(ep.Tenant, ev.tenant)
}

// traceHeaders are copied from an event to its tasks, so a trace continues
// across retries.
var traceHeaders = []string{"traceparent", "tracestate"}

// taskMsg builds the task that carries one delivery of ev to endpoint. When
// at is not zero the task is a schedule that JetStream turns into a due task
// on hookjet.tasks.<endpoint> at that time; until then it costs no consumer
// anything. The Nats-Msg-Id depends only on the endpoint, the event and the
// attempt count, so publishing it twice (a crash between publishing and
// settling the source) stores it once.
func taskMsg(endpoint string, ev *event, st attemptState, data []byte, src nats.Header, at time.Time) *nats.Msg {
	var out *nats.Msg
	if at.IsZero() {
		out = nats.NewMsg(jetstream.TasksPrefix + endpoint)
	} else {
		out = nats.NewMsg(jetstream.SchedPrefix + endpoint + "." + ev.key)
		out.Header.Set(hdrSchedule, "@at "+at.UTC().Format(time.RFC3339Nano))
		out.Header.Set(hdrTarget, jetstream.TasksPrefix+endpoint)
		// One schedule per delivery: a retry replaces the delivery's guard
		// (guard.go) on the same subject, message and all.
		out.Header.Set(hdrRollup, "sub")
	}
	out.Data = data
	h := out.Header
	h.Set(jetstream.HdrMsgID, "task-"+endpoint+"-"+ev.key+"-"+strconv.Itoa(st.Attempts))
	h.Set(jetstream.HdrEventID, ev.id)
	h.Set(jetstream.HdrEventType, ev.typ)
	h.Set(jetstream.HdrEndpoint, endpoint)
	h.Set(hdrEventKey, ev.key)
	if ev.seq != 0 {
		h.Set(hdrEventSeq, strconv.FormatUint(ev.seq, 10))
	}
	h.Set(hdrPublished, ev.at.UTC().Format(time.RFC3339Nano))
	if ev.tenant != "" {
		h.Set(jetstream.HdrTenant, ev.tenant)
	}
	if st.Attempts > 0 {
		setAttemptHeaders(h, st)
	}
	copyHeaders(h, src)
	return out
}

func copyHeaders(dst, src nats.Header) {
	if src == nil {
		return
	}
	if ct := src.Get(jetstream.HdrContentType); ct != "" {
		dst.Set(jetstream.HdrContentType, ct)
	}
	if k := jetstream.OrderingKey(src); k != "" { // retries, parks and replays keep the event's key
		dst.Set(jetstream.HdrOrderingKey, k)
	}
	for _, k := range traceHeaders {
		if v := tracing.Header(src).Get(k); v != "" { // tracing: any case, e.g. Traceparent
			dst.Set(k, v)
		}
	}
}

func setAttemptHeaders(h nats.Header, st attemptState) {
	h.Set(jetstream.HdrAttempts, strconv.Itoa(st.Attempts))
	h.Set(jetstream.HdrLastStatus, "")
	if st.Status != 0 {
		h.Set(jetstream.HdrLastStatus, strconv.Itoa(st.Status))
	}
	h.Set(jetstream.HdrLastError, st.Error)
	h.Set(jetstream.HdrFirstTry, rfc3339(st.First))
	h.Set(jetstream.HdrLastTry, rfc3339(st.Last))
}

// taskOf reads a task message back.
func taskOf(h nats.Header, published time.Time) (event, attemptState) {
	ev := event{id: h.Get(jetstream.HdrEventID), typ: h.Get(jetstream.HdrEventType), key: h.Get(hdrEventKey), at: published}
	ev.seq, _ = strconv.ParseUint(h.Get(hdrEventSeq), 10, 64)
	ev.tenant, ev.badTenant = eventTenant(h)
	if t, err := time.Parse(time.RFC3339Nano, h.Get(hdrPublished)); err == nil {
		ev.at = t
	}
	var st attemptState
	st.Attempts, _ = strconv.Atoi(h.Get(jetstream.HdrAttempts))
	st.Status, _ = strconv.Atoi(h.Get(jetstream.HdrLastStatus))
	st.Error = h.Get(jetstream.HdrLastError)
	st.First, _ = time.Parse(time.RFC3339, h.Get(jetstream.HdrFirstTry))
	st.Last, _ = time.Parse(time.RFC3339, h.Get(jetstream.HdrLastTry))
	return ev, st
}

// deadLetterMsg builds the DLQ copy of a delivery. Its Nats-Msg-Id depends
// only on the endpoint and the event key, so storing it twice is
// deduplicated by HOOKJET_DLQ.
func deadLetterMsg(endpoint string, ev *event, st attemptState, reason string, data []byte, src nats.Header) *nats.Msg {
	out := nats.NewMsg(jetstream.DLQPrefix + endpoint)
	out.Data = data
	h := out.Header
	h.Set(jetstream.HdrMsgID, "dlq-"+endpoint+"-"+ev.key)
	h.Set(jetstream.HdrEventID, ev.id)
	h.Set(jetstream.HdrEventType, ev.typ)
	h.Set(jetstream.HdrEndpoint, endpoint)
	h.Set(jetstream.HdrReason, reason)
	if ev.tenant != "" {
		h.Set(jetstream.HdrTenant, ev.tenant)
	}
	setAttemptHeaders(h, st)
	copyHeaders(h, src)
	return out
}

func rfc3339(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// coverTaskAge makes sure HOOKJET_TASKS keeps ep's tasks until hookjet
// expires them: an endpoint of the admin API (or of another process's
// file) may have a longer retry.max_age than this process's config, from
// which the stream's MaxAge was set at start. The stream's age is only ever
// raised, and only read once.
func (d *Dispatcher) coverTaskAge(ep config.Endpoint) {
	need := jetstream.TaskAge(ep.Settings)
	if cur := time.Duration(d.tasks.age.Load()); cur < 0 || cur >= need {
		return
	}
	ctx, cancel := context.WithTimeout(d.life.loopCtx, 5*time.Second)
	defer cancel()
	got, raised, err := jetstream.RaiseTasksMaxAge(ctx, d.o.JS, need)
	if err != nil {
		d.log.Warn("HOOKJET_TASKS may drop this endpoint's waiting deliveries before retry.max_age", "endpoint", ep.ID, "retry.max_age", ep.Retry.MaxAge, "err", err)
		return
	}
	if got == 0 {
		got = -1
	}
	if got > time.Duration(d.tasks.age.Load()) || got < 0 {
		d.tasks.age.Store(int64(got))
	}
	if raised {
		d.log.Log(ctx, slog.LevelInfo, "HOOKJET_TASKS keeps waiting deliveries longer for this endpoint's retry.max_age", "endpoint", ep.ID, "retry.max_age", ep.Retry.MaxAge, "max_age", got)
	}
}
