//go:build !race

package deliver_test

// raceEnabled reports whether the race detector is on.
const raceEnabled = false
