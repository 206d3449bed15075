package dedupe

// Sequence returns the event log sequence under which eventID was first
// accepted, when the ledger still remembers it (within its ttl). The admin
// API uses it to find an event in the event log by id.
func (l *Ledger) Sequence(eventID string) (seq uint64, found bool, err error) {
	seq, _, found, err = l.lookupSeen(eventID)
	return seq, found, err
}
