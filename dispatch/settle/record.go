package settle

import (
	"math"
	"strings"
	"sync"
	"time"

	"github.com/hookjet/hookjet/attempt"
	"github.com/hookjet/hookjet/destination"
	"github.com/hookjet/hookjet/jetstream"
)

// Recorder takes the delivery log's records (package jetstream's LogWriter
// stores them in HOOKJET_LOG). Record must never block: it is called on
// the delivery path.
type Recorder interface {
	Record(attempt.Record)
}

// Records is the settle stage's writer of the delivery log: it makes the
// records of attempts and of deliveries ended without one, and keeps the
// last test delivery of each endpoint for the endpoint object's last_test.
type Records struct {
	out Recorder // nil: the delivery log is off
	now func() time.Time
	eps Endpoints

	mu    sync.Mutex
	tests map[string]attempt.Record
}

// NewRecords writes records to out (nil: the delivery log is off); eps
// says the tenant and incarnation of a delivery that carries no settings.
func NewRecords(out Recorder, now func() time.Time, eps Endpoints) *Records {
	return &Records{out: out, now: now, eps: eps}
}

// LastTest returns the record of the last attempt of a test event to
// endpoint id made by this process.
func (r *Records) LastTest(id string) (attempt.Record, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec, ok := r.tests[id]
	return rec, ok
}

// trigger says what made dl's attempt happen. attempts is the number of
// attempts including the one being recorded.
func trigger(dl *Delivery, attempts int) string {
	switch key := dl.Event.Key; {
	case strings.HasPrefix(key, "t"):
		return attempt.TriggerTest
	case strings.HasPrefix(key, "r"):
		return attempt.TriggerReplay
	case strings.HasPrefix(key, RedeliverKey):
		return attempt.TriggerRedeliver
	case attempts > 1:
		return attempt.TriggerRetry
	case dl.Header != nil && dl.Header.Get(jetstream.HdrEventKey) != "":
		return attempt.TriggerDrain // a task: the delivery was parked first
	}
	return attempt.TriggerDelivery
}

// record is what every record of dl says: the event, the endpoint (its
// tenant and incarnation), the attempt and what triggered it.
func (r *Records) record(dl *Delivery) attempt.Record {
	return attempt.Record{
		EventID:           dl.Event.ID,
		EventType:         dl.Event.Type,
		Endpoint:          dl.Endpoint.ID,
		Tenant:            dl.tenant(r.eps),
		EndpointCreatedAt: createdAtOf(dl.incarnation(r.eps)),
		Attempt:           dl.State.Attempts,
		Trigger:           trigger(dl, dl.State.Attempts),
		Delivery:          dl.Event.Key,
	}
}

// Attempt logs the outcome of one attempt of dl (dl.State.Attempts
// already counts it).
func (r *Records) Attempt(dl *Delivery, res *destination.Result) {
	if r.out == nil {
		return
	}
	rec := r.record(dl)
	rec.StartedAt, rec.DurationMS = res.Sent.UTC(), Millis(res.Latency)
	rec.Status, rec.Class = res.Status, res.Class.String()
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

// End logs a delivery of dl dead-lettered (class dead_letter, or expired
// for reason expired), parked (class parked) or cancelled with reason.
func (r *Records) End(dl *Delivery, class, reason string) {
	if r.out == nil {
		return
	}
	if class == attempt.ClassDeadLetter && reason == "expired" {
		class = attempt.ClassExpired
	}
	rec := r.record(dl)
	rec.StartedAt, rec.Status, rec.Class, rec.Reason = r.now().UTC(), dl.State.Status, class, reason
	if class != attempt.ClassParked {
		rec.Error = dl.State.Error
	}
	r.out.Record(rec)
}

// Millis is d in milliseconds, to the microsecond.
func Millis(d time.Duration) float64 {
	return math.Round(float64(d)/float64(time.Microsecond)) / 1000
}
