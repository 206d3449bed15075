package sources

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/jetstream"
)

// Changes through the admin API are in effect when the call returns: the
// answering process applies the revision it wrote before it answers
// (Applied, Removed), and its watch skips what it applied already
// (routing.Revisions says how).

// apiSource is where the API endpoints are resolved from once
// WatchEndpoints runs. Guarded by the lock of d.applied.
type apiSource struct {
	store    *jetstream.EndpointStore
	defaults func() config.Settings
}

// storedRevision returns the revision of API endpoint id stored now.
func (s *apiSource) storedRevision(ctx context.Context, id string) (uint64, error) {
	rec, err := s.store.Get(ctx, id)
	if err != nil {
		return 0, err
	}
	return rec.Revision, nil
}

// Applied puts the API endpoint rec, as stored at rec.Revision, in force in
// this process now, unless a newer revision already is. The admin API calls
// it after each write, before it answers.
func (d *Sources) Applied(ctx context.Context, rec jetstream.EndpointRecord) error {
	unlock := d.applied.Hold()
	defer unlock()
	if !d.applied.Watching() {
		return errors.New("the API endpoints are not watched yet")
	}
	if d.applied.Has(rec.ID, rec.Revision) {
		return nil
	}
	ep, err := d.apiSource.store.Resolve(rec, d.apiSource.defaults())
	if err != nil {
		return fmt.Errorf("endpoint %s: %w", rec.ID, err)
	}
	d.applied.Applied(rec.ID, rec.Revision)
	err = d.PutEndpoint(ep)
	if _, owned := d.ConfigEndpoint(rec.ID); owned {
		return nil // the file's wins; the table keeps this one shadowed for when the file drops the id
	}
	return err
}

// Removed stops deliveries to the API endpoint id, deleted at revision rev
// (the last one it had), in this process now. The admin API calls it after
// the delete, before it answers.
func (d *Sources) Removed(id string, rev uint64) {
	unlock := d.applied.Hold()
	defer unlock()
	d.applied.Deleted(id, rev)
	d.RemoveEndpoint(id)
}

// WatchEndpoints applies the endpoints stored through the admin API, now
// and whenever one changes, on this process: within the watch's latency of
// the change on every process. The stored endpoints are applied as one
// batch first, so 100,000 of them start in linear time. defaults returns the
// settings API endpoints inherit (a reload may change them). stop ends the
// watch.
func (d *Sources) WatchEndpoints(ctx context.Context, store *jetstream.EndpointStore, defaults func() config.Settings) (stop func(), err error) {
	var mu sync.Mutex // held while the initial batch is applied
	initial := map[string]config.Endpoint{}
	started := false
	unlock := d.applied.Hold() // dispatch/apply.go: the admin API applies its writes at once
	d.apiSource = apiSource{store: store, defaults: defaults}
	unlock()
	d.applied.Use(d.apiSource.storedRevision)
	stop, err = store.Watch(ctx, func(id string, rec *jetstream.EndpointRecord) {
		mu.Lock()
		defer mu.Unlock()
		defer d.applied.Hold()()
		var rev uint64
		if rec != nil {
			rev = rec.Revision
		}
		if d.applied.Stale(ctx, id, rev, rec != nil) { // the admin API applied it already
			return
		}
		if rec == nil {
			delete(initial, id)
			if started {
				d.RemoveEndpoint(id)
			}
			return
		}
		ep, err := store.Resolve(*rec, defaults())
		if err != nil {
			d.log.Error("API endpoint not applied", "endpoint", id, "err", err)
			return
		}
		if !started {
			initial[id] = ep
			return
		}
		if err := d.PutEndpoint(ep); err != nil {
			d.log.Error("API endpoint not applied", "endpoint", id, "err", err)
		}
	})
	if err != nil {
		return nil, err
	}
	mu.Lock()
	eps := make([]config.Endpoint, 0, len(initial))
	for _, ep := range initial {
		eps = append(eps, ep)
	}
	d.PutEndpoints(eps)
	started = true
	mu.Unlock()
	d.log.Info("applied the endpoints of the admin API", "endpoints", len(eps))
	return stop, nil
}
