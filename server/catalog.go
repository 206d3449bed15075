package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/hookjet/hookjet/api"
	"github.com/hookjet/hookjet/catalog"
	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/jetstream"
)

// catalogServer keeps the event-type catalogue in force (live), built from
// the built-in types, this process's config file (catalog.event_types) and
// HOOKJET_EVENT_TYPES, which it watches: the API's types and other
// processes' files'. The file's own types are stored there too, so a
// process whose file lacks them knows them; the file wins a name, and
// after a reload a process deletes only the keys its own file declared
// before. It is the admin API's admin.EventTypes.
type catalogServer struct {
	live  *catalog.Live
	store *jetstream.EventTypeStore
	log   *slog.Logger
	now   func() time.Time
	stop  func()

	mu     sync.Mutex
	mode   catalog.Mode
	strict bool
	own    []*catalog.Type       // this file's
	stored map[string]storedType // the bucket's, by name
}

// storedType is a value of HOOKJET_EVENT_TYPES, compiled.
type storedType struct {
	rec jetstream.EventTypeRecord
	typ *catalog.Type // nil: it no longer compiles (skipped)
}

// startCatalog opens HOOKJET_EVENT_TYPES, stores the file's types there and
// watches it; s.catalog.live holds the catalogue from then on.
func (s *Server) startCatalog(ctx context.Context) error {
	cfg := s.cfg
	own, err := cfg.Catalog.CompileEventTypes()
	if err != nil {
		return err
	}
	c := &catalogServer{log: s.log, now: time.Now, mode: cfg.Catalog.Mode(), strict: cfg.Catalog.Strict,
		own: own, stored: map[string]storedType{}, live: catalog.NewLive(nil)}
	c.rebuild()
	s.catalog = c
	if c.store, err = jetstream.OpenEventTypeStore(ctx, s.node.JetStream(), cfg.Streams.Replicas, s.log); err != nil {
		return err
	}
	if c.stop, err = c.store.Watch(context.WithoutCancel(ctx), c.apply); err != nil {
		return err
	}
	return c.share(ctx, nil)
}

// apply takes one value of the watch (nil: the stored ones are read). A
// delete of a type this process's file declares (another process's file
// dropped it) stores it again, as a config endpoint is.
func (c *catalogServer) apply(rec *jetstream.EventTypeRecord, deleted bool) {
	if rec == nil {
		return
	}
	c.mu.Lock()
	var again *jetstream.EventTypeRecord
	if deleted {
		delete(c.stored, rec.Name)
		for _, t := range c.own {
			if t.Name() == rec.Name && c.store != nil {
				now := c.now().UTC()
				again = &jetstream.EventTypeRecord{Definition: t.Definition(), Source: catalog.SourceConfig, CreatedAt: now, UpdatedAt: now}
			}
		}
	} else {
		t, err := catalog.Compile(rec.Definition)
		if err != nil {
			c.log.Warn("skipping a stored event type that does not compile", "name", rec.Name, "err", err)
		}
		c.stored[rec.Name] = storedType{rec: *rec, typ: t}
	}
	c.rebuildLocked()
	c.mu.Unlock()
	if again != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := c.store.Put(ctx, *again); err != nil {
			c.log.Warn("storing the file's event type again", "name", again.Name, "err", err)
		}
	}
}

func (c *catalogServer) rebuild() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rebuildLocked()
}

func (c *catalogServer) rebuildLocked() {
	stored := make([]catalog.Entry, 0, len(c.stored))
	for _, st := range c.stored {
		if st.typ != nil {
			stored = append(stored, catalog.Entry{Type: st.typ, Source: st.rec.Source})
		}
	}
	c.live.Store(catalog.New(c.mode, c.strict, c.own, stored))
}

