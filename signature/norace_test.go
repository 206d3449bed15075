//go:build !race

package signature

// raceEnabled reports whether the race detector is on.
const raceEnabled = false
