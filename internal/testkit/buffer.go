package testkit

import (
	"strings"
	"sync"
)

// LockedBuffer collects output written from several goroutines, such as a
// child process's stdout and stderr or a logger shared by handlers.
type LockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

// Write appends p. It never fails.
func (l *LockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns everything written so far.
func (l *LockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
