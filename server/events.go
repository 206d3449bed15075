package server

import (
	"path/filepath"

	"github.com/hookjet/hookjet/admin"
	"github.com/hookjet/hookjet/dispatch/query"
	"github.com/hookjet/hookjet/jetstream"
)

// eventIndexFile is this process's list index of HOOKJET_EVENTS in data_dir
// (package eventindex): rebuilt from the stream when it is missing.
const eventIndexFile = "event-index.db"

// startEventIndex starts following HOOKJET_EVENTS into the event index,
// which serves GET /api/v1/events and finds an event's sequence by id.
func (s *Server) startEventIndex() error {
	x, err := jetstream.FollowEvents(s.node.JetStream(), filepath.Join(s.cfg.DataDir, eventIndexFile), s.log)
	if err != nil {
		return err
	}
	s.evx = x
	return nil
}

// closeEventIndex stops following and closes the index.
func (s *Server) closeEventIndex() {
	if s.evx != nil {
		s.evx.Close()
	}
}

// eventsOption serves the event list and completes the event view with
// the endpoints an event matches.
func (s *Server) eventsOption() admin.Option {
	var l admin.EventList
	if s.evx != nil {
		l = s.evx
	}
	return admin.WithEvents(l, eventTargets{s.disp.Queries()}, UserAgent())
}

// eventTargets is the engine's Matching as the event view reads it.
type eventTargets struct{ q *query.Queries }

// EventTargets returns the endpoints in force an event of typ and tenant
// matches, with what holds them.
func (t eventTargets) EventTargets(tenant, typ string) []admin.EventTarget {
	m := t.q.Matching(tenant, typ)
	out := make([]admin.EventTarget, len(m))
	for i, e := range m {
		out[i] = admin.EventTarget{
			Endpoint: *e.Config, Disabled: e.Disabled, BreakerOpenUntil: e.BreakerOpenUntil, HoldUntil: e.HoldUntil,
		}
	}
	return out
}
