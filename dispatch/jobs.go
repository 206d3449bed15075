package dispatch

import "sync"

// Background NATS work of deliveries (storing a task, a dead letter) runs
// on a fixed number of goroutines, not one per delivery: an event matched by
// 1,000 endpoints whose breakers are open parks 1,000 deliveries with
// jobWorkers goroutines. A full queue makes the caller wait for NATS, the
// resource every endpoint shares anyway; it never waits for an endpoint.
const (
	jobWorkers = 32
	jobQueue   = 4096
)

// jobs is the dispatcher's pool of background workers. Stop closes it once
// every delivery is settled; a job submitted after that runs inline.
type jobs struct {
	mu     sync.RWMutex
	closed bool
	ch     chan func()
	wg     sync.WaitGroup
}

func newJobs() *jobs {
	j := &jobs{ch: make(chan func(), jobQueue)}
	j.wg.Add(jobWorkers)
	for range jobWorkers {
		go func() {
			defer j.wg.Done()
			for f := range j.ch {
				f()
			}
		}()
	}
	return j
}

// goJob runs f on a background worker, counted in d.life.inflight so that Stop
// waits for it.
func (d *Dispatcher) goJob(f func()) {
	d.life.inflight.Add(1)
	job := func() {
		defer d.life.inflight.Done()
		f()
	}
	j := d.jobs
	j.mu.RLock()
	if j.closed {
		j.mu.RUnlock()
		job()
		return
	}
	j.ch <- job
	j.mu.RUnlock()
}

// close stops the workers after the queued jobs ran.
func (j *jobs) close() {
	j.mu.Lock()
	if !j.closed {
		j.closed = true
		close(j.ch)
	}
	j.mu.Unlock()
	j.wg.Wait()
}
