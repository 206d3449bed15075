package dispatch

import (
	"strings"
	"sync"

	"github.com/hookjet/hookjet/api"
	"github.com/hookjet/hookjet/attempt"
	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/destination"
	"github.com/hookjet/hookjet/endpoints"
)

// Recorder takes the delivery log's records (package jetstream's LogWriter
// stores them in HOOKJET_LOG). Record must never block: the engine calls it
// on the delivery path.
type Recorder interface {
	Record(attempt.Record)
}

// recorded is the engine's memory of the delivery log: the last test
// delivery of each endpoint, for the endpoint object's last_test.
type recorded struct {
	mu    sync.Mutex
	tests map[string]attempt.Record
}

// LastTest returns the record of the last attempt of a test event to
// endpoint id made by this process.
func (d *Dispatcher) LastTest(id string) (attempt.Record, bool) {
	d.rec.mu.Lock()
	defer d.rec.mu.Unlock()
	r, ok := d.rec.tests[id]
	return r, ok
}

// tenantOf is the tenant of dl's event, or when it names none (a test
// event, a task stored before events named theirs) of its endpoint. The
// safety net's deliveries carry no settings: their endpoint's current ones
// say it, when it exists.
func (d *Dispatcher) tenantOf(dl *delivery) string {
	if dl.ev.tenant != "" {
		return dl.ev.tenant
	}
	if dl.s != nil {
		return dl.s.ep.Tenant
	}
	if e := d.endpoint(dl.e.id); e != nil {
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

// recordAttempt logs the outcome of one attempt of dl (st.Attempts
// already counts it).
func (d *Dispatcher) recordAttempt(dl *delivery, res *destination.Result) {
	if d.o.Recorder == nil {
		return
	}
	r := attempt.Record{
		EventID:           dl.ev.id,
		EventType:         dl.ev.typ,
		Endpoint:          dl.e.id,
		Tenant:            d.tenantOf(dl),
		EndpointCreatedAt: createdAtOf(d.incarnationOf(dl)),
		Attempt:           dl.st.Attempts,
		Trigger:           trigger(dl, dl.st.Attempts),
		Delivery:          dl.ev.key,
		StartedAt:         res.Sent.UTC(),
		DurationMS:        ms(res.Latency),
		Status:            res.Status,
		Class:             res.Class.String(),
	}
	if res.Class != destination.Success {
		r.Error = res.Reason
		r.Response = string(res.Response)
	}
	d.o.Recorder.Record(r)
	if r.Trigger == attempt.TriggerTest {
		d.rec.mu.Lock()
		if d.rec.tests == nil {
			d.rec.tests = map[string]attempt.Record{}
		}
		d.rec.tests[r.Endpoint] = r
		d.rec.mu.Unlock()
	}
}

// recordEnd logs a delivery of dl dead-lettered (class dead_letter, or
// expired for reason expired) or parked (class parked) with reason.
func (d *Dispatcher) recordEnd(dl *delivery, class, reason string) {
	if d.o.Recorder == nil {
		return
	}
	if class == attempt.ClassDeadLetter && reason == "expired" {
		class = attempt.ClassExpired
	}
	r := attempt.Record{
		EventID:           dl.ev.id,
		EventType:         dl.ev.typ,
		Endpoint:          dl.e.id,
		Tenant:            d.tenantOf(dl),
		EndpointCreatedAt: createdAtOf(d.incarnationOf(dl)),
		Attempt:           dl.st.Attempts,
		Trigger:           trigger(dl, dl.st.Attempts),
		Delivery:          dl.ev.key,
		StartedAt:         d.now().UTC(),
		Status:            dl.st.Status,
		Class:             class,
		Reason:            reason,
	}
	if class != attempt.ClassParked {
		r.Error = dl.st.Error
	}
	d.o.Recorder.Record(r)
}

// logStatus adds the endpoint object's owner, effective settings and last
// test outcome.
func (d *Dispatcher) logStatus(s *api.EndpointStatus, ep config.Endpoint) {
	s.Owner, s.Settings = ep.Owner, endpoints.SettingsOf(ep, d.now())
	if r, ok := d.LastTest(ep.ID); ok {
		s.LastTest = api.LastTestOf(r)
	}
}
