package dispatch

import (
	"context"
	"github.com/hookjet/hookjet/jetstream"
	"sync"
	"time"

	"github.com/hookjet/hookjet/breaker"
	"github.com/hookjet/hookjet/config"
)

// ShareConfigEndpoints publishes this process's config-file endpoints to
// store (HOOKJET_CONFIG_ENDPOINTS; only those that differ from what is
// stored) and applies the ones other processes' files define, now and as
// they change. The fan-out consumer is shared, and an event is matched
// against what the process that pulls it knows: so a process whose file
// lacks an endpoint (an older file during a rolling deploy, or no file at
// all) still delivers to it instead of acking its events. A process's own
// file wins for the ids it defines; after a reload (Apply) a process deletes
// only the keys of endpoints its own file defined before.
func (d *Dispatcher) ShareConfigEndpoints(ctx context.Context, store *jetstream.EndpointStore) (stop func(), err error) {
	var mu sync.Mutex
	stored := map[string]config.Endpoint{}
	started := false
	apply := func(id string, ep *config.Endpoint) {
		d.mu.RLock()
		own := d.fromCfg[id]
		e := d.eps[id]
		shared := d.others[id]
		d.mu.RUnlock()
		switch {
		case own:
		case ep == nil && shared:
			d.applyMu.Lock()
			d.mu.Lock()
			delete(d.others, id)
			d.mu.Unlock()
			d.remove(id)
			d.applyMu.Unlock()
		case ep == nil:
		case e != nil && !shared && e.set.Load().ep.Source == config.SourceAPI:
			d.log.Warn("a config file elsewhere defines an endpoint the API also has; the API's wins here", "endpoint", id)
		default:
			ep.Source = config.SourceConfig
			d.applyMu.Lock()
			changed, err := d.put(*ep)
			if err == nil {
				d.mu.Lock()
				d.others[id] = true
				d.mu.Unlock()
				if changed {
					d.o.Breakers.Configure(id, breakerSettings(*ep))
				}
			}
			d.applyMu.Unlock()
			if err != nil {
				d.log.Error("shared config endpoint not applied", "endpoint", id, "err", err)
			}
		}
	}
	stop, err = store.Watch(ctx, func(id string, rec *jetstream.EndpointRecord) {
		var ep *config.Endpoint
		if rec != nil {
			r, err := store.Resolve(*rec, config.Settings{})
			if err != nil {
				d.log.Error("shared config endpoint does not decode", "endpoint", id, "err", err)
				return
			}
			ep = &r
		}
		mu.Lock()
		defer mu.Unlock()
		if !started {
			if ep == nil {
				delete(stored, id)
			} else {
				stored[id] = *ep
			}
			return
		}
		apply(id, ep)
	})
	if err != nil {
		return nil, err
	}
	mu.Lock()
	defer mu.Unlock()
	var batch []breaker.Config
	d.applyMu.Lock()
	for id, ep := range stored {
		d.mu.RLock()
		own := d.fromCfg[id]
		d.mu.RUnlock()
		if own {
			continue
		}
		ep.Source = config.SourceConfig
		if changed, err := d.put(ep); err == nil {
			d.mu.Lock()
			d.others[id] = true
			d.mu.Unlock()
			if changed {
				batch = append(batch, breaker.Config{ID: id, Settings: breakerSettings(ep)})
			}
		}
	}
	d.applyMu.Unlock()
	d.o.Breakers.ConfigureAll(batch)
	started = true
	d.cfgStore = store
	d.publishConfig(ctx, stored, nil)
	return stop, nil
}

// publishConfig stores this process's config endpoints in the shared bucket
// where they differ from what it holds (stored, or what this process
// published last), and deletes removed ones; deletes that fail are retried
// at the next call. ctx bounds it all (a reload's: SIGTERM cuts it short).
func (d *Dispatcher) publishConfig(ctx context.Context, stored map[string]config.Endpoint, removed []string) {
	store := d.cfgStore
	if store == nil {
		return
	}
	d.shareMu.Lock()
	defer d.shareMu.Unlock()
	if stored == nil {
		stored = d.published
	}
	d.mu.RLock()
	var own []config.Endpoint
	for id := range d.fromCfg {
		if e := d.eps[id]; e != nil {
			own = append(own, e.set.Load().ep)
		}
	}
	d.mu.RUnlock()
	shared := make(map[string]config.Endpoint, len(own))
	n := 0
	for _, ep := range own {
		if prev, ok := stored[ep.ID]; ok {
			prev.Source = ep.Source
			if sameDefinition(prev, ep) {
				shared[ep.ID] = ep
				continue
			}
		}
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := store.Put(pctx, store.Record(config.SpecOf(ep)))
		cancel()
		if err != nil {
			d.log.Warn("config endpoint not shared with other processes", "endpoint", ep.ID, "err", err)
			continue
		}
		shared[ep.ID] = ep
		n++
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
	if n > 0 || unshared > 0 {
		d.log.Info("shared the config file's endpoints with other processes", "stored", n, "removed", unshared)
	}
}

// sameDefinition compares what a config endpoint delivers with, ignoring
// the timestamps the store adds.
func sameDefinition(a, b config.Endpoint) bool {
	a.CreatedAt, a.UpdatedAt, b.CreatedAt, b.UpdatedAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	if len(a.SecretExpiry) == 0 {
		a.SecretExpiry = nil
	}
	if len(b.SecretExpiry) == 0 {
		b.SecretExpiry = nil
	}
	return sameEndpoint(a, b)
}
