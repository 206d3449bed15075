package dispatch

import (
	"github.com/hookjet/hookjet/jetstream"
)

// sharedSeen tells the other hookjet processes of a deployment which event
// ids this one accepted, so that a copy published after JetStream's
// duplicate window is recognised whichever process fans it out: the id and
// its sequence are announced on HOOKJET_SEEN (asynchronously, never
// waited for), and every process follows the announcements into its own
// dedupe ledger (jetstream.SeenIDs), where the fan-out's FirstSeen finds
// them. No lookup leaves the process: the fan-out makes no JetStream round
// trip per event for dedupe.
//
// It is used when hookjet runs against an external NATS deployment (nats.url),
// where several processes may share the work; the embedded server has one
// process and the local ledger answers alone.
type sharedSeen struct {
	ids *jetstream.SeenIDs
}

// announce tells the other processes that id was accepted as seq.
func (s *sharedSeen) announce(id string, seq uint64) {
	s.ids.Announce(jetstream.SeenEvents, id, seq)
}
