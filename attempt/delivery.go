package attempt

import "slices"

// States of a delivery.
const (
	StateDelivered  = "delivered"
	StatePending    = "pending"
	StateDeadLetter = "dead_letter"
	StateDiscarded  = "discarded"
)

// Delivery is one delivery of an event to one endpoint: the event's first
// delivery (its fan-out, retries and drain), or one redelivery, replay or
// test of it, with its records.
type Delivery struct {
	Endpoint string
	// ID is the records' [Record.Delivery]; empty for records written
	// before records named their delivery.
	ID string
	// Number counts the endpoint's deliveries of the event in the order of
	// their first record, from 1.
	Number int
	// Trigger is what started the delivery: TriggerDelivery for the
	// event's first delivery, else TriggerRedeliver, TriggerReplay or
	// TriggerTest.
	Trigger string
	// State is StateDelivered, StatePending, StateDeadLetter or
	// StateDiscarded, from the
	// newest of Records.
	State   string
	Records []Record // oldest first
}

// Deliveries groups an event's records, oldest first, by endpoint and
// delivery, in the order of each delivery's first record, and says where
// each delivery stands (see [Delivery]). No record hides another: a
// redelivery's or replay's records make a delivery of their own.
//
// Records without a delivery name (written before there was one) are told
// apart as well as they can be: a record starts another delivery of its
// endpoint when the previous one ended, when its trigger is another
// delivery's, or when its attempt number starts again.
func Deliveries(recs []Record) []Delivery {
	var out []Delivery
	named := map[[2]string]int{} // endpoint and delivery -> index in out
	unnamed := map[string]int{}  // endpoint -> its current delivery of unnamed records
	count := map[string]int{}    // endpoint -> its deliveries so far
	for _, rec := range recs {
		var i int
		var ok bool
		if rec.Class == ClassDiscarded && rec.Delivery == "" {
			// An operator's discard names no delivery: it ends the
			// endpoint's newest dead-lettered one.
			if i, ok = lastDeadLetter(out, rec.Endpoint); ok {
				out[i].Records = append(out[i].Records, rec)
				continue
			}
		}
		if rec.Delivery != "" {
			i, ok = named[[2]string{rec.Endpoint, rec.Delivery}]
		} else if i, ok = unnamed[rec.Endpoint]; ok {
			ok = !startsDelivery(out[i].Records, &rec)
		}
		if !ok {
			i = len(out)
			count[rec.Endpoint]++
			out = append(out, Delivery{Endpoint: rec.Endpoint, ID: rec.Delivery, Number: count[rec.Endpoint], Trigger: deliveryTrigger(rec.Trigger)})
			if rec.Delivery != "" {
				named[[2]string{rec.Endpoint, rec.Delivery}] = i
			} else {
				unnamed[rec.Endpoint] = i
			}
		}
		out[i].Records = append(out[i].Records, rec)
	}
	for i := range out {
		out[i].State = stateOf(out[i].Records)
	}
	return out
}

// lastDeadLetter is the index in out of endpoint's newest delivery whose
// newest record is a dead letter or an expiry.
func lastDeadLetter(out []Delivery, endpoint string) (int, bool) {
	for i := len(out) - 1; i >= 0; i-- {
		if out[i].Endpoint == endpoint && stateOf(out[i].Records) == StateDeadLetter {
			return i, true
		}
	}
	return 0, false
}

// startsDelivery reports whether rec, a record without a delivery name,
// starts another delivery than the one whose records are recs.
func startsDelivery(recs []Record, rec *Record) bool {
	if Terminal(recs[len(recs)-1].Class) || deliveryTrigger(rec.Trigger) != deliveryTrigger(recs[0].Trigger) {
		return true
	}
	if !Sent(rec.Class) {
		return false
	}
	for _, r := range slices.Backward(recs) {
		if Sent(r.Class) {
			return rec.Attempt <= r.Attempt
		}
	}
	return false
}

// Sent reports whether class c is the outcome of an HTTP attempt (not a
// parking, dead letter, expiry or discard, whose records carry the number
// of attempts made so far rather than a number of their own).
func Sent(c string) bool {
	return c != ClassParked && c != ClassDeadLetter && c != ClassExpired && c != ClassDiscarded && c != ClassCancelled
}

// deliveryTrigger is what started a delivery whose record has trigger t:
// retries and drains continue the event's first delivery.
func deliveryTrigger(t string) string {
	switch t {
	case TriggerRetry, TriggerDrain, "":
		return TriggerDelivery
	}
	return t
}

// stateOf is the state of one delivery from its newest record: delivered
// after a success, dead_letter after a dead letter or expiry, pending
// after anything else. A parking record never reopens a delivery that
// ended: it may be stored after the attempt of a drain quicker than its
// writer.
func stateOf(recs []Record) string {
	for _, rec := range slices.Backward(recs) {
		switch rec.Class {
		case ClassParked:
			continue
		case ClassSuccess:
			return StateDelivered
		case ClassDeadLetter, ClassExpired:
			return StateDeadLetter
		case ClassDiscarded:
			return StateDiscarded
		}
		return StatePending
	}
	return StatePending
}
