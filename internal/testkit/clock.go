package testkit

import (
	"sync"
	"time"
)

// Start is where a [Clock] from [NewClock] starts: a fixed instant, so that
// tests do not depend on the wall clock.
var Start = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// Clock is a manually advanced clock, safe for concurrent use. Pass its Now
// method to a WithClock option.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a Clock showing [Start].
func NewClock() *Clock { return NewClockAt(Start) }

// NewClockAt returns a Clock showing t.
func NewClockAt(t time.Time) *Clock { return &Clock{t: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d (backward when d is negative).
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}
