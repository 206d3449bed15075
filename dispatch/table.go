package dispatch

import (
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"golang.org/x/time/rate"

	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/destination"
	"github.com/hookjet/hookjet/dispatch/settle"
	"github.com/hookjet/hookjet/filter"
	"github.com/hookjet/hookjet/signature"
	"github.com/hookjet/hookjet/transform"
)

// The endpoint table (package routing) decides which endpoints are in force
// and matches events to them; the dispatcher keeps each one's runtime state
// (settings snapshot, in-flight slots, rate limiter, metric series) and
// puts the table's changes into effect: tableRuntime below.

// tableRuntime is the dispatcher as the table's routing.Runtime.
type tableRuntime struct{ d *Dispatcher }

// Install creates ep's runtime state when new, or swaps in its new
// settings (keeping its in-flight slots, limiter when the rate is the same,
// and series).
func (r tableRuntime) Install(ep *config.Endpoint) error {
	d := r.d
	e := d.endpoint(ep.ID)
	s, err := d.newSettings(ep, e)
	if err != nil {
		return err
	}
	if s.ep.Ordered() {
		d.ordered.Add(1)
	}
	if e == nil {
		e = newEndpoint(ep.ID)
		e.Waiting = &d.backlogged
		e.slots.share = d.share
		e.set.Store(s)
		e.slots.setLimit(ep.MaxInFlight)
		d.mu.Lock()
		d.eps[ep.ID] = e
		d.mu.Unlock()
		if l := d.series.Label(ep.ID); l != settle.OtherSeries {
			d.o.Metrics.BreakerState.WithLabelValues(l).Set(0)
			d.o.Metrics.zero(l)
		}
	} else {
		if e.set.Swap(s).ep.Ordered() {
			d.ordered.Add(-1)
		}
		e.slots.setLimit(ep.MaxInFlight)
	}
	if l := d.series.Label(ep.ID); l != settle.OtherSeries {
		d.o.Metrics.setDestination(l, ep.Destination.TypeName())
	}
	d.tasks.Cover(d.life.loopCtx, d.o.JS, ep, d.log)
	return nil
}

// Uninstall drops id's runtime state: deliveries in flight finish, and
// those of an endpoint deleted through the API store no retry or task.
func (r tableRuntime) Uninstall(id string, deleted bool) {
	d := r.d
	d.mu.Lock()
	e := d.eps[id]
	delete(d.eps, id)
	d.mu.Unlock()
	if e == nil {
		return
	}
	if e.set.Load().ep.Ordered() {
		d.ordered.Add(-1)
	}
	if deleted {
		e.Deleted.Store(true)
	}
	e.Removed.Store(true)
	d.o.Breakers.Remove(id)
	d.series.Forget(id)
	d.send.shape.forget(id)
}

// endpointFinder finds an endpoint in force by id (nil: none).
type endpointFinder interface {
	endpoint(id string) *endpoint
}

func (d *Dispatcher) endpoint(id string) *endpoint {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.eps[id]
}

// newSettings decodes ep's secrets and headers. The rate limiter of old is
// kept when the rate did not change, so a reload does not refill a bucket.
func (d *Dispatcher) newSettings(ep *config.Endpoint, old *endpoint) (*settings, error) {
	now := d.now()
	keys := make([][]byte, 0, len(ep.Secrets))
	var expires time.Time
	for i, s := range ep.Secrets {
		if i < len(ep.SecretExpiry) && !ep.SecretExpiry[i].IsZero() {
			if !ep.SecretExpiry[i].After(now) {
				continue // its grace is over
			}
			if expires.IsZero() || ep.SecretExpiry[i].Before(expires) {
				expires = ep.SecretExpiry[i]
			}
		}
		k, err := config.DecodeSecret(s.Reveal())
		if err != nil {
			return nil, fmt.Errorf("endpoints %s: secret: %w", ep.ID, err)
		}
		keys = append(keys, k)
	}
	var hdr http.Header // nil without headers: nothing allocated per idle endpoint
	if len(ep.Headers) > 0 {
		hdr = make(http.Header, len(ep.Headers))
		for k, v := range ep.Headers {
			hdr.Set(k, v.Reveal())
		}
	}
	if ep.InsecureSkipVerify {
		d.log.Warn("TLS certificate verification is OFF for this endpoint (insecure_skip_verify): anyone on the path can read and forge its deliveries", "endpoint", ep.ID)
	}
	dest, err := d.openDestination(ep, signature.NewSigner(keys...), hdr)
	if err != nil {
		return nil, fmt.Errorf("endpoints %s: destination: %w", ep.ID, err)
	}
	s := &settings{ep: ep, dest: dest, expires: expires}
	compileCode(s, d.send.shape.security, d.log) // the bounds the shape stage applies
	if ep.RateLimit.RPS > 0 {
		if old != nil {
			if prev := old.set.Load(); prev.limiter != nil && prev.ep.RateLimit == ep.RateLimit {
				s.limiter = prev.limiter
			}
		}
		if s.limiter == nil {
			s.limiter = rate.NewLimiter(rate.Limit(ep.RateLimit.RPS), max(1, ep.RateLimit.Burst))
		}
	}
	return s, nil
}

// openDestination opens ep's destination with the opener registered for its
// type (webhook, nats, kafka, rabbitmq: server registers them; the engine
// knows none by name).
func (d *Dispatcher) openDestination(ep *config.Endpoint, signer *signature.Signer, hdr http.Header) (destination.Destination, error) {
	typ := ep.Destination.TypeName()
	open := d.o.Destinations[typ]
	if open == nil {
		return nil, fmt.Errorf("no destination of type %q", typ)
	}
	return open(destination.Endpoint{
		ID:                 ep.ID,
		Tenant:             ep.Tenant,
		Type:               typ,
		URL:                ep.URL,
		Header:             hdr,
		Signer:             signer,
		Timeout:            ep.Timeout,
		InsecureSkipVerify: ep.InsecureSkipVerify,
		Strict:             ep.Tenant != "", // a tenant's endpoint: the strict SSRF guard (portal.allow_private_networks)
		Auth:               ep.Auth.Reach(),
		Proxy:              ep.Proxy,
		Options:            ep.Destination.Options(),
	})
}

// compileCode compiles s's endpoint's filter, within sec's bounds, and its
// transform. Both were checked where the endpoint was defined
// (config.Security.CheckCode); one stored earlier that no longer compiles (a
// stricter bound since) is logged, and its filter refuses every event, its
// transform dead-letters every delivery, rather than deliver what the
// endpoint did not ask for.
func compileCode(s *settings, sec config.Security, log *slog.Logger) {
	ep := s.ep
	if ep.Filter != "" {
		f, err := sec.CompileFilter(ep.Filter)
		if err != nil {
			log.Error("the endpoint's filter does not compile; it refuses every event", "endpoint", ep.ID, "err", err)
			f, _ = filter.Compile("false", filter.Options{})
		}
		s.filter = f
	}
	if ep.Transform != "" {
		s.script, s.scriptErr = transform.Compile(ep.Transform)
		if s.scriptErr != nil {
			log.Error("the endpoint's transform does not compile; its deliveries are dead-lettered", "endpoint", ep.ID, "err", s.scriptErr)
		}
	}
}
