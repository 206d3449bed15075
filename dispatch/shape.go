package dispatch

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/destination"
	"github.com/hookjet/hookjet/jetstream"
	"github.com/hookjet/hookjet/transform"
)

// shaper is the shape stage: the request a delivery's destination is sent,
// made from the event as stored (its id, type, tenant, ordering key,
// content type and payload) and reshaped by the endpoint's transformation
// where it has one (package transform: a sandboxed JavaScript handler, run
// on the attempt's worker, never on the fan-out's loop). The destination
// signs what shape returns.
type shaper struct {
	security    config.Security // https_only and max_payload_bytes for what a script returns
	concurrency int             // runs at once: worker.concurrency

	mu      sync.Mutex
	scripts *transform.Engine // made for the first transform run: nil costs no goroutine
	closed  bool
}

// engine returns the transform engine, made on first use; nil once closed.
func (s *shaper) engine() *transform.Engine {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.scripts == nil && !s.closed {
		s.scripts = transform.New(transform.Options{Concurrency: s.concurrency})
	}
	return s.scripts
}

// forget drops endpoint id's idle runtimes (it was removed or changed).
func (s *shaper) forget(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.scripts != nil {
		s.scripts.Forget(id)
	}
}

// close stops the engine's watchdog once no attempt runs (Stop).
func (s *shaper) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.scripts != nil {
		s.scripts.Close()
		s.scripts = nil
	}
}

// errCancelled is shape's answer for a delivery the endpoint's transform
// cancelled: nothing is sent.
var errCancelled = fmt.Errorf("cancelled by the endpoint's transform")

// shape returns dl's request. An error other than errCancelled is the
// transform's (a throw, a timeout, a bad return, with the script's message
// and line:column): the delivery is dead-lettered as transform, without an
// attempt.
func (s *shaper) shape(ctx context.Context, dl *delivery) (destination.Request, error) {
	req := storedRequest(dl)
	set := dl.s
	if set == nil || (set.script == nil && set.scriptErr == nil) {
		return req, nil
	}
	if set.scriptErr != nil {
		return req, set.scriptErr
	}
	ep := set.ep
	in := transform.Input{
		Type: req.EventType, ID: req.EventID, Tenant: req.Tenant, Key: req.OrderingKey,
		Payload: req.Payload, ContentType: req.ContentType, URL: ep.URL, // "" for a destination without one
	}
	scripts := s.engine()
	if scripts == nil {
		return req, context.Canceled // stopping
	}
	out, err := scripts.Run(ctx, ep.ID, set.script, in, transform.Limits{
		Timeout: ep.TransformTimeout, MaxMemory: ep.TransformMaxMemory, MaxOutputBytes: s.security.MaxPayloadBytes,
	})
	if err != nil {
		return req, err
	}
	if out.Cancel {
		return req, errCancelled
	}
	req.Payload, req.ContentType = out.Payload, out.ContentType
	if out.URL != "" && out.URL != ep.URL {
		if err := s.security.CheckURL(out.URL); err != nil {
			return req, fmt.Errorf("transform: the url it returned: %w", err)
		}
		req.URL = out.URL
	}
	if len(out.Headers) > 0 {
		req.Header = make(http.Header, len(out.Headers))
		for k, v := range out.Headers {
			if http.CanonicalHeaderKey(k) == "Content-Type" {
				req.ContentType = v // deliver sets Content-Type from the request's
				continue
			}
			req.Header.Set(k, v)
		}
	}
	return req, nil
}

// storedRequest is the request of dl as stored, before any transformation.
func storedRequest(dl *delivery) destination.Request {
	return destination.Request{
		EventID:     dl.Event.ID,
		EventType:   dl.Event.Type,
		Tenant:      dl.Event.Tenant,
		OrderingKey: jetstream.OrderingKey(dl.Header),
		ContentType: dl.Header.Get(jetstream.HdrContentType),
		Payload:     dl.Data,
		Replay:      replayOf(dl.Event.Key),
	}
}

// replayOf is the replay number of a delivery whose event key is key: a
// replay's key is "r" and its dead letter's HOOKJET_DLQ sequence, unique
// per replay; 0 for a first delivery and its retries.
func replayOf(key string) int {
	n, err := strconv.Atoi(strings.TrimPrefix(key, "r"))
	if !strings.HasPrefix(key, "r") || err != nil || n < 0 {
		return 0
	}
	return n
}
