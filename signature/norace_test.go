//go:build !race

package deliver

// raceEnabled reports whether the race detector is on.
const raceEnabled = false
