package settle

import (
	"strconv"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/jetstream"
	"github.com/hookjet/hookjet/tracing"
)

// State is what hookjet knows about the attempts of one event for one
// endpoint. It travels in the headers of the task message that carries the
// delivery, so every process handling it sees the same count with no shared
// store.
type State struct {
	Attempts int
	First    time.Time
	Last     time.Time
	Status   int
	Error    string
}

// Task message headers (HOOKJET_TASKS) besides jetstream's Hdr* (the
// dead-letter ones, Hookjet-Attempts and Hookjet-Last-*, share their names
// and meaning).
const (
	hdrSchedule = "Nats-Schedule"
	hdrTarget   = "Nats-Schedule-Target"
	hdrRollup   = "Nats-Rollup"
	// HdrBusy marks a task parked only because its endpoint was busy
	// (BusyCause): the cause. It never counts toward max_backlog.
	HdrBusy = "Hookjet-Parked-Busy"
)

// Task builds dl's task (see TaskMsg), marked with its endpoint's
// incarnation.
func (dl *Delivery) Task(at time.Time) *nats.Msg {
	msg := TaskMsg(dl.Endpoint.ID, dl.Event, dl.State, dl.Data, dl.Header, at)
	MarkIncarnation(msg.Header, dl.Config.CreatedAt)
	return msg
}

// Incarnation is the Hookjet-Endpoint-Created value of an endpoint created
// at created: its Unix nanoseconds, "" for a config-file endpoint (zero).
func Incarnation(created time.Time) string {
	if created.IsZero() {
		return ""
	}
	return strconv.FormatInt(created.UnixNano(), 10)
}

// MarkIncarnation marks a task or dead letter with the incarnation of the
// endpoint created at created (nothing for a config-file endpoint).
func MarkIncarnation(h nats.Header, created time.Time) {
	if v := Incarnation(created); v != "" {
		h.Set(jetstream.HdrIncarnation, v)
	} else {
		h.Del(jetstream.HdrIncarnation)
	}
}

// staleTask reports whether a task was stored for another incarnation of
// the endpoint id than the one created at ep (zero: the config file's): an
// API endpoint deleted and created again, or an API endpoint whose id the
// config file took over. A task without the mark (a config-file endpoint's,
// or stored by a hookjet before the mark) is the endpoint's.
func staleTask(h nats.Header, ep time.Time) bool {
	v := h.Get(jetstream.HdrIncarnation)
	return v != "" && v != Incarnation(ep)
}

// NotForEndpoint reports whether a stored delivery (a task or an ordered
// entry) with headers h, of event ev, is no longer the delivery of the
// endpoint with settings ep: stored for another incarnation of its id, or
// an event its tenant may not receive (the endpoint moved to another
// tenant since). Such a delivery is discarded, never attempted.
func NotForEndpoint(h nats.Header, ev *Event, ep *config.Endpoint) bool {
	return staleTask(h, ep.CreatedAt) || ev.BadTenant != "" || !MayReceive(ep.Tenant, ev.Tenant)
}

// traceHeaders are copied from an event to its tasks, so a trace continues
// across retries.
var traceHeaders = []string{"traceparent", "tracestate"}

