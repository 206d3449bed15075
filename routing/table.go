package routing

import (
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"

	"github.com/hookjet/hookjet/config"
)

// Runtime puts the table's effective changes into effect: the delivery
// engine's state per endpoint. The table calls it with every change
// serialised (never two at once), before the pattern index routes events by
// the new definition (Install) and before it stops routing by the old one
// (Uninstall); it never calls it while holding the lock its readers take, so
// Runtime may read the table.
type Runtime interface {
	// Install puts ep in force: a new endpoint or new settings of one. ep
	// is the table's own copy and must not be changed. An error refuses the
	// change: the table keeps what it had.
	Install(ep *config.Endpoint) error
	// Uninstall stops deliveries to id. deleted: it was removed through
	// the admin API, for every process (not only from this process's view).
	Uninstall(id string, deleted bool)
}

// Table is the endpoint table of one process: the endpoints in force, by
// id, with their source, and the pattern index over them. Its methods are
// safe for concurrent use; changes are serialised.
//
// Which definition of an id is in force: the config file's, over the admin
// API's (kept shadowed, back in force when the file drops the id) and over
// another process's config file; the admin API's over another process's
// config file.
type Table struct {
	rt  Runtime
	log *slog.Logger

	applyMu sync.Mutex // serialises changes; held while rt is called
	// shadowed holds API endpoints whose id the config file also defines.
	// Guarded by applyMu.
	shadowed map[string]config.Endpoint

	mu      sync.RWMutex // guards the fields below; never held while rt is called
	eps     map[string]*config.Endpoint
	fromCfg map[string]bool // ids owned by this process's config file
	others  map[string]bool // ids in force from other processes' config files
	idx     *index
}

// New returns an empty table whose changes rt puts into effect. log (nil:
// discarded) names the definitions a change leaves out.
func New(rt Runtime, log *slog.Logger) *Table {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Table{
		rt:       rt,
		log:      log,
		shadowed: map[string]config.Endpoint{},
		eps:      map[string]*config.Endpoint{},
		fromCfg:  map[string]bool{},
		others:   map[string]bool{},
		idx:      newIndex(),
	}
}

// Match appends to dst the ids of the endpoints an event of eventType and
// tenant ("": none) goes to, each once, and returns it: the endpoints
// without a tenant whose patterns match, and those of tenant.
func (t *Table) Match(tenant, eventType string, dst []string) []string {
	return t.idx.match(tenant, eventType, dst)
}

// Get returns the definition of endpoint id in force.
func (t *Table) Get(id string) (config.Endpoint, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	ep := t.eps[id]
	if ep == nil {
		return config.Endpoint{}, false
	}
	return *ep, true
}

// Config returns the definition of endpoint id if this process's config
// file owns it.
func (t *Table) Config(id string) (config.Endpoint, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	ep := t.eps[id]
	if ep == nil || !t.fromCfg[id] {
		return config.Endpoint{}, false
	}
	return *ep, true
}

// OwnsConfig reports whether this process's config file defines id.
func (t *Table) OwnsConfig(id string) bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.fromCfg[id]
}

// ConfigEndpoints returns the definitions of this process's config file in
// force, in no order.
func (t *Table) ConfigEndpoints() []config.Endpoint {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := make([]config.Endpoint, 0, len(t.fromCfg))
	for id := range t.fromCfg {
		if ep := t.eps[id]; ep != nil {
			out = append(out, *ep)
		}
	}
	return out
}

// IDs returns the ids of every endpoint in force, ordered.
func (t *Table) IDs() []string {
	t.mu.RLock()
	ids := make([]string, 0, len(t.eps))
	for id := range t.eps {
		ids = append(ids, id)
	}
	t.mu.RUnlock()
	sort.Strings(ids)
	return ids
}

// Len is the number of endpoints in force.
func (t *Table) Len() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.eps)
}

// ApplyConfig makes the config-file endpoints match eps: new ones are
// added, changed ones get their new settings, the ones the file dropped go
// (an API endpoint the file shadowed comes back instead). It returns the
// definitions put in force (new or changed) and the ids the file dropped;
// the error joins the endpoints Runtime refused.
func (t *Table) ApplyConfig(eps []config.Endpoint) (changed []config.Endpoint, gone []string, err error) {
	t.applyMu.Lock()
	defer t.applyMu.Unlock()
	keep := make(map[string]bool, len(eps))
	var errs []error
	for i := range eps {
		ep := eps[i]
		ep.Source = config.SourceConfig
		keep[ep.ID] = true
		if cur, ok := t.Get(ep.ID); ok && cur.Source == config.SourceAPI {
			t.shadowed[ep.ID] = cur // the file takes the id over
		}
		ok, err := t.put(ep)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if ok {
			changed = append(changed, ep)
		}
	}
	t.mu.Lock()
	for id := range t.fromCfg {
		if !keep[id] {
			gone = append(gone, id)
		}
	}
	t.fromCfg = keep
	for id := range keep {
		delete(t.others, id)
	}
	t.mu.Unlock()
	sort.Strings(gone)
	for _, id := range gone {
		if ep, ok := t.shadowed[id]; ok {
			delete(t.shadowed, id)
			if ok, err := t.put(ep); err == nil && ok {
				changed = append(changed, ep)
			}
			continue
		}
		t.remove(id, false)
	}
	return changed, gone, errors.Join(errs...)
}

