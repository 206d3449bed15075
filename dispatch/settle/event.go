package settle

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/jetstream"
)

// Event is what hookjet reads off an event or task message.
type Event struct {
	ID, Type string
	// Key names the event in ids derived from it (task and dead-letter
	// Nats-Msg-Ids, schedule subjects): its HOOKJET_EVENTS sequence, or a
	// prefixed unique token for replays ("r"), tests ("t") and
	// redeliveries (RedeliverKey). It is a single subject token.
	Key string
	Seq uint64    // HOOKJET_EVENTS sequence; 0 when the event never was one
	At  time.Time // when it was published: retry.max_age counts from here
	// Tenant is the event's Hookjet-Tenant ("": none); BadTenant, when
	// not empty, says why the header it carries is not a tenant: such an
	// event is delivered to no one (the fan-out dead-letters it to the
	// operator's endpoints as rejected).
	Tenant, BadTenant string
}

// RedeliverKey starts the key of a task made by a redelivery of the
// history (the operator's Redeliver).
const RedeliverKey = "d"

// EventOf reads the event of a HOOKJET_EVENTS message. One published
// without Nats-Msg-Id gets the id seq_<stream sequence>, and noID is set.
func EventOf(msg natsjs.Msg, meta *natsjs.MsgMetadata) (ev Event, noID bool) {
	ev = Event{Seq: meta.Sequence.Stream, At: meta.Timestamp}
	ev.Key = strconv.FormatUint(ev.Seq, 10)
	subj := msg.Subject()
	ev.Type = subj[min(len(jetstream.EventsPrefix), len(subj)):]
	ev.ID = msg.Headers().Get(jetstream.HdrMsgID)
	ev.Tenant, ev.BadTenant = Tenant(msg.Headers())
	if ev.ID == "" {
		ev.ID = "seq_" + ev.Key
		noID = true
	}
	return ev, noID
}

// Tenant reads an event's Hookjet-Tenant header (in any case): its
// tenant, or why it is not one.
func Tenant(h nats.Header) (tenant, bad string) {
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

// MayReceive reports whether an endpoint of tenant epTenant may receive an
// event of tenant evTenant: an endpoint without a tenant receives every
// event; one with a tenant only that tenant's.
func MayReceive(epTenant, evTenant string) bool {
	return epTenant == "" || epTenant == evTenant
}
