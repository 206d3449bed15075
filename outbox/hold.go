package outbox

import (
	"time"
)

// WithHold keeps each relayed row in the table until d has passed since
// its PubAck, for a JetStream that acknowledges before it fsyncs (a lazy
// sync interval d on an R1 stream): until the server's next sync a power
// cut can lose the event, and the row is what brings it back. 0 (the
// default) deletes a row at its PubAck, for a server that fsyncs before
// acknowledging (sync always) or replicas that confirm the write.
//
// A held row is not published again by this relay; it is claimed again
// after a restart or by another relay, and that republish is harmless: a
// duplicate within streams.duplicate_window is absorbed by JetStream,
// one after it by hookjet's dedupe ledger. While rows are held, the relay
// claims rows after the last id it saw, and goes back to the start of the
// table at most once per outbox.poll, so that rows inserted with a lower
// id or left behind by a failed publish are found; each such pass reads
// the held rows again.
func WithHold(d time.Duration) Option {
	return func(r *Relay) {
		if d > 0 {
			r.hold = d
		}
	}
}

// holdState is the relay's memory of rows acknowledged but kept in the
// table. Only the Run goroutine uses it.
type holdState struct {
	acked   map[string]time.Time // row id -> when its PubAck arrived
	cursor  string               // claim rows after this id ("": from the start)
	wrapped time.Time            // when the claims last went back to the start
}

// due returns the ids whose hold has passed at now.
func (h *holdState) due(now time.Time, hold time.Duration) []string {
	var ids []string
	for id, at := range h.acked {
		if now.Sub(at) >= hold {
			ids = append(ids, id)
		}
	}
	return ids
}

// advance moves the cursor after a claim of n rows whose last id is last:
// on past a full batch; back to the start after a short one, at most once
// per poll.
func (h *holdState) advance(n, batch int, last string, now time.Time, poll time.Duration) {
	switch {
	case n == batch:
		h.cursor = last
	case now.Sub(h.wrapped) >= poll:
		h.cursor, h.wrapped = "", now
	case n > 0:
		h.cursor = last
	}
}