// share stores the file's types that the bucket lacks or holds otherwise,
// and deletes the config types of before (the last reload's) that the file
// dropped.
func (c *catalogServer) share(ctx context.Context, before map[string]catalog.Definition) error {
	c.mu.Lock()
	var puts []jetstream.EventTypeRecord
	now := c.now().UTC()
	mine := map[string]bool{}
	for _, t := range c.own {
		d := t.Definition()
		mine[d.Name] = true
		if st, ok := c.stored[d.Name]; ok && st.rec.Source == catalog.SourceConfig && sameDefinition(st.rec.Definition, d) {
			continue
		}
		puts = append(puts, jetstream.EventTypeRecord{Definition: d, Source: catalog.SourceConfig, CreatedAt: now, UpdatedAt: now})
	}
	var dels []string
	for name := range before {
		if st, ok := c.stored[name]; ok && !mine[name] && st.rec.Source == catalog.SourceConfig {
			dels = append(dels, name)
		}
	}
	c.mu.Unlock()
	var errs []error
	for _, rec := range puts {
		errs = append(errs, c.store.Put(ctx, rec))
	}
	for _, name := range dels {
		errs = append(errs, c.store.Delete(ctx, name, 0))
	}
	return errors.Join(errs...)
}

func sameDefinition(a, b catalog.Definition) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// reload puts a new config file's catalog section in force.
func (c *catalogServer) reload(ctx context.Context, cfg config.Catalog) error {
	own, err := cfg.CompileEventTypes()
	if err != nil {
		return err
	}
	c.mu.Lock()
	before := map[string]catalog.Definition{}
	for _, t := range c.own {
		before[t.Name()] = t.Definition()
	}
	c.mode, c.strict, c.own = cfg.Mode(), cfg.Strict, own
	c.rebuildLocked()
	c.mu.Unlock()
	return c.share(ctx, before)
}

// close ends the watch.
func (c *catalogServer) close() {
	if c != nil && c.stop != nil {
		c.stop()
		c.stop = nil
	}
}

// view is e as the API shows it.
func (c *catalogServer) view(e catalog.Entry) api.EventType {
	d := e.Definition()
	t := api.EventType{Name: d.Name, Description: d.Description, Schema: d.Schema, Examples: d.Examples,
		Deprecated: d.Deprecated, Source: string(e.Source)}
	c.mu.Lock()
	st, ok := c.stored[d.Name]
	c.mu.Unlock()
	if ok && st.rec.Source == e.Source && !st.rec.UpdatedAt.IsZero() {
		at := st.rec.UpdatedAt
		t.UpdatedAt = &at
	}
	return t
}

// EventTypes lists the catalogue.
func (c *catalogServer) EventTypes(context.Context) (api.EventTypeList, error) {
	cat := c.live.Load()
	l := api.EventTypeList{EventTypes: []api.EventType{}, Validate: cat.Mode().String(), Strict: cat.Strict()}
	for _, e := range cat.Entries() {
		l.EventTypes = append(l.EventTypes, c.view(e))
	}
	return l, nil
}

// EventType returns one type.
func (c *catalogServer) EventType(_ context.Context, name string) (api.EventType, error) {
	e, ok := c.live.Load().Lookup(name)
	if !ok {
		return api.EventType{}, fmt.Errorf("%w: %s", api.ErrUnknownEventType, name)
	}
	return c.view(e), nil
}

// compile checks a definition from the API, naming the field.
func compile(d catalog.Definition) (*catalog.Type, error) {
	if err := config.CheckEventTypeName(d.Name); err != nil {
		return nil, &api.ProblemError{Problem: api.FieldProblem("name", err.Error())}
	}
	t, err := catalog.Compile(d)
	if fe, ok := errors.AsType[*catalog.FieldError](err); ok {
		return nil, &api.ProblemError{Problem: api.FieldProblem(fe.Field, fe.Err.Error())}
	}
	return t, err
}

