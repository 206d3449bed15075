package dispatch

import (
	"github.com/hookjet/hookjet/jetstream"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"

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
	hdrEventKey  = "Hookjet-Event-Key"
	hdrEventSeq  = "Hookjet-Event-Seq"
	hdrSchedule  = "Nats-Schedule"
	hdrTarget    = "Nats-Schedule-Target"
	hdrRollup    = "Nats-Rollup"
	// hdrIncarnation is the created_at (Unix nanoseconds) of the API
	// endpoint a task was stored for: an endpoint deleted and created again
	// with the same id never receives the old one's tasks.
	hdrIncarnation = "Hookjet-Endpoint-Created"
	// hdrBusy marks a task parked only because its endpoint was busy
	// (bounds.go, busyCause): the cause. It never counts toward
	// max_backlog.
	hdrBusy = "Hookjet-Parked-Busy"
)

// taskFor builds dl's task (see taskMsg), marked with its endpoint's
// incarnation.
func taskFor(dl *delivery, at time.Time) *nats.Msg {
	msg := taskMsg(dl.e.id, dl.ev, dl.st, dl.data, dl.hdr, at)
	if c := dl.s.ep.CreatedAt; !c.IsZero() {
		msg.Header.Set(hdrIncarnation, strconv.FormatInt(c.UnixNano(), 10))
	}
	return msg
}

// staleTask reports whether a task was stored for an earlier endpoint of
// the same id (deleted through the API and created again).
func staleTask(h nats.Header, ep time.Time) bool {
	v := h.Get(hdrIncarnation)
	return v != "" && !ep.IsZero() && v != strconv.FormatInt(ep.UnixNano(), 10)
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
	for _, k := range traceHeaders {
		if v := tracing.Header(src).Get(k); v != "" { // tracing (issue 16): any case, e.g. Traceparent
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
