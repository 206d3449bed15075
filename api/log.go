package api

import (
	"time"

	"github.com/hookjet/hookjet/attempt"
)

// LogQuery selects delivery-log records for the admin API's attempt pages
// and exports (jetstream.LogReader reads them).
// Zero fields match everything.
type LogQuery struct {
	Endpoint string
	Since    time.Time // stored at or after
	Until    time.Time // stored before
	// Before is the paging cursor: only records with a smaller sequence.
	Before uint64
	// Limit is the page size; 0 means 100.
	Limit int
	// Match filters further (tenant, event type, class); nil matches all.
	Match func(*attempt.Record) bool
}

// ValidToken reports whether s can stand as one subject token, as an
// endpoint id in a query must: not empty, and without dots, wildcards or
// white space.
func ValidToken(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		switch c {
		case '.', '*', '>', ' ', '\t', '\r', '\n':
			return false
		}
	}
	return true
}
