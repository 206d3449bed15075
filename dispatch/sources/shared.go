package sources

import (
	"context"
	"sync"
	"time"

	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/internal/memtrim"
	"github.com/hookjet/hookjet/jetstream"
)

// ShareConfigEndpoints publishes this process's config-file endpoints to
// store (HOOKJET_CONFIG_ENDPOINTS; only those that differ from what is
// stored) and applies the ones other processes' files define, now and as
// they change. The fan-out consumer is shared, and an event is matched
// against what the process that pulls it knows: so a process whose file
// lacks an endpoint (an older file during a rolling deploy, or no file at
// all) still delivers to it instead of acking its events. A process's own
// file wins for the ids it defines; after a reload (Apply) a process deletes
// only the keys of endpoints its own file defined before, and a process
// whose file still defines a key another deleted stores it again.
//
// At 100,000 endpoints none of this may cost the start-up much: the
// file's endpoints are stored in the background, after it returns; the values
// of the file's own ids are never opened (their Hookjet-Digest header says
// whether the bucket holds this file's definition), the ones that differ
// are written in atomic batches (one fsync per 1,000 with nats.sync:
// always), and the watch pulls at the pace it applies, so it never drops a
// change.
func (d *Sources) ShareConfigEndpoints(ctx context.Context, store *jetstream.EndpointStore) (stop func(), err error) {
	began := time.Now()
	var mu sync.Mutex // held while the initial values are applied; orders the watch's changes after them
	stored := map[string]string{}
	var initial []config.Endpoint
	started := false
	stop, err = store.WatchEntries(ctx, func(e jetstream.Entry) {
		if d.table.OwnsConfig(e.ID) {
			mu.Lock()
			first := !started
			if first && !e.Deleted {
				stored[e.ID] = e.Digest
			}
			mu.Unlock()
			if !first && e.Deleted {
				d.reshare(ctx, e.ID)
			}
			return
		}
		ep, ok := d.sharedEndpoint(store, e)
		if !ok {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if !started {
			initial = append(initial, *ep)
			return
		}
		d.applyShared(e.ID, ep)
	})
	if err != nil {
		return nil, err
	}
	mu.Lock()
	d.log.Debug("read the shared config endpoints", "own", len(stored), "others", len(initial), "took", time.Since(began).Round(time.Millisecond))
	d.applyInitialShared(initial)
	started = true
	// The watch's callback lives as long as the watch: it must not keep
	// what it gathered at the start (100,000 digests are ~20 MB).
	atStart := stored
	stored, initial = nil, nil
	mu.Unlock()
	d.shareMu.Lock()
	d.cfgStore = store
	d.shareMu.Unlock()
	// This process's own endpoints are in force already: storing them for
	// the others (100,000 writes on a first start) goes on while it
	// delivers, and Stop cuts it short.
	pctx, cancel := context.WithCancel(ctx)
	unhook := context.AfterFunc(d.stop, cancel)
	d.background.Add(1)
	go func() {
		defer d.background.Done()
		defer unhook()
		defer cancel()
		written := d.publishConfig(pctx, atStart, nil)
		memtrim.Release() // what comparing and storing 100,000 endpoints left
		if written >= bulkShare {
			// The embedded server's caches of the blocks just written
			// expire after 10 s into a pool that only collections empty.
			memtrim.ReleaseAfter(pctx, serverCacheExpiry)
		}
	}()
	return stop, nil
}

// bulkShare is the number of endpoints stored at start past which the
// garbage of the store, the embedded server's too, is worth handing back to
// the operating system; serverCacheExpiry is when that server's caches of
// the written blocks have expired (filestore: 10 s), with a margin.
const (
	bulkShare         = 10_000
	serverCacheExpiry = 15 * time.Second
)

// builtinSettings are what a shared definition's settings are stored
// against: a record overrides only what its file changed (at 100,000
// endpoints that halves what the bucket and its blocks in the server's
// memory hold: ~290 B a value instead of ~600), and every process resolves
// it against the same built-in defaults, never its own file's. A record
// written with every setting (before 2026-12-06) resolves the same way.
var builtinSettings = config.Default().Defaults

// sharedEndpoint opens a watched entry of another process's config
// endpoint: nil for a delete, false for a value to skip.
func (d *Sources) sharedEndpoint(store *jetstream.EndpointStore, e jetstream.Entry) (*config.Endpoint, bool) {
	if e.Deleted {
		return nil, true
	}
	rec, ok, err := e.Record()
	if err != nil || !ok {
		if err != nil {
			d.log.Error("shared config endpoint does not decode", "endpoint", e.ID, "err", err)
		}
		return nil, false
	}
	ep, err := store.Resolve(rec, builtinSettings)
	if err != nil {
		d.log.Error("shared config endpoint does not decode", "endpoint", e.ID, "err", err)
		return nil, false
	}
	ep.Source = config.SourceConfig
	return &ep, true
}

// applyShared puts another process's config endpoint in force (nil: it was
// deleted) unless this process's file or its API defines the id.
func (d *Sources) applyShared(id string, ep *config.Endpoint) {
	changed, err := d.table.PutShared(id, ep)
	if err != nil {
		d.logShared(id, err)
		return
	}
	if changed {
		d.breakers.Configure(id, breakerSettings(*ep))
	}
}

// applyInitialShared puts the other processes' config endpoints the bucket
// held at start in force, configuring their breakers in one batch.
func (d *Sources) applyInitialShared(eps []config.Endpoint) {
	d.configureBreakers(d.table.PutSharedAll(eps))
}

// reshare stores this process's definition of id again after another
// process deleted the key (its file dropped an id this file still
// defines).
func (d *Sources) reshare(ctx context.Context, id string) {
	d.shareMu.Lock()
	defer d.shareMu.Unlock()
	store := d.cfgStore
	ep, own := d.table.Config(id)
	if store == nil || !own {
		return
	}
	spec := config.SpecAgainst(ep, builtinSettings)
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := store.PutAll(pctx, []config.EndpointSpec{spec}); err != nil {
		d.log.Warn("config endpoint deleted elsewhere not shared again", "endpoint", id, "err", err)
		delete(d.published, id)
		return
	}
	if d.published == nil {
		d.published = map[string]string{}
	}
	d.published[id] = store.Digest(spec)
}

// publishConfig stores this process's config endpoints in the shared bucket
// where they differ from what it holds (stored: the digests the bucket had
// at start; nil: what this process published last), and deletes removed
// ones; deletes that fail are retried at the next call. ctx bounds it all
// (a reload's: SIGTERM cuts it short).
func (d *Sources) publishConfig(ctx context.Context, stored map[string]string, removed []string) (written int) {
	d.shareMu.Lock()
	defer d.shareMu.Unlock()
	store := d.cfgStore
	if store == nil {
		return 0
	}
	if stored == nil {
		stored = d.published
	}
	own := d.table.ConfigEndpoints()
	began := time.Now()
	shared := make(map[string]string, len(own))
	var put []config.EndpointSpec
	for _, ep := range own {
		spec := config.SpecAgainst(ep, builtinSettings)
		digest := store.Digest(spec)
		shared[ep.ID] = digest
		if stored[ep.ID] != digest {
			put = append(put, spec)
		}
	}
	compared := time.Since(began)
	failed, err := store.PutAll(ctx, put)
	for _, id := range failed {
		delete(shared, id)
	}
	if err != nil {
		d.log.Warn("config endpoints not shared with other processes; tried again at the next reload", "endpoints", len(failed), "err", err)
	}
	d.published = shared
	for _, id := range removed {
		d.unshare[id] = true
	}
	unshared := 0
	for id := range d.unshare {
		if _, back := shared[id]; back {
			delete(d.unshare, id)
			continue
		}
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := store.Delete(pctx, id)
		cancel()
		if err != nil {
			d.log.Warn("removed config endpoint still shared with other processes; retried at the next reload", "endpoint", id, "err", err)
			continue
		}
		delete(d.unshare, id)
		unshared++
	}
	if n := len(put) - len(failed); n > 0 || unshared > 0 {
		d.log.Info("shared the config file's endpoints with other processes", "stored", n, "removed", unshared,
			"compared", compared.Round(time.Millisecond), "took", time.Since(began).Round(time.Millisecond))
	}
	return len(put) - len(failed)
}
