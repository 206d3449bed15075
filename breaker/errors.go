package breaker

import "errors"

// ErrVersion is returned (wrapped, and logged by NewRegistry, which then skips
// the record) when a persisted endpoint record has a version this build does
// not understand.
var ErrVersion = errors.New("unsupported breaker record version")
