package api

import (
	"fmt"
	"time"
)

// ParseTime reads a time parameter of the admin API (since, until): RFC
// 3339, or a duration meaning "that long ago" (2h). Empty is the zero
// time; anything else is an [ErrBadRequest].
func ParseTime(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("%w: %q is neither an RFC 3339 time nor a duration such as 2h", ErrBadRequest, s)
}
