package breaker

import "errors"

// errVersion marks a persisted endpoint record of a version this build does
// not understand. NewRegistry logs such records and starts those endpoints
// afresh; no method returns it.
var errVersion = errors.New("unsupported breaker record version")