// PutAPI puts an endpoint of the admin API in force and reports whether
// anything changed. When the config file defines its id, the file's stays
// in force, ep is kept shadowed for when the file drops the id, and the
// error wraps ErrConfigOwned.
func (t *Table) PutAPI(ep config.Endpoint) (changed bool, err error) {
	t.applyMu.Lock()
	defer t.applyMu.Unlock()
	ep.Source = config.SourceAPI
	if t.OwnsConfig(ep.ID) {
		t.shadowed[ep.ID] = ep
		return false, fmt.Errorf("endpoint %q is %w", ep.ID, ErrConfigOwned)
	}
	return t.put(ep)
}

// PutAPIAll is PutAPI for many endpoints (the admin API's at start, or all
// of them after a change of the defaults). It logs those it leaves out and
// returns the definitions put in force (new or changed).
func (t *Table) PutAPIAll(eps []config.Endpoint) (changed []config.Endpoint) {
	t.applyMu.Lock()
	defer t.applyMu.Unlock()
	changed = make([]config.Endpoint, 0, len(eps))
	for _, ep := range eps {
		ep.Source = config.SourceAPI
		if t.OwnsConfig(ep.ID) {
			t.log.Warn("an API endpoint has the id of a config-file endpoint; the file's wins", "endpoint", ep.ID)
			t.shadowed[ep.ID] = ep
			continue
		}
		ok, err := t.put(ep)
		if err != nil {
			t.log.Error("API endpoint not applied", "endpoint", ep.ID, "err", err)
			continue
		}
		if ok {
			changed = append(changed, ep)
		}
	}
	return changed
}

// RemoveAPI takes the admin API's endpoint id out of force: it was deleted
// for every process. A config-file endpoint of that id stays.
func (t *Table) RemoveAPI(id string) {
	t.applyMu.Lock()
	defer t.applyMu.Unlock()
	delete(t.shadowed, id)
	if !t.OwnsConfig(id) {
		t.remove(id, true)
	}
}

// PutShared applies another process's config endpoint id: ep, or its
// deletion when ep is nil. This process's config file and admin API win:
// then nothing changes (the error wraps ErrAPIOwned when the admin API
// defines id here). It reports whether a definition was put in force.
func (t *Table) PutShared(id string, ep *config.Endpoint) (changed bool, err error) {
	t.applyMu.Lock()
	defer t.applyMu.Unlock()
	t.mu.RLock()
	own := t.fromCfg[id]
	cur := t.eps[id]
	shared := t.others[id]
	t.mu.RUnlock()
	switch {
	case own:
		return false, nil
	case ep == nil && shared:
		t.mu.Lock()
		delete(t.others, id)
		t.mu.Unlock()
		t.remove(id, false)
		return false, nil
	case ep == nil:
		return false, nil
	case cur != nil && !shared && cur.Source == config.SourceAPI:
		return false, fmt.Errorf("endpoint %q is %w", id, ErrAPIOwned)
	}
	shaped := *ep
	shaped.Source = config.SourceConfig
	changed, err = t.put(shaped)
	if err == nil {
		t.mu.Lock()
		t.others[id] = true
		t.mu.Unlock()
	}
	return changed, err
}

// PutSharedAll applies the other processes' config endpoints the shared
// bucket held at start, but those this process's config file defines, and
// returns the definitions put in force (new or changed).
func (t *Table) PutSharedAll(eps []config.Endpoint) (changed []config.Endpoint) {
	t.applyMu.Lock()
	defer t.applyMu.Unlock()
	for _, ep := range eps {
		if t.OwnsConfig(ep.ID) {
			continue
		}
		ep.Source = config.SourceConfig
		ok, err := t.put(ep)
		if err != nil {
			continue
		}
		t.mu.Lock()
		t.others[ep.ID] = true
		t.mu.Unlock()
		if ok {
			changed = append(changed, ep)
		}
	}
	return changed
}

// put installs ep unless the same definition is in force, and reports
// whether anything changed. The caller holds applyMu.
func (t *Table) put(ep config.Endpoint) (bool, error) {
	t.mu.RLock()
	cur := t.eps[ep.ID]
	t.mu.RUnlock()
	if cur != nil && Same(*cur, ep) {
		return false, nil
	}
	own := &ep
	if err := t.rt.Install(own); err != nil {
		return false, err
	}
	t.mu.Lock()
	t.eps[ep.ID] = own
	t.mu.Unlock()
	t.idx.set(ep.ID, ep.Tenant, ep.Events)
	return true, nil
}

// remove takes id out of force. The caller holds applyMu.
func (t *Table) remove(id string, deleted bool) {
	t.mu.RLock()
	_, ok := t.eps[id]
	t.mu.RUnlock()
	if !ok {
		return
	}
	t.rt.Uninstall(id, deleted)
	t.mu.Lock()
	delete(t.eps, id)
	t.mu.Unlock()
	t.idx.remove(id)
}
