package dispatch

import (
	"math"
	"strings"
	"sync"
	"time"

	"github.com/hookjet/hookjet/attempt"
	"github.com/hookjet/hookjet/destination"
)

// Recorder takes the delivery log's records (package jetstream's LogWriter
// stores them in HOOKJET_LOG). Record must never block: the engine calls it
// on the delivery path.
type Recorder interface {
	Record(attempt.Record)
}

// recorder is the settle stage's writer of the delivery log: it makes the
// records of attempts and of deliveries ended without one, and keeps the
// last test delivery of each endpoint for the endpoint object's last_test.
type recorder struct {
	out Recorder // nil: the delivery log is off
	now func() time.Time
	eps endpointFinder

	mu    sync.Mutex
	tests map[string]attempt.Record
}

// endpointFinder finds an endpoint in force by id (nil: none).
type endpointFinder interface {
	endpoint(id string) *endpoint
}

// lastTest returns the record of the last attempt of a test event to
// endpoint id made by this process.
func (r *recorder) lastTest(id string) (attempt.Record, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec, ok := r.tests[id]
	return rec, ok
}

// tenantOf is the tenant of dl's event, or when it names none (a test
// event, a task stored before events named theirs) of its endpoint. The
// safety net's deliveries carry no settings: their endpoint's current ones
// say it, when it exists.
func tenantOf(dl *delivery, eps endpointFinder) string {
	if dl.ev.tenant != "" {
		return dl.ev.tenant
	}
	if dl.s != nil {
		return dl.s.ep.Tenant
	}
	if e := eps.endpoint(dl.e.id); e != nil {
		return e.set.Load().ep.Tenant
	}
	return ""
}

// trigger says what made dl's attempt happen. attempts is the number of
// attempts including the one being recorded.
func trigger(dl *delivery, attempts int) string {
	switch {
	case strings.HasPrefix(dl.ev.key, "t"):
		return attempt.TriggerTest
	case strings.HasPrefix(dl.ev.key, "r"):
		return attempt.TriggerReplay
	case strings.HasPrefix(dl.ev.key, redeliverKey):
		return attempt.TriggerRedeliver
	case attempts > 1:
		return attempt.TriggerRetry
	case dl.hdr != nil && dl.hdr.Get(hdrEventKey) != "":
		return attempt.TriggerDrain // a task: the delivery was parked first
	}
	return attempt.TriggerDelivery
}

// attempt logs the outcome of one attempt of dl (st.Attempts already
// counts it).
func (r *recorder) attempt(dl *delivery, res *destination.Result) {
	if r.out == nil {
		return
	}
	rec := attempt.Record{
		EventID:           dl.ev.id,
		EventType:         dl.ev.typ,
		Endpoint:          dl.e.id,
		Tenant:            tenantOf(dl, r.eps),
		EndpointCreatedAt: createdAtOf(incarnationOf(dl, r.eps)),
		Attempt:           dl.st.Attempts,
		Trigger:           trigger(dl, dl.st.Attempts),
		Delivery:          dl.ev.key,
		StartedAt:         res.Sent.UTC(),
		DurationMS:        ms(res.Latency),
		Status:            res.Status,
		Class:             res.Class.String(),
	}
	rec.Response = string(res.Response) // a broker's answer (stream and sequence, partition and offset) on success too
	if res.Class != destination.Success {
		rec.Error = res.Reason
	}
	r.out.Record(rec)
	if rec.Trigger == attempt.TriggerTest {
		r.mu.Lock()
		if r.tests == nil {
			r.tests = map[string]attempt.Record{}
		}
		r.tests[rec.Endpoint] = rec
		r.mu.Unlock()
	}
}

// end logs a delivery of dl dead-lettered (class dead_letter, or expired
// for reason expired) or parked (class parked) with reason.
func (r *recorder) end(dl *delivery, class, reason string) {
	if r.out == nil {
		return
	}
	if class == attempt.ClassDeadLetter && reason == "expired" {
		class = attempt.ClassExpired
	}
	rec := attempt.Record{
		EventID:           dl.ev.id,
		EventType:         dl.ev.typ,
		Endpoint:          dl.e.id,
		Tenant:            tenantOf(dl, r.eps),
		EndpointCreatedAt: createdAtOf(incarnationOf(dl, r.eps)),
		Attempt:           dl.st.Attempts,
		Trigger:           trigger(dl, dl.st.Attempts),
		Delivery:          dl.ev.key,
		StartedAt:         r.now().UTC(),
		Status:            dl.st.Status,
		Class:             class,
		Reason:            reason,
	}
	if class != attempt.ClassParked {
		rec.Error = dl.st.Error
	}
	r.out.Record(rec)
}

// ms is d in milliseconds, to the microsecond.
func ms(d time.Duration) float64 { return math.Round(float64(d)/float64(time.Microsecond)) / 1000 }