// TaskMsg builds the task that carries one delivery of ev to endpoint. When
// at is not zero the task is a schedule that JetStream turns into a due task
// on hookjet.tasks.<endpoint> at that time; until then it costs no consumer
// anything. The Nats-Msg-Id depends only on the endpoint, the event and the
// attempt count, so publishing it twice (a crash between publishing and
// settling the source) stores it once.
func TaskMsg(endpoint string, ev *Event, st State, data []byte, src nats.Header, at time.Time) *nats.Msg {
	var out *nats.Msg
	if at.IsZero() {
		out = nats.NewMsg(jetstream.TasksPrefix + endpoint)
	} else {
		out = nats.NewMsg(jetstream.SchedPrefix + endpoint + "." + ev.Key)
		out.Header.Set(hdrSchedule, "@at "+at.UTC().Format(time.RFC3339Nano))
		out.Header.Set(hdrTarget, jetstream.TasksPrefix+endpoint)
		// One schedule per delivery: a retry replaces the delivery's guard
		// (dispatch/guard.go) on the same subject, message and all.
		out.Header.Set(hdrRollup, "sub")
	}
	out.Data = data
	h := out.Header
	h.Set(jetstream.HdrMsgID, "task-"+endpoint+"-"+ev.Key+"-"+strconv.Itoa(st.Attempts))
	h.Set(jetstream.HdrEventID, ev.ID)
	h.Set(jetstream.HdrEventType, ev.Type)
	h.Set(jetstream.HdrEndpoint, endpoint)
	h.Set(jetstream.HdrEventKey, ev.Key)
	if ev.Seq != 0 {
		h.Set(jetstream.HdrEventSeq, strconv.FormatUint(ev.Seq, 10))
	}
	h.Set(jetstream.HdrPublished, ev.At.UTC().Format(time.RFC3339Nano))
	if ev.Tenant != "" {
		h.Set(jetstream.HdrTenant, ev.Tenant)
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

func setAttemptHeaders(h nats.Header, st State) {
	h.Set(jetstream.HdrAttempts, strconv.Itoa(st.Attempts))
	h.Set(jetstream.HdrLastStatus, "")
	if st.Status != 0 {
		h.Set(jetstream.HdrLastStatus, strconv.Itoa(st.Status))
	}
	h.Set(jetstream.HdrLastError, st.Error)
	h.Set(jetstream.HdrFirstTry, rfc3339(st.First))
	h.Set(jetstream.HdrLastTry, rfc3339(st.Last))
}

// TaskOf reads a task message back; published is when it was stored,
// taken for its event's publish time when it does not say.
func TaskOf(h nats.Header, published time.Time) (Event, State) {
	ev := Event{ID: h.Get(jetstream.HdrEventID), Type: h.Get(jetstream.HdrEventType), Key: h.Get(jetstream.HdrEventKey), At: published}
	ev.Seq, _ = strconv.ParseUint(h.Get(jetstream.HdrEventSeq), 10, 64)
	ev.Tenant, ev.BadTenant = Tenant(h)
	if t, err := time.Parse(time.RFC3339Nano, h.Get(jetstream.HdrPublished)); err == nil {
		ev.At = t
	}
	var st State
	st.Attempts, _ = strconv.Atoi(h.Get(jetstream.HdrAttempts))
	st.Status, _ = strconv.Atoi(h.Get(jetstream.HdrLastStatus))
	st.Error = h.Get(jetstream.HdrLastError)
	st.First, _ = time.Parse(time.RFC3339, h.Get(jetstream.HdrFirstTry))
	st.Last, _ = time.Parse(time.RFC3339, h.Get(jetstream.HdrLastTry))
	return ev, st
}

// DeadLetterMsg builds the DLQ copy of a delivery. Its Nats-Msg-Id depends
// only on the endpoint and the event key, so storing it twice is
// deduplicated by HOOKJET_DLQ.
func DeadLetterMsg(endpoint string, ev *Event, st State, reason string, data []byte, src nats.Header) *nats.Msg {
	out := nats.NewMsg(jetstream.DLQPrefix + endpoint)
	out.Data = data
	h := out.Header
	h.Set(jetstream.HdrMsgID, "dlq-"+endpoint+"-"+ev.Key)
	h.Set(jetstream.HdrEventID, ev.ID)
	h.Set(jetstream.HdrEventType, ev.Type)
	h.Set(jetstream.HdrEndpoint, endpoint)
	h.Set(jetstream.HdrReason, reason)
	if ev.Tenant != "" {
		h.Set(jetstream.HdrTenant, ev.Tenant)
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

// Endpoints finds the settings of an endpoint in force by id (nil: none).
type Endpoints interface {
	Config(id string) *config.Endpoint
}

// incarnation is the incarnation (Hookjet-Endpoint-Created) of dl's
// endpoint: its settings' created_at; for the safety net's deliveries,
// which carry no settings, the task's own mark or the endpoint in force.
func (dl *Delivery) incarnation(eps Endpoints) string {
	if dl.Config != nil {
		return Incarnation(dl.Config.CreatedAt)
	}
	if v := dl.Header.Get(jetstream.HdrIncarnation); v != "" && dl.Header.Get(jetstream.HdrEventKey) != "" {
		return v // a task's
	}
	if ep := eps.Config(dl.Endpoint.ID); ep != nil {
		return Incarnation(ep.CreatedAt)
	}
	return ""
}

// tenant is the tenant of dl's event, or when it names none (a test event,
// a task stored before events named theirs) of its endpoint. The safety
// net's deliveries carry no settings: their endpoint's current ones say
// it, when it exists.
func (dl *Delivery) tenant(eps Endpoints) string {
	if dl.Event.Tenant != "" {
		return dl.Event.Tenant
	}
	if dl.Config != nil {
		return dl.Config.Tenant
	}
	if ep := eps.Config(dl.Endpoint.ID); ep != nil {
		return ep.Tenant
	}
	return ""
}

// createdAtOf turns an incarnation mark (Unix nanoseconds) into the
// endpoint's created_at in RFC 3339 UTC; "" stays "".
func createdAtOf(inc string) string {
	n, err := strconv.ParseInt(inc, 10, 64)
	if err != nil {
		return ""
	}
	return time.Unix(0, n).UTC().Format(time.RFC3339Nano)
}
