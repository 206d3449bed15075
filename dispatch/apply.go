package dispatch

import (
	"context"
	"errors"
	"fmt"

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
func (d *Dispatcher) Applied(ctx context.Context, rec jetstream.EndpointRecord) error {
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
func (d *Dispatcher) Removed(id string, rev uint64) {
	unlock := d.applied.Hold()
	defer unlock()
	d.applied.Deleted(id, rev)
	d.RemoveEndpoint(id)
}
