package dispatch

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/jetstream"
)

// Changes through the admin API in effect when the call returns.
//
// The admin API writes an endpoint to HOOKJET_ENDPOINTS and every process
// applies it from its watch of the bucket: asynchronously, so the process
// that answered could still deliver with the old definition for a moment
// (an update, then a test that went to the old URL). The answering process
// now applies the revision it wrote before it answers (Applied, Removed);
// the watch, which delivers the same change a moment later, applies only
// revisions newer than what this process applied, so it neither applies
// a change twice nor brings an older one back. Other processes apply the
// change from their watch, within its latency.

// appliedRevs is the highest KV revision applied per API endpoint.
type appliedRevs struct {
	mu       sync.Mutex // held while a revision is checked and applied
	revs     map[string]appliedRev
	store    *jetstream.EndpointStore
	defaults func() config.Settings
}

type appliedRev struct {
	rev     uint64
	deleted bool // removed through this process's API at rev; the watch has not seen the delete yet
}

// use records the store and defaults WatchEndpoints applies from.
func (a *appliedRevs) use(store *jetstream.EndpointStore, defaults func() config.Settings) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.store, a.defaults = store, defaults
	if a.revs == nil {
		a.revs = map[string]appliedRev{}
	}
}

// hold locks the revisions for one watched change and returns the unlock.
func (a *appliedRevs) hold() func() {
	a.mu.Lock()
	return a.mu.Unlock
}

// stale reports whether the watched change of id (rec, nil for a delete) is
// one this process applied already, or older than it. The caller holds the
// lock (hold).
func (a *appliedRevs) stale(ctx context.Context, id string, rec *jetstream.EndpointRecord) bool {
	cur, known := a.revs[id]
	if rec != nil {
		if known && rec.Revision <= cur.rev {
			return true
		}
		a.revs[id] = appliedRev{rev: rec.Revision}
		return false
	}
	delete(a.revs, id)
	if !known || cur.deleted || a.store == nil {
		return false
	}
	// A delete the watch delivers without its revision: older than the
	// revision this process applied (the endpoint was created again since)
	// when the endpoint is there now.
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if now, err := a.store.Get(ctx, id); err == nil && now.Revision >= cur.rev {
		a.revs[id] = cur
		return true
	}
	return false
}

// Applied puts the API endpoint rec, as stored at rec.Revision, in force in
// this process now, unless a newer revision already is. The admin API calls
// it after each write, before it answers.
func (d *Dispatcher) Applied(ctx context.Context, rec jetstream.EndpointRecord) error {
	a := &d.applied
	unlock := a.hold()
	defer unlock()
	if a.store == nil {
		return errors.New("the API endpoints are not watched yet")
	}
	if cur, ok := a.revs[rec.ID]; ok && rec.Revision <= cur.rev {
		return nil
	}
	ep, err := a.store.Resolve(rec, a.defaults())
	if err != nil {
		return fmt.Errorf("endpoint %s: %w", rec.ID, err)
	}
	a.revs[rec.ID] = appliedRev{rev: rec.Revision}
	err = d.PutEndpoint(ep)
	if _, owned := d.ConfigEndpoint(rec.ID); owned {
		return nil // the file's wins; PutEndpoint keeps this one shadowed for when the file drops the id
	}
	return err
}

// Removed stops deliveries to the API endpoint id, deleted at revision rev
// (the last one it had), in this process now. The admin API calls it after
// the delete, before it answers.
func (d *Dispatcher) Removed(id string, rev uint64) {
	a := &d.applied
	unlock := a.hold()
	defer unlock()
	if a.revs != nil {
		a.revs[id] = appliedRev{rev: rev, deleted: true}
	}
	d.RemoveEndpoint(id)
}
