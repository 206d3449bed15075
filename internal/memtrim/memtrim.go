// Package memtrim hands the garbage of a start-up's bulk work back to the
// operating system.
//
// Parsing a config file of 100,000 endpoints, putting them in force and
// storing them for other processes allocates a few times what hookjet then
// keeps. The garbage collector frees it, but the runtime keeps the freed
// pages mapped (the heap may grow to twice the live heap under GOGC=100)
// and returns them only slowly: the process would sit at several hundred MB
// of RSS for minutes after an idle start. Release, called when such a job
// ends, collects at once and unmaps what is free.
package memtrim

import (
	"context"
	"runtime"
	"runtime/debug"
	"time"
)

// Threshold is the heap held from the operating system (mapped, not
// released) above which Release collects: below it, a forced collection
// would cost more than it gives back.
const Threshold = 256 << 20

// Release runs a full collection and returns the free heap to the
// operating system when the process holds more than Threshold of heap,
// and reports whether it did.
func Release() bool {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if ms.HeapSys-ms.HeapReleased <= Threshold {
		return false
	}
	debug.FreeOSMemory()
	return true
}

// ReleaseAfter waits for after (or for ctx to end, then it does nothing)
// and then collects twice and returns the free heap to the operating
// system, whatever the process holds. It is for garbage that becomes free
// only later, such as buffers that another component's timer hands to a
// sync.Pool: the first collection moves a pool's contents aside, the
// second frees them.
func ReleaseAfter(ctx context.Context, after time.Duration) {
	t := time.NewTimer(after)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return
	case <-t.C:
	}
	runtime.GC()
	debug.FreeOSMemory()
}
