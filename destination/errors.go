package destination

import "errors"

// ErrClosed is returned by [Shared.Acquire] after [Shared.Close].
var ErrClosed = errors.New("destination: connections closed")

// ErrRefused marks a dial the SSRF guard refused: the dialer a server hands
// a broker destination wraps the guard's error with it, and the
// destination's result is [Rejected].
var ErrRefused = errors.New("refused by the SSRF guard")
