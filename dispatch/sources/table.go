package sources

import (
	"context"
	"errors"
	"log/slog"
	"sync"

	"github.com/hookjet/hookjet/breaker"
	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/jetstream"
	"github.com/hookjet/hookjet/routing"
)

// Sources keeps the endpoint table (package routing) in step with where
// endpoints are defined: the config file (Apply), the admin API's bucket
// (WatchEndpoints, and Applied and Removed for the answering process), and
// the other processes' config files (ShareConfigEndpoints). It gives each
// endpoint put in force its breaker's settings. The engine is the table's
// routing.Runtime: it never learns where an endpoint came from.
type Sources struct {
	log      *slog.Logger
	table    *routing.Table
	breakers *breaker.Registry
	// stop ends the background sharing of the file's endpoints; background
	// is the wait group its owner waits for it on.
	stop       context.Context
	background *sync.WaitGroup

	applied   routing.Revisions // API endpoint revisions in force (api.go)
	apiSource apiSource         // where WatchEndpoints resolves API endpoints from; guarded by applied's lock

	shareMu   sync.Mutex               // guards the fields below
	cfgStore  *jetstream.EndpointStore // shared config endpoints; nil until ShareConfigEndpoints
	published map[string]string        // digests of the config endpoints last stored in the bucket, by id
	unshare   map[string]bool          // removed config endpoints not yet deleted from the bucket
}

// New returns the sources of table's endpoints. stop and background are
// the owner's: sharing in the background ends with stop and is waited for
// on background.
func New(table *routing.Table, breakers *breaker.Registry, log *slog.Logger, stop context.Context, background *sync.WaitGroup) *Sources {
	return &Sources{log: log, table: table, breakers: breakers, stop: stop, background: background, unshare: map[string]bool{}}
}

// Apply makes the config-file endpoints match cfg's: new ones are added,
// changed ones get their new settings (keeping their in-flight cap, hold and
// series), removed ones stop receiving. Nothing is deleted from JetStream:
// another process may still own the endpoint, and a removed endpoint's
// waiting tasks stay until it comes back or they expire.
func (d *Sources) Apply(ctx context.Context, cfg *config.Config) error {
	changed, gone, err := d.table.ApplyConfig(cfg.Endpoints)
	d.configureBreakers(changed)
	d.shareMu.Lock()
	sharing := d.cfgStore != nil
	d.shareMu.Unlock()
	if sharing {
		d.publishConfig(ctx, nil, gone)
	}
	return err
}

// PutEndpoint adds or changes an endpoint owned by the admin API.
func (d *Sources) PutEndpoint(ep config.Endpoint) error {
	changed, err := d.table.PutAPI(ep)
	if err == nil && changed {
		d.breakers.Configure(ep.ID, breakerSettings(ep))
	}
	return err
}

// PutEndpoints is PutEndpoint for many endpoints owned by the admin API
// (their new resolved settings after a change of the defaults).
func (d *Sources) PutEndpoints(eps []config.Endpoint) {
	d.configureBreakers(d.table.PutAPIAll(eps))
}

// RemoveEndpoint stops deliveries to an API endpoint in this process.
func (d *Sources) RemoveEndpoint(id string) { d.table.RemoveAPI(id) }

// ConfigEndpoint returns the config-file endpoint id, if the file owns it.
func (d *Sources) ConfigEndpoint(id string) (config.Endpoint, bool) { return d.table.Config(id) }

// configureBreakers gives the breakers of the endpoints put in force their
// settings, in one batch.
func (d *Sources) configureBreakers(eps []config.Endpoint) {
	batch := make([]breaker.Config, 0, len(eps))
	for _, ep := range eps {
		batch = append(batch, breaker.Config{ID: ep.ID, Settings: breakerSettings(ep)})
	}
	d.breakers.ConfigureAll(batch)
}

func breakerSettings(ep config.Endpoint) breaker.Settings {
	return breaker.Settings{
		FailureThreshold: ep.Breaker.FailureThreshold,
		Cooldown:         ep.Breaker.Cooldown,
		MaxCooldown:      ep.Breaker.MaxCooldown,
		SlowP95:          ep.Breaker.SlowP95,
	}
}

// logShared logs why another process's config endpoint was not applied.
func (d *Sources) logShared(id string, err error) {
	if errors.Is(err, routing.ErrAPIOwned) {
		d.log.Warn("a config file elsewhere defines an endpoint the API also has; the API's wins here", "endpoint", id)
		return
	}
	d.log.Error("shared config endpoint not applied", "endpoint", id, "err", err)
}
