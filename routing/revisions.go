package routing

import (
	"context"
	"sync"
	"time"
)

// Changes through the admin API are in effect when the call returns.
//
// The admin API writes an endpoint to HOOKJET_ENDPOINTS and every process
// applies it from its watch of the bucket: asynchronously, so the process
// that answered could still deliver with the old definition for a moment
// (an update, then a test that went to the old URL). The answering process
// applies the revision it wrote before it answers; the watch, which
// delivers the same change a moment later, applies only revisions newer
// than what this process applied, so it neither applies a change twice nor
// brings an older one back. Other processes apply the change from their
// watch, within its latency.

// Revisions is the highest KV revision applied per API endpoint. The zero
// value is ready for use.
type Revisions struct {
	mu   sync.Mutex // held while a revision is checked and applied
	revs map[string]revision
	// current returns the revision of id stored now (an error when it is
	// not stored); nil until Use.
	current func(ctx context.Context, id string) (uint64, error)
}

type revision struct {
	rev     uint64
	deleted bool // removed through this process's API at rev; the watch has not seen the delete yet
}

// Use records how to read an endpoint's stored revision (for deletes the
// watch delivers without theirs): the watch is running.
func (r *Revisions) Use(current func(ctx context.Context, id string) (uint64, error)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.current = current
	if r.revs == nil {
		r.revs = map[string]revision{}
	}
}

// Hold locks the revisions for one change and returns the unlock: the
// change is checked and applied under it.
func (r *Revisions) Hold() func() {
	r.mu.Lock()
	return r.mu.Unlock
}

// Watching reports whether Use was called. The caller holds the lock.
func (r *Revisions) Watching() bool { return r.current != nil }

// Stale reports whether the watched change of id (a put at rev, or a
// delete when put is false) is one this process applied already, or older
// than it, and records it when it is not. The caller holds the lock (Hold).
func (r *Revisions) Stale(ctx context.Context, id string, rev uint64, put bool) bool {
	cur, known := r.revs[id]
	if put {
		if known && rev <= cur.rev {
			return true
		}
		r.revs[id] = revision{rev: rev}
		return false
	}
	delete(r.revs, id)
	if !known || cur.deleted || r.current == nil {
		return false
	}
	// A delete the watch delivers without its revision: older than the
	// revision this process applied (the endpoint was created again since)
	// when the endpoint is there now.
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if now, err := r.current(ctx, id); err == nil && now >= cur.rev {
		r.revs[id] = cur
		return true
	}
	return false
}

// Has reports whether this process put id's revision rev, or a newer one,
// in force. The caller holds the lock.
func (r *Revisions) Has(id string, rev uint64) bool {
	cur, ok := r.revs[id]
	return ok && rev <= cur.rev
}

// Applied records that this process put id's revision rev in force. The
// caller holds the lock.
func (r *Revisions) Applied(id string, rev uint64) { r.revs[id] = revision{rev: rev} }

// Deleted records that this process removed id, whose last revision was
// rev. The caller holds the lock.
func (r *Revisions) Deleted(id string, rev uint64) {
	if r.revs != nil {
		r.revs[id] = revision{rev: rev, deleted: true}
	}
}
