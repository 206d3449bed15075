package dedupe

// Test hooks.

// SweepInterval is how often Run sweeps.
const SweepInterval = sweepInterval

// SetSweepChunk sets how many index entries one sweep transaction visits.
func SetSweepChunk(l *Ledger, n int) { l.sweepChunk = n }

// Stats are the ledger's counters.
type Stats = stats

// LedgerStats returns l's counters.
func LedgerStats(l *Ledger) Stats { return l.stats() }