// CreateEventType stores a new API type.
func (c *catalogServer) CreateEventType(ctx context.Context, t api.EventType) (api.EventType, error) {
	d := catalog.Definition{Name: t.Name, Description: t.Description, Schema: t.Schema, Examples: t.Examples, Deprecated: t.Deprecated}
	typ, err := compile(d)
	if err != nil {
		return api.EventType{}, err
	}
	if e, ok := c.live.Load().Lookup(d.Name); ok && e.Source != catalog.SourceAPI {
		return api.EventType{}, fmt.Errorf("%w: %s is a %s type", api.ErrEventTypeExists, d.Name, e.Source)
	}
	now := c.now().UTC()
	rec, err := c.store.Create(ctx, jetstream.EventTypeRecord{Definition: typ.Definition(), Source: catalog.SourceAPI, CreatedAt: now, UpdatedAt: now})
	if errors.Is(err, jetstream.ErrEventTypeExists) {
		return api.EventType{}, fmt.Errorf("%w: %s", api.ErrEventTypeExists, d.Name)
	}
	if err != nil {
		return api.EventType{}, err
	}
	c.apply(&rec, false) // in force here before the answer; the watch brings it again
	return c.EventType(ctx, d.Name)
}

// UpdateEventType merges p into an API type.
func (c *catalogServer) UpdateEventType(ctx context.Context, name string, p api.EventTypePatch) (api.EventType, error) {
	cur, err := c.owned(ctx, name, "change")
	if err != nil {
		return api.EventType{}, err
	}
	d := cur.Definition
	if p.Description != nil {
		d.Description = *p.Description
	}
	if p.Schema != nil {
		d.Schema = p.Schema
	}
	if p.Examples != nil {
		d.Examples = *p.Examples
	}
	if p.Deprecated != nil {
		d.Deprecated = *p.Deprecated
	}
	typ, err := compile(d)
	if err != nil {
		return api.EventType{}, err
	}
	cur.Definition, cur.UpdatedAt = typ.Definition(), c.now().UTC()
	rec, err := c.store.Update(ctx, cur)
	if errors.Is(err, jetstream.ErrEventTypeChanged) {
		return api.EventType{}, fmt.Errorf("%w: %s changed meanwhile; try again", api.ErrConflict, name)
	}
	if err != nil {
		return api.EventType{}, err
	}
	c.apply(&rec, false)
	return c.EventType(ctx, name)
}

// DeleteEventType removes an API type.
func (c *catalogServer) DeleteEventType(ctx context.Context, name string) error {
	cur, err := c.owned(ctx, name, "delete")
	if err != nil {
		return err
	}
	if err := c.store.Delete(ctx, name, cur.Revision); err != nil {
		if errors.Is(err, jetstream.ErrEventTypeChanged) {
			return fmt.Errorf("%w: %s changed meanwhile; try again", api.ErrConflict, name)
		}
		return err
	}
	c.apply(&jetstream.EventTypeRecord{Definition: catalog.Definition{Name: name}}, true)
	return nil
}

// owned returns the stored API type named name, refusing the others.
func (c *catalogServer) owned(ctx context.Context, name, verb string) (jetstream.EventTypeRecord, error) {
	e, ok := c.live.Load().Lookup(name)
	if !ok {
		return jetstream.EventTypeRecord{}, fmt.Errorf("%w: %s", api.ErrUnknownEventType, name)
	}
	if e.Source != catalog.SourceAPI {
		where := "hookjet's own"
		if e.Source == catalog.SourceConfig {
			where = "declared in a config file (catalog.event_types); edit the file"
		}
		return jetstream.EventTypeRecord{}, fmt.Errorf("%w: cannot %s %s: it is %s", api.ErrReadOnly, verb, name, where)
	}
	rec, ok, err := c.store.Get(ctx, name)
	if err != nil {
		return rec, err
	}
	if !ok || rec.Source != catalog.SourceAPI {
		return rec, fmt.Errorf("%w: %s", api.ErrUnknownEventType, name)
	}
	return rec, nil
}
