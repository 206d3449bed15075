package inbound

// Outcome is what became of a request to a known source; its String is the
// outcome label of hookjet_inbound_requests_total.
type Outcome int

// Outcomes.
const (
	Accepted Outcome = iota
	Duplicate
	MissingSignature
	InvalidSignature
	OutsideWindow
	TooLarge
	Unavailable
	numOutcomes
)

var outcomeNames = [numOutcomes]string{
	Accepted:         "accepted",
	Duplicate:        "duplicate",
	MissingSignature: "missing_signature",
	InvalidSignature: "invalid_signature",
	OutsideWindow:    "outside_window",
	TooLarge:         "too_large",
	Unavailable:      "unavailable",
}

// String returns the outcome's metric label.
func (o Outcome) String() string {
	if o < 0 || o >= numOutcomes {
		return "unknown"
	}
	return outcomeNames[o]
}
