//go:build !race

package inbound

// raceEnabled reports whether the race detector is on.
const raceEnabled = false
